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
* otherwise: a Monte Carlo test at λ̂ (999 draws, and more, up to 19,999, while fewer than 10 reach the statistic;
  seeded by the counts so the same counts give the same p) of the plug-in statistic, which is at least the refitted
  one, so the p-value errs large.

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
from scipy import special

from deniable.client.compliance import GroupedMechanism
from deniable.client.mechanisms import UnaryMechanism

from . import channels, distributions, likelihood
from .compliance import class_matrix
from .family import TestResult

#: Below this p-value a question is named as unlike honest randomization.
FLAG_P = 0.001
#: The expected count below which the Monte Carlo route is taken (`distributions.sequential_p`: its smallest p is
#: 1/20,000, well under `FLAG_P`).
SPARSE = 5.0
#: Counts drawn at once by the Monte Carlo route (2²² of them: 32 MB, and as much for their terms).
BLOCK_ENTRIES = 2**22
_RANK_LIMIT = 400  # columns beyond which the rank of the kept columns is taken as their number (numeric grids)


@dataclass(frozen=True)
class FitTest(TestResult):
    """G² against the saturated model, its degrees of freedom, p-value and how it was computed."""

    statistic: float
    df: int
    pvalue: float
    method: str  # "exact", "chi-square", "monte carlo", or a combination for multi-select questions
    #: The Monte Carlo route with no draw reaching the statistic: ``pvalue`` only bounds its p from above.
    bound: bool = False

    def __post_init__(self):
        # G² is a sum of non-negative divergences: a fit at the saturated model sums to a round-off either side of 0,
        # which read "G² = -0.00".
        if self.statistic < 0:
            object.__setattr__(self, "statistic", 0.0)

    @property
    def flagged(self) -> bool:
        return self.pvalue < FLAG_P

    def to_frame(self):
        import pandas as pd  # a frame asked for: the fit runs in planning's tests without pandas

        frame = pd.DataFrame([[self.statistic, self.df, self.pvalue, self.bound, self.method]],
                             columns=["statistic", "df", "p_value", "p_bounds", "method"],
                             index=pd.Index(["G²"], name="test"))
        frame.attrs["flagged"] = self.flagged
        return frame

    def __repr__(self) -> str:
        flagged = " FLAGGED" if self.flagged else ""
        return f"<FitTest G²={self.statistic:.3g} df={self.df} {distributions.p_words(self.pvalue, self.bound)}{flagged}>"

    def describe(self) -> str:
        statistic = "∞" if math.isinf(self.statistic) else f"{self.statistic:.2f}"
        words = (f"goodness of fit: G² = {statistic} on {self.df} df, {distributions.p_words(self.pvalue, self.bound)} "
                 f"({self.method}) against any "
                 "population honestly randomized")
        if self.flagged:
            words = ("FIT FAILED: these reports are unlike honest randomization of any population "
                     f"({words.removeprefix('goodness of fit: ')}); some may not have been randomized as the design "
                     "says (a script or manipulated client posting chosen reports), or respondents did not follow "
                     "the instructions. Look at the responses per day for a burst")
        return words


def saturated_test(q: channels.Channel, counts: np.ndarray, pi: np.ndarray, fixed_margins: int = 0) -> FitTest:
    """The test for a channel ``q`` (reports × classes), counts per report, and the fitted class shares.
    ``fixed_margins``: constraints the model meets by construction (a compliance design's group sizes, conditioned
    on: G − 1), each a degree of freedom fewer."""
    kept = pi > 1e-9
    rank = int(kept.sum()) if q.shape[1] > _RANK_LIMIT else int(np.linalg.matrix_rank(channels.columns(q, np.flatnonzero(kept))))
    first = channels.row(q, 0)
    return _test(np.asarray(counts, dtype=float), channels.apply(q, np.clip(pi, 0, None)), rank + fixed_margins,
                 (float(first.min()), float(first.max())))


def symmetric_test(channel: channels.BinaryChannel, counts: np.ndarray, pi: np.ndarray) -> FitTest:
    """`saturated_test` for Q = (p − o)I + o11ᵀ from its two numbers (k-ary randomized response), in O(k): the rates are
    o + (p − o)π, and any s of its columns are independent (a combination vanishing off them has Σa = 0, and then
    (p − o)a = 0 on them), so the rank is the number of answers kept."""
    pi = np.asarray(pi, dtype=float)
    rank = int(np.count_nonzero(pi > 1e-9))
    return _test(np.asarray(counts, dtype=float), channel.rate(np.maximum(pi, 0.0)), rank, (channel.q, channel.p))


def _test(counts: np.ndarray, rates: np.ndarray, rank: int, first_range: tuple[float, float]) -> FitTest:
    """G², its degrees of freedom (reports − ``rank``) and p-value; ``first_range``: the lowest and highest rate of the
    first report over the classes, which is all the exact two-report route needs of the channel."""
    n = counts.sum()
    rates = rates / rates.sum()
    if ((counts > 0) & (rates <= 0)).any():
        return FitTest(math.inf, len(counts) - 1, 0.0, "exact")
    observed = _g2(counts, n, rates)
    df = max(len(counts) - rank, 0)
    if len(counts) == 2:
        return FitTest(observed, df, _exact_two(first_range, counts, observed), "exact")
    if df == 0 or observed <= 1e-9:
        return FitTest(max(observed, 0.0), df, 1.0, "chi-square")
    if n * rates[rates > 0].min() >= SPARSE:
        return FitTest(observed, df, float(special.chdtrc(df, observed)), "chi-square")  # χ²'s tail (`stats.chi2.sf`)
    p, bound = _monte_carlo(counts, n, rates, observed)
    return FitTest(observed, df, p, "monte carlo", bound)


def _g2(counts: np.ndarray, n: float, rates: np.ndarray) -> float:
    seen = counts > 0
    observed = counts[seen]
    return float(2 * (observed * np.log(observed / (n * rates[seen]))).sum())


def _exact_two(first_range: tuple[float, float], counts: np.ndarray, observed: float) -> float:
    """Two reports: the maximum-likelihood rate of the first is the observed one clipped to what the classes
    can produce, so every count's statistic is known in closed form; the p-value is the binomial at the fitted rate
    summed over the counts whose statistic reaches the observed one. Those are two tails: the statistic is 0 where
    the count's rate lies in the range, and grows monotonically away from it on each side, so each tail's end is
    found by bisection and its mass is the binomial's distribution function (O(log n), where summing every count's
    probability made a survey of 10⁶ responses spend a second here)."""
    n = int(counts.sum())
    low, high = first_range
    threshold = observed - 1e-9 * max(1.0, observed)
    if threshold <= 0:  # a perfect fit: every count's statistic reaches it
        return 1.0

    def g2(first: int) -> float:
        fitted = min(max(first / n, low), high)
        return 2 * ((first * math.log(first / (n * fitted)) if first > 0 else 0.0)
                    + ((n - first) * math.log((n - first) / (n * (1 - fitted))) if first < n else 0.0))

    def last_where(predicate, start: int, stop: int) -> int:
        """The largest k in [start, stop] with predicate(k), predicate true up to some k and false after; start − 1
        when it holds nowhere."""
        if start > stop or not predicate(start):
            return start - 1
        while start < stop:
            middle = (start + stop + 1) // 2
            if predicate(middle):
                start = middle
            else:
                stop = middle - 1
        return start

    bottom = min(max(math.floor(n * low), 0), n)  # g2 falls to 0 over 0..bottom, and rises from top to n
    top = max(min(math.ceil(n * high), n), 0)
    lower_end = last_where(lambda k: g2(k) >= threshold, 0, bottom)  # the lower tail is 0..lower_end
    upper_start = n - last_where(lambda j: g2(n - j) >= threshold, 0, n - top)  # the upper tail is upper_start..n
    at = float(np.clip(counts[0] / n, low, high))
    if lower_end >= upper_start - 1:  # the tails meet: every count
        return 1.0
    # P(K ≤ a) and P(K ≥ b) as regularized incomplete beta functions (boost's, as `scipy.stats.binom` evaluates
    # them: cephes's `bdtr` was 2e-9 off at n = 10⁶).
    below = 0.0 if lower_end < 0 else 1.0 if lower_end >= n else special.betaincc(lower_end + 1, n - lower_end, at)
    above = 0.0 if upper_start > n else 1.0 if upper_start <= 0 else special.betainc(upper_start, n - upper_start + 1, at)
    return float(min(1.0, below + above))


def _monte_carlo(counts: np.ndarray, n: float, rates: np.ndarray, observed: float) -> tuple[float, bool]:
    """(1 + draws at least as extreme) / (1 + draws), sequentially (`distributions.sequential_p`: with 999 draws
    alone the smallest p was 1/1000, so the flag, p < `FLAG_P`, could never fire on this route), and whether no draw
    reached the statistic (the p is then a bound)."""
    seed = int.from_bytes(hashlib.sha256(np.asarray(counts, dtype=np.int64).tobytes()).digest()[:8], "big")
    rng = np.random.default_rng(seed)
    # Drawn in blocks of at most about 4 million reports' counts (a 0..10,000 grid's 999 draws of 30,001 would hold
    # 480 MB at once): the generator gives the same draws in blocks as all at once.
    block = max(1, BLOCK_ENTRIES // len(rates))

    def statistics(size: int) -> np.ndarray:
        found = []
        for start in range(0, size, block):
            draws = rng.multinomial(int(n), rates, size=min(block, size - start))
            # G²'s terms worked in one array, in place (each is d·log(d / nλ), 0 where d = 0): a 0..1000 grid's 999 ×
            # 3,001 draws made five temporaries of 24 MB each, 0.11-0.18 s of CPU against 0.04; the same numbers.
            with np.errstate(divide="ignore", invalid="ignore"):
                terms = draws / (n * rates)
                np.log(terms, out=terms)
                terms *= draws
            terms[draws == 0] = 0.0
            found.append(2 * terms.sum(axis=1))
        return np.concatenate(found)

    p, _, reaching = distributions.sequential_p(statistics, observed)
    return p, reaching == 0


def fit_test(mechanism, counts: np.ndarray, estimates: np.ndarray) -> FitTest:
    """The test of one question's counts (in report order) at its estimate (``estimates`` in the order of the
    analysis channel's columns: answers, or latent classes)."""
    counts = np.asarray(counts)
    if isinstance(mechanism, UnaryMechanism):
        return _multi_select(mechanism, counts)
    symmetric = channels.symmetric_channel(mechanism)
    if symmetric is not None:
        return symmetric_test(symmetric, counts, np.asarray(estimates, dtype=float))
    if isinstance(mechanism, GroupedMechanism):  # given the groups' observed sizes (`compliance.conditioned`)
        return saturated_test(class_matrix(mechanism, counts), counts, np.asarray(estimates, dtype=float),
                              fixed_margins=len(mechanism.groups) - 1)
    return saturated_test(channels.channel_matrix(mechanism), counts, np.asarray(estimates, dtype=float))


def test_counts(mechanism, counts: np.ndarray) -> FitTest:
    """`fit_test` of ``counts`` at their own maximum-likelihood fit (the plain estimate's, without the rest of it).

    What a design-based estimate carries: its respondents' own reports, unweighted. Honest randomization makes each
    report a draw from its respondent's column of the channel, independently given the answers, whatever the sample
    design (weights, strata and clusters are about who answers, not about the coin), so the reports' counts are the
    data this test is exact for. The weighted frequencies are not counts: rounded at an effective n, a report seen once
    by a heavily weighted respondent became 2, and on a sparse grid honest surveys failed (a 0..1000 number, n = 5,000,
    weights from 10 to 40: p from 0 to 0.03 in five surveys of six, where the reports' own test gave 0.04 to 0.98)."""
    counts = np.asarray(counts)
    if isinstance(mechanism, UnaryMechanism):
        return _multi_select(mechanism, counts)
    symmetric = channels.symmetric_channel(mechanism)
    found = None if symmetric is None else likelihood.symmetric_maximum(symmetric, counts)
    if symmetric is not None and found is not None:
        return symmetric_test(symmetric, counts, found[0])
    q = class_matrix(mechanism, counts) if isinstance(mechanism, GroupedMechanism) else channels.channel_matrix(mechanism)
    shares, _ = likelihood.certified_maximum(q, counts)
    return fit_test(mechanism, counts, shares)


def over_waves(tests: dict) -> FitTest | None:
    """One test of a repeated survey's reports from each wave's own test ({wave label: FitTest}): the smallest p,
    Bonferroni-corrected over the waves. Within a wave a person sends one report, drawn independently given the answer;
    across waves a panel's memoized reports of one person are correlated, so the waves' counts pooled are
    overdispersed against any multinomial, and their G² flagged honest panels (a 0..10 number, 1,000 people answering
    three waves alike: p below 0.001 in five panels of eight, each wave's own test 0.15 to 0.93). The correction holds
    whatever the correlation between the waves."""
    tested = {label: test for label, test in tests.items() if test is not None}
    if not tested:
        return None
    if len(tested) == 1:
        return next(iter(tested.values()))
    label, smallest = min(tested.items(), key=lambda item: item[1].pvalue)
    return FitTest(smallest.statistic, smallest.df, distributions.bonferroni(t.pvalue for t in tested.values()),
                   f"wave {label}'s, {smallest.method}, the smallest p of {len(tested)} waves; Bonferroni")


def count_channel(mechanism: UnaryMechanism) -> np.ndarray:
    """P(k options reported | j truly selected), k, j = 0..m: Binomial(j, keep_one) + Binomial(m − j, flip_zero)."""
    m = len(mechanism.options)
    keep, flip = float(mechanism.keep_one), float(mechanism.flip_zero)
    matrix = np.zeros((m + 1, m + 1))
    for j in range(m + 1):
        matrix[:, j] = np.convolve(distributions.binom_pmf(np.arange(j + 1), j, keep),
                                   distributions.binom_pmf(np.arange(m - j + 1), m - j, flip))
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
    pvalue = distributions.bonferroni(test.pvalue for test in tests)
    return FitTest(tests[0].statistic, tests[0].df, pvalue,
                   f"number selected, {tests[0].method}, and each option's bit exact; Bonferroni over {len(tests)}")


def result_test(mechanism, counts: np.ndarray, result) -> FitTest:
    """`fit_test` of ``result``, the estimate from ``counts`` (what `EstimateResult.fit` runs when first read)."""
    return fit_test(mechanism, counts, estimates_of(result))


def estimates_of(result) -> np.ndarray:
    """The fitted shares in the analysis channel's column order (answers, or a compliance design's classes)."""
    if isinstance(result.mechanism, GroupedMechanism):
        return np.asarray(result.class_shares, dtype=float)
    if result.shares is not None:  # a wide number's table is its bins
        return np.asarray(result.shares, dtype=float)
    table = result.table  # all numbers here (labels come later); one array, not a column Series (40 µs on a new table)
    return table.to_numpy(dtype=float)[:, table.columns.get_loc("estimate")]
