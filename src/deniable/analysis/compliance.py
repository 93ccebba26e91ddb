"""Estimates for the designs that measure compliance (cheating detection, the stochastic lie detector).

Their reports carry a public group. The analysis channel has one column per latent class of respondent
(`GroupedMechanism.latent_classes`): for cheating detection honest "yes" (π), honest "no" (β) and
cheaters who say "no" whatever they are told (γ); for the stochastic lie detector truthful carriers (πt),
lying carriers (π(1 − t)) and non-carriers (1 − π). The class shares are the certified maximum-likelihood
estimate on the simplex, like every other design's; the rows a researcher reads are linear in them
(π, 1 − π) or, for the lie detector's ``truthful`` row, a ratio (t). Intervals are profile-likelihood
intervals of each row, so they lie in [0, 1] and contain the estimate; a likelihood-ratio test says
whether anyone failed to comply (γ = 0, or t = 1).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import channels, distributions, likelihood
from . import estimators as est
from .errors import AnalysisError

METHODS = ("likelihood", "wald")


@dataclass(frozen=True)
class ComplianceTest:
    """A likelihood-ratio test that everyone complied (γ = 0 for cheating detection, t = 1 for the lie
    detector). The null sits on the boundary of the parameter space, so the statistic's null distribution
    is the 50:50 mixture of χ²₀ and χ²₁ (Self & Liang 1987): p = P(χ²₁ ≥ LR) / 2. Where another class is at its
    boundary too, a parametric bootstrap at the fitted null (`_bootstrap_p`); ``bound``: none of its draws reached
    the statistic, so ``p_value`` only bounds the p from above (said as "p < …")."""

    hypothesis: str
    statistic: float
    p_value: float
    bound: bool = False

    def __str__(self) -> str:
        return (f"test of {self.hypothesis}: likelihood ratio {self.statistic:.3g}, "
                f"{distributions.p_words(self.p_value, self.bound)}")


def class_matrix(mechanism, counts=None) -> np.ndarray:
    """Q[r, c]: reports × latent classes, as floats (the analysis channel of `channels.channel_matrix`). With
    ``counts`` (or weighted frequencies), conditioned on the groups' observed sizes (`conditioned`)."""
    q = channels.written_out(channels.channel_matrix(mechanism), "latent classes")  # groups: never a number grid
    return q if counts is None else conditioned(mechanism, q, counts)


def report_groups(mechanism) -> np.ndarray:
    """The index of each report's group (reports are (group, typed answer) pairs)."""
    return np.array([mechanism.groups.index(report["group"]) for report in mechanism.reports])


def conditioned(mechanism, q: np.ndarray, counts) -> np.ndarray:
    """The channel given the groups' observed sizes: each group's rows weigh its observed share n_g/n instead of the
    design's 1/G. The groups are drawn independently of everything else, so their sizes are ancillary: conditioning on
    them leaves the estimate as it is (a factor constant in θ), and makes the information and the fit test those of
    the groups actually asked (R's RRreg does the same). Without it a 45:55 draw of two groups was a FIT FAILED (the
    one degree of freedom of a two-group design tested the balance of the draw, nothing else)."""
    groups = report_groups(mechanism)
    counts = np.asarray(counts, dtype=float)
    total = counts.sum()
    if total <= 0:
        return q
    sizes = np.bincount(groups, weights=counts, minlength=len(mechanism.groups)) / total
    return q * (sizes[groups] * len(mechanism.groups))[:, None]


def estimate_compliance(mechanism, counts: np.ndarray, level: float, method: str | None, question_id):
    """(table, certificate, row covariance, notes, test, class shares) for a cheating-detection or lie-detector
    question; the class shares are θ̂ in the order of the latent classes (the goodness-of-fit test's)."""
    method = method or "likelihood"
    if method not in METHODS:
        raise AnalysisError(f"method must be one of {', '.join(METHODS)} for a {mechanism.design} question, got {method!r}")
    q = class_matrix(mechanism, counts)
    n = int(counts.sum())
    theta, certificate = likelihood.certified_maximum(q, counts)
    theta_covariance = channels.fitted_covariance(q, theta) / n
    unbiased_theta, unbiased_spread = est.unbiased(q, counts)
    z = distributions.norm_isf((1 - level) / 2)
    peak = likelihood.loglikelihood(q, counts, theta)
    rows: list = []
    notes: list[str] = []
    cut = _cut(mechanism, theta, theta_covariance, level, notes)
    for label, functional in _linear_rows(mechanism):
        estimate = float(functional @ theta)
        se = float(np.sqrt(max(functional @ theta_covariance @ functional, 0.0)))
        if method == "likelihood":
            low, high = likelihood.profile_interval(q, counts, theta, functional, cut)
        else:
            low, high = estimate - z * se, estimate + z * se
        rows.append((label, estimate, se, low, high, float(functional @ unbiased_theta),
                     float(np.sqrt(max(unbiased_spread.variance(functional), 0.0)))))
    if mechanism.design == "stochastic_lie_detector":
        rows.append(("truthful", *_truthful_row(q, counts, theta, theta_covariance, unbiased_theta,
                                               unbiased_spread, peak, cut, z, method, notes)))
    labels = [row[0] for row in rows]
    table = pd.DataFrame([row[1:] for row in rows], index=pd.Index(labels, name="answer"),
                         columns=["estimate", "se", "ci_low", "ci_high", "unbiased", "unbiased_se"])
    if "truthful" in table.index and pd.isna(table.at["truthful", "estimate"]):
        table = table.drop(index="truthful")  # not identified: a row of NaN is nothing to publish (the note says why)
    table["ci_low"] = np.minimum(np.clip(table["ci_low"], 0, 1), table["estimate"])
    table["ci_high"] = np.maximum(np.clip(table["ci_high"], 0, 1), table["estimate"])
    wild = table.index[table["se"] > MAX_SHARE_SE]
    if len(wild):
        notes.append(f"{', '.join(map(str, wild))}: the delta-method standard error "
                     f"({', '.join(f'{v:.3g}' for v in table.loc[wild, 'se'])}) means nothing this near the boundary; "
                     f"{MAX_SHARE_SE:g}, the largest any estimate of a share can have, is shown: read the interval")
        table.loc[wild, "se"] = MAX_SHARE_SE
    jacobian = np.array([functional for _, functional in _linear_rows(mechanism)])
    covariance = jacobian @ theta_covariance @ jacobian.T
    test = _compliance_test(mechanism, q, counts, peak)
    notes.append(str(test))
    notes.append("the group each respondent was shown is part of the report; shares are for the whole population, "
                 "with non-compliance a class of its own")
    return table, certificate, covariance, notes, test, theta


#: The largest standard deviation any estimator of a share (a value in [0, 1]) can have: a delta-method SE above it is
#: an artefact of the boundary (t̂ = 1 with SE 50 was published), and is replaced by it with a note.
MAX_SHARE_SE = 0.5

#: A latent class whose estimate is within this many standard errors of 0 or 1 is near its boundary.
BOUNDARY_SES = 3.0


def _cut(mechanism, theta, covariance, level: float, notes: list) -> float:
    """The drop in log-likelihood that bounds every row's profile interval: χ²₁(level)/2, or, when a latent
    class (or the carriers' truthfulness) sits near its boundary, χ²₂(level)/2. Near a boundary the profile
    statistic of one row is no longer χ²₁: a class pinned at 0 (a nuisance on the boundary, Self & Liang 1987)
    or a truthfulness that is barely identified makes it heavier, and the usual interval covered 92–94% in the
    validation grid. The χ²₂ cut makes each interval the projection of the joint likelihood region of the two
    free shares, whose coverage holds on the boundary too; it is never narrower than the χ²₁ one."""
    se = np.sqrt(np.clip(np.diag(covariance), 0, None))
    near = [label for (label, _), value, spread in zip(mechanism.latent_classes, theta, se)
            if value - BOUNDARY_SES * spread <= 0 or value + BOUNDARY_SES * spread >= 1]
    if not near:
        return likelihood.likelihood_cut(level)
    notes.append(f"{' and '.join(near)} {'is' if len(near) == 1 else 'are'} within {BOUNDARY_SES:g} standard errors "
                 "of the boundary, where the usual profile interval covers too rarely: each interval is the projection "
                 f"of the joint {level:.0%} likelihood region (χ²₂ cut), wider, and valid there")
    return float(distributions.chi2_ppf(level, 2) / 2)


def _linear_rows(mechanism) -> list[tuple[str, np.ndarray]]:
    """The rows that are linear in the class shares: each class for cheating detection; yes (carriers, πt +
    π(1 − t)) and no (non-carriers) for the lie detector."""
    if mechanism.design == "cheating_detection":
        return [(label, row) for (label, _), row in zip(mechanism.latent_classes, np.eye(3))]
    return [("yes", np.array([1.0, 1.0, 0.0])), ("no", np.array([0.0, 0.0, 1.0]))]


def _truthful_row(q, counts, theta, covariance, unbiased, unbiased_spread, peak, cut, z, method, notes):
    """t = θ₀ / (θ₀ + θ₁), the share of carriers who answered truthfully: delta-method SE, and a
    profile-likelihood interval over t (for each t the model is a two-class mixture: carriers answering
    with t, and non-carriers)."""
    carriers = theta[0] + theta[1]
    if carriers <= 1e-9:
        notes.append("no carriers are estimated, so their truthfulness is not identified: its row is left out (any "
                     "value from 0 to 1 fits as well)")
        return np.nan, np.nan, 0.0, 1.0, np.nan, np.nan
    t = float(theta[0] / carriers)
    gradient = np.array([theta[1], -theta[0], 0.0]) / carriers**2
    se = float(np.sqrt(max(gradient @ covariance @ gradient, 0.0)))
    unbiased_carriers = unbiased[0] + unbiased[1]
    unbiased_t = float(unbiased[0] / unbiased_carriers) if abs(unbiased_carriers) > 1e-12 else np.nan
    unbiased_gradient = np.array([unbiased[1], -unbiased[0], 0.0]) / unbiased_carriers**2 \
        if abs(unbiased_carriers) > 1e-12 else np.full(3, np.nan)
    unbiased_se = float(np.sqrt(max(unbiased_spread.variance(unbiased_gradient), 0.0)))
    if method == "wald":
        return t, se, t - z * se, t + z * se, unbiased_t, unbiased_se

    def profile(value: float) -> float:  # max log-likelihood with the carriers' truthfulness fixed at value
        mixed = np.column_stack([value * q[:, 0] + (1 - value) * q[:, 1], q[:, 2]])
        shares, _ = likelihood.maximise(mixed, counts)
        return likelihood.loglikelihood(mixed, counts, shares) - (peak - cut)

    from scipy import optimize  # the lie detector's one root: not loaded by every estimate (0.2 s of CPU)

    low = 0.0 if t <= 0 or profile(0.0) >= 0 else optimize.brentq(profile, 0.0, t, xtol=1e-10)
    high = 1.0 if t >= 1 or profile(1.0) >= 0 else optimize.brentq(profile, t, 1.0, xtol=1e-10)
    return t, se, min(low, t), max(high, t), unbiased_t, unbiased_se




def _compliance_test(mechanism, q, counts, peak) -> ComplianceTest:
    """Everyone complied: no cheaters (cheating detection), every carrier truthful (lie detector). ``q``: the channel
    given the observed group sizes (`conditioned`)."""
    if mechanism.design == "cheating_detection":
        kept, hypothesis = [0, 1], "no cheating (γ = 0)"
    else:
        kept, hypothesis = [0, 2], "no lying (t = 1)"
    restricted = q[:, kept]
    shares, _ = likelihood.maximise(restricted, counts)
    statistic = max(2 * (peak - likelihood.loglikelihood(restricted, counts, shares)), 0.0)
    n = float(np.sum(counts))
    spread = np.sqrt(np.clip(np.diag(channels.fitted_covariance(restricted, shares)), 0, None) / max(n, 1.0))
    if statistic > 0 and np.any(shares <= BOUNDARY_SES * spread):
        # Another class at its boundary as well (no honest "yes", no carriers): the statistic is no longer the 50:50
        # mixture of χ²₀ and χ²₁ (the test rejected 8% of honest surveys at 5%); its distribution at the fitted null,
        # drawn with the groups' sizes as observed, gives the p-value.
        p, bound = _bootstrap_p(mechanism, q, kept, restricted @ shares, counts, statistic)
        return ComplianceTest(hypothesis, float(statistic), p, bound)
    return ComplianceTest(hypothesis, float(statistic), float(distributions.chi2_sf(statistic, 1) / 2))


def _bootstrap_p(mechanism, q, kept, rates, counts, statistic) -> tuple[float, bool]:
    """(1 + draws whose statistic reaches the observed) / (1 + draws), sequentially (`distributions.sequential_p`:
    with 999 draws alone a likelihood ratio of 97 printed p = 0.001), and whether no draw reached it. Counts are drawn
    group by group at the null's fitted rates (seeded by the counts: the same counts give the same p), each refitted
    both ways."""
    counts = np.asarray(counts, dtype=np.int64)
    groups = report_groups(mechanism)
    seed = int.from_bytes(hashlib.sha256(counts.tobytes()).digest()[:8], "big")
    rng = np.random.default_rng(seed)

    def statistics(size: int) -> np.ndarray:
        draws = np.zeros((size, len(counts)), dtype=np.int64)
        for g in range(len(mechanism.groups)):
            rows = np.flatnonzero(groups == g)
            group_size = int(counts[rows].sum())
            if group_size:
                within = rates[rows] / rates[rows].sum()
                draws[:, rows] = rng.multinomial(group_size, within, size=size)
        return (two_group_statistics(mechanism, kept, draws) if len(mechanism.groups) == 2
                else np.array([_statistic(q, kept, drawn) for drawn in draws]))

    p, _, reaching = distributions.sequential_p(statistics, statistic)
    return float(p), reaching == 0


def _statistic(q, kept, counts) -> float:
    """The likelihood ratio of everyone complying, by the general maximiser (any number of groups)."""
    full, _ = likelihood.maximise(q, counts)
    null, _ = likelihood.maximise(q[:, kept], counts)
    return 2 * (likelihood.loglikelihood(q, counts, full) - likelihood.loglikelihood(q[:, kept], counts, null))


def two_group_statistics(mechanism, kept, draws) -> np.ndarray:
    """The likelihood ratio of every row of ``draws`` (counts per report) at once, for two groups and three classes.
    Given the groups' sizes the likelihood depends on the classes only through the groups' yes-rates r = Aθ, which
    fill the triangle whose corners are the classes' rates: the full maximum is the observed rates when they lie
    inside it, else the best point of its edges; the model that everyone complied is the edge between the kept
    classes. On an edge the log-likelihood is concave in the position, so its maximum is where its slope changes
    sign (bisection, all draws together). Tests compare it with the general maximiser."""
    draws = np.asarray(draws, dtype=float)
    groups = report_groups(mechanism)
    yes_rows = [mechanism.reports.index({"group": group, "report": "yes"}) for group in mechanism.groups]
    sizes = np.column_stack([draws[:, groups == g].sum(axis=1) for g in (0, 1)])  # B × 2
    yes = draws[:, yes_rows]
    corners = class_matrix(mechanism)[yes_rows] * 2  # P(yes | group, class): each group's rows weigh 1/2, 2 × 3
    observed = np.divide(yes, sizes, out=np.zeros_like(yes), where=sizes > 0)

    def loglikelihood(rates):  # B × 2 rates → B values, 0·log 0 = 0
        rates = np.clip(rates, 1e-300, 1 - 1e-16)
        return (np.where(yes > 0, yes * np.log(rates), 0.0)
                + np.where(sizes - yes > 0, (sizes - yes) * np.log1p(-rates), 0.0)).sum(axis=1)

    def edge(a: int, b: int) -> np.ndarray:  # the best point between corners a and b, per draw
        start, step = corners[:, a][None, :], (corners[:, b] - corners[:, a])[None, :]

        def slope_and_curvature(position, rows=slice(None)):
            rates = np.clip(start + position[:, None] * step, 1e-12, 1 - 1e-12)
            yes_part, no_part = yes[rows] / rates, (sizes[rows] - yes[rows]) / (1 - rates)
            return ((step * (yes_part - no_part)).sum(axis=1),
                    -(step ** 2 * (yes_part / rates + no_part / (1 - rates))).sum(axis=1))

        # Newton's steps inside a shrinking bracket (a bisection where a step would leave it): the slope falls, so
        # the bracket always holds its zero; 6–9 steps reach round-off where bisection took 60 (a compliance p
        # drawn 20,000 times spent 90% of its CPU here).
        count = len(draws)
        at_first = slope_and_curvature(np.zeros(count))[0] <= 0
        at_second = ~at_first & (slope_and_curvature(np.ones(count))[0] >= 0)
        position = np.where(at_second, 1.0, 0.0)
        inner = np.flatnonzero(~at_first & ~at_second)
        low, high, middle = np.zeros(len(inner)), np.ones(len(inner)), np.full(len(inner), 0.5)
        moving = np.arange(len(inner))  # the draws not yet settled: a few slow ones do not hold the rest
        for _ in range(60):
            slope, curvature = slope_and_curvature(middle[moving], inner[moving])
            rising = slope > 0
            low[moving] = np.where(rising, middle[moving], low[moving])
            high[moving] = np.where(rising, high[moving], middle[moving])
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = middle[moving] - slope / curvature
            moved = np.where((newton >= low[moving]) & (newton <= high[moving]), newton, (low[moving] + high[moving]) / 2)
            settled = np.abs(moved - middle[moving]) <= 1e-15 + 1e-13 * np.abs(moved)
            middle[moving] = moved
            moving = moving[~settled]
            if not len(moving):
                break
        position[inner] = middle
        return loglikelihood(start + position[:, None] * step)

    system = np.vstack([corners, np.ones(3)])
    shares = np.linalg.solve(system, np.vstack([observed.T, np.ones(len(draws))])).T  # B × 3
    inside = (shares >= -1e-12).all(axis=1)
    best_edge = np.max([edge(0, 1), edge(0, 2), edge(1, 2)], axis=0)
    full = np.where(inside, loglikelihood(observed), best_edge)
    null = edge(*kept)
    return np.maximum(2 * (full - null), 0.0)
