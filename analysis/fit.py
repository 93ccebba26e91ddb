"""Could these reports come from honest randomization of any population? A goodness-of-fit test of the
design's channel, carried by every estimate.

The statistic is the likelihood ratio of the saturated model (any distribution of reports) against the
design's (report rates λ = Qπ for some population π), at the certified maximum-likelihood π̂:
G² = 2 Σ n_r ln(n_r / (n λ̂_r)). Reports that no honest client would produce in those proportions (a script
posting chosen reports, a manipulated client, respondents who ignore the instructions) raise it; a report no
population can produce at all makes it infinite.

Its null distribution sits on a boundary when π̂ does (a class with no one in it), so the p-value is, by n:

* two reports (yes/no designs, any one bit): **exact**, summing the binomial at λ̂ over every count whose
  statistic is at least the one observed;
* every expected count at least 5: the χ² tail with df = R − rank(Q restricted to the classes π̂ keeps), an
  upper bound of the boundary's χ̄² mixture (whose components have at most those degrees of freedom);
* otherwise: a Monte Carlo test at λ̂ (999 draws, seeded by the counts so the same counts give the same p)
  of the plug-in statistic, which is at least the refitted one, so the p-value errs large.

Every route errs on the side of not flagging honest data. A multi-select question adds the distribution of
the number of options selected per report against every distribution the channel allows (the count's own
channel from "j options truly selected"), and each option's bit; the smallest p, Bonferroni-corrected, is the
question's. `FLAG_P` (0.001) is where `summary()`, the CLI and the dashboard name the question.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from deniable.client.compliance import GroupedMechanism
from deniable.client.mechanisms import UnaryMechanism

from . import channels, likelihood

#: Below this p-value a question is named as unlike honest randomization.
FLAG_P = 0.001
#: Draws of the Monte Carlo route, and the expected count below which it is taken.
DRAWS = 999
SPARSE = 5.0
_RANK_LIMIT = 400  # columns beyond which the rank of the kept columns is taken as their number (numeric grids)


@dataclass(frozen=True)
class FitTest:
    """G² against the saturated model, its degrees of freedom, p-value and how it was computed."""

    statistic: float
    df: int
    pvalue: float
    method: str  # "exact", "chi-square", "monte carlo", or a combination for multi-select questions

    @property
    def flagged(self) -> bool:
        return self.pvalue < FLAG_P

    def describe(self) -> str:
        statistic = "∞" if math.isinf(self.statistic) else f"{self.statistic:.2f}"
        words = (f"goodness of fit: G² = {statistic} on {self.df} df, p = {self.pvalue:.3g} ({self.method}) against any "
                 "population honestly randomized")
        if self.flagged:
            words = ("FIT FAILED: these reports are unlike honest randomization of any population "
                     f"({words.removeprefix('goodness of fit: ')}); some may not have been randomized as the design "
                     "says (a script or manipulated client posting chosen reports), or respondents did not follow "
                     "the instructions. Look at the responses per day for a burst")
        return words


def saturated_test(q: np.ndarray, counts: np.ndarray, pi: np.ndarray) -> FitTest:
    """The test for a channel ``q`` (reports × classes), counts per report, and the fitted class shares."""
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    rates = q @ np.clip(pi, 0, None)
    rates = rates / rates.sum()
    if np.any((counts > 0) & (rates <= 0)):
        return FitTest(math.inf, len(counts) - 1, 0.0, "exact")
    observed = _g2(counts, n, rates)
    kept = pi > 1e-9
    rank = int(kept.sum()) if q.shape[1] > _RANK_LIMIT else int(np.linalg.matrix_rank(q[:, kept]))
    df = max(len(counts) - rank, 0)
    if len(counts) == 2:
        return FitTest(observed, df, _exact_two(q, counts, observed), "exact")
    if df == 0 or observed <= 1e-9:
        return FitTest(max(observed, 0.0), df, 1.0, "chi-square")
    if n * rates[rates > 0].min() >= SPARSE:
        return FitTest(observed, df, float(stats.chi2.sf(observed, df)), "chi-square")
    return FitTest(observed, df, _monte_carlo(counts, n, rates, observed), "monte carlo")


def _g2(counts: np.ndarray, n: float, rates: np.ndarray) -> float:
    seen = counts > 0
    return float(2 * np.sum(counts[seen] * np.log(counts[seen] / (n * rates[seen]))))


def _exact_two(q: np.ndarray, counts: np.ndarray, observed: float) -> float:
    """Two reports: the maximum-likelihood rate of the first is the observed one clipped to what the classes
    can produce, so every count's statistic is known in closed form; sum the binomial at the fitted rate."""
    n = int(counts.sum())
    low, high = float(q[0].min()), float(q[0].max())
    first = np.arange(n + 1, dtype=float)
    fitted = np.clip(first / n, low, high)
    with np.errstate(divide="ignore", invalid="ignore"):
        g2 = 2 * (np.where(first > 0, first * np.log(first / (n * fitted)), 0.0)
                  + np.where(first < n, (n - first) * np.log((n - first) / (n * (1 - fitted))), 0.0))
    at = float(np.clip(counts[0] / n, low, high))
    return float(min(1.0, stats.binom.pmf(np.flatnonzero(g2 >= observed - 1e-9 * max(1.0, observed)), n, at).sum()))


def _monte_carlo(counts: np.ndarray, n: float, rates: np.ndarray, observed: float) -> float:
    seed = int.from_bytes(hashlib.sha256(np.asarray(counts, dtype=np.int64).tobytes()).digest()[:8], "big")
    draws = np.random.default_rng(seed).multinomial(int(n), rates, size=DRAWS).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(draws > 0, draws * np.log(draws / (n * rates)), 0.0)
    simulated = 2 * terms.sum(axis=1)
    return float((1 + np.sum(simulated >= observed - 1e-9 * max(1.0, observed))) / (DRAWS + 1))


def fit_test(mechanism, counts: np.ndarray, estimates: np.ndarray) -> FitTest:
    """The test of one question's counts (in report order) at its estimate (``estimates`` in the order of the
    analysis channel's columns: answers, or latent classes)."""
    counts = np.asarray(counts)
    if isinstance(mechanism, UnaryMechanism):
        return _multi_select(mechanism, counts)
    return saturated_test(channels.channel_matrix(mechanism), counts, np.asarray(estimates, dtype=float))


def count_channel(mechanism: UnaryMechanism) -> np.ndarray:
    """P(k options reported | j truly selected), k, j = 0..m: Binomial(j, keep_one) + Binomial(m − j, flip_zero)."""
    m = len(mechanism.options)
    keep, flip = float(mechanism.keep_one), float(mechanism.flip_zero)
    matrix = np.zeros((m + 1, m + 1))
    for j in range(m + 1):
        matrix[:, j] = np.convolve(stats.binom.pmf(np.arange(j + 1), j, keep), stats.binom.pmf(np.arange(m - j + 1), m - j, flip))
    return matrix


def _multi_select(mechanism: UnaryMechanism, counts: np.ndarray) -> FitTest:
    m = len(mechanism.options)
    sizes = np.array([len(report) for report in mechanism.reports])
    by_size = np.bincount(sizes, weights=counts, minlength=m + 1)
    matrix = count_channel(mechanism)
    shares, _ = likelihood.certified_maximum(matrix, by_size)
    tests = [saturated_test(matrix, by_size, shares)]
    bit = channels.binary_channel(mechanism)
    bit_q = np.array([[bit.p, bit.q], [1 - bit.p, 1 - bit.q]])
    n = counts.sum()
    for option in mechanism.options:
        selected = counts[[option in report for report in mechanism.reports]].sum()
        share = float(np.clip((selected / n - bit.q) / (bit.p - bit.q), 0, 1))
        tests.append(saturated_test(bit_q, np.array([selected, n - selected]), np.array([share, 1 - share])))
    smallest = min(tests, key=lambda t: t.pvalue)
    pvalue = min(1.0, len(tests) * smallest.pvalue)
    return FitTest(tests[0].statistic, tests[0].df, pvalue,
                   f"number selected, {tests[0].method}, and each option's bit exact; Bonferroni over {len(tests)}")


def estimates_of(result) -> np.ndarray:
    """The fitted shares in the analysis channel's column order (answers, or a compliance design's classes)."""
    if isinstance(result.mechanism, GroupedMechanism):
        return np.asarray(result.class_shares, dtype=float)
    return result.table["estimate"].to_numpy(dtype=float)
