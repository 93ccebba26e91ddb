"""Building blocks of the estimates: the channel as a matrix, the moment estimator, covariances, and
the closed forms of two-answer (binary) designs.

For a channel Q (reports × answers) and observed report frequencies λ̂ from n reports:

* the estimate of record is the maximum-likelihood estimate on the simplex (`likelihood.maximise`;
  for a binary design the clipped closed form `binary_mle`), with covariance from the Fisher information
  at its fitted rates (`fitted_covariance`);
* the unbiased moment estimate π̂ = Q⁺ λ̂ (Q⁺ = Q⁻¹ when square; the least-squares left inverse
  otherwise, still unbiased because Q⁺Q = I) stays beside it, with covariance Q⁺ (diag λ̂ − λ̂λ̂ᵀ)/n Q⁺ᵀ.
  It may fall outside [0, 1]; the two agree whenever it does not (and Q is square).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from deniable.client.mechanisms import Mechanism, UnaryMechanism

BINARY_METHODS = ("likelihood", "clopper-pearson", "wilson", "wald")
DEFAULT_BINARY_METHOD = "clopper-pearson"  # chosen by the coverage study in docs/validation.md


@dataclass(frozen=True)
class ConfidenceInterval:
    low: float
    high: float

    def __iter__(self):
        return iter((self.low, self.high))


def channel_matrix(mechanism: Mechanism) -> np.ndarray:
    """Q[r, a] as floats (reports × answers), from the exact channel."""
    return np.array([[float(p) for p in row] for row in mechanism.channel()])


def left_inverse(q: np.ndarray) -> np.ndarray:
    if q.shape[0] == q.shape[1]:
        return np.linalg.inv(q)
    return np.linalg.pinv(q)


def unbiased(q: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """π̂ = Q⁺λ̂ and its estimated covariance."""
    n = counts.sum()
    if n == 0:
        raise ValueError("no reports to estimate from")
    rates = counts / n
    inverse = left_inverse(q)
    estimate = inverse @ rates
    covariance = inverse @ ((np.diag(rates) - np.outer(rates, rates)) / n) @ inverse.T
    return estimate, covariance


def fitted_covariance(q: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Covariance of the maximum-likelihood estimate for one respondent, at the fitted rates λ = Qπ:
    the inverse Fisher information Qᵀdiag(1/λ)Q, restricted to the simplex (Σπ = 1). For a square
    channel it equals the moment estimator's covariance Q⁻¹(diag λ − λλᵀ)Q⁻ᵀ evaluated at λ = Qπ, so
    wherever the two estimates agree their standard errors agree; for a tall channel (numeric grids)
    it is the smaller, efficient one."""
    rates = q @ pi
    reached = rates > 0
    weighted = q[reached] / rates[reached, None]
    information = q[reached].T @ weighted
    try:
        inverse = np.linalg.inv(information)
        if not np.isfinite(inverse).all():
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        inverse = np.linalg.pinv(information, hermitian=True)  # public channels: unreached answers have no variance
    direction = inverse.sum(axis=1)
    return inverse - np.outer(direction, direction) / direction.sum()


# --- binary designs --------------------------------------------------------------------------------

@dataclass(frozen=True)
class BinaryChannel:
    """P(report yes | yes) = p, P(report yes | no) = q: λ = q + (p − q)π."""

    p: float
    q: float

    def rate(self, pi):
        return self.q + (self.p - self.q) * pi

    def prevalence(self, rate):
        return (rate - self.q) / (self.p - self.q)

    def unit_variance(self, rate):
        """Variance of the unbiased prevalence estimate from one report at report rate λ."""
        return rate * (1 - rate) / (self.p - self.q) ** 2


def _binomial_loglik(k: int, n: int, rate):
    rate = np.clip(rate, 1e-300, 1 - 1e-16)
    return k * np.log(rate) + (n - k) * np.log1p(-rate)


def clopper_pearson_rates(k, n: int, level: float):
    """The exact binomial interval for the report rate behind k of n (k a number or an array)."""
    alpha = 1 - level
    k = np.asarray(k)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k == 0, 0.0, stats.beta.ppf(alpha / 2, k, n - k + 1))
        high = np.where(k == n, 1.0, stats.beta.isf(alpha / 2, k + 1, n - k))
    return low, high


def binary_interval(channel: BinaryChannel, k: int, n: int, level: float, method: str) -> tuple[ConfidenceInterval, bool]:
    """An interval for π from k "yes" reports out of n. Returns (interval, clipped?).

    Intervals on the report rate λ are mapped through π = (λ − q)/(p − q) and clipped to [0, 1].
    When the mapped interval lies wholly outside [0, 1] (the data sit where the design cannot
    reach), or for method "likelihood", the profile-likelihood interval on π ∈ [0, 1] is used:
    it always contains the maximum-likelihood estimate and is never [0, 0].
    """
    if method not in BINARY_METHODS:
        raise ValueError(f"method must be one of {', '.join(BINARY_METHODS)}, got {method!r}")
    alpha = 1 - level
    rate = k / n
    if method == "wald":
        estimate = channel.prevalence(rate)
        se = math.sqrt(channel.unit_variance(rate) / n)
        z = stats.norm.isf(alpha / 2)
        low, high = estimate - z * se, estimate + z * se
    elif method == "wilson":
        z = stats.norm.isf(alpha / 2)
        centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        low, high = sorted(channel.prevalence(np.array([centre - half, centre + half])))
    elif method == "clopper-pearson":
        low, high = sorted(channel.prevalence(np.array(clopper_pearson_rates(k, n, level))))
    else:
        return likelihood_interval(channel, k, n, level), False
    if high <= 0 or low >= 1:  # wholly outside, or only touching, [0, 1]: no width left after clipping
        return likelihood_interval(channel, k, n, level), True
    clipped = low < 0 or high > 1
    return ConfidenceInterval(max(low, 0.0), min(high, 1.0)), clipped


def binary_mle(channel: BinaryChannel, k: int, n: int) -> float:
    """The maximum-likelihood share on [0, 1]: the binomial likelihood in π is concave with its
    unconstrained peak at the moment estimate, so the maximum on [0, 1] is that estimate clipped."""
    return float(np.clip(channel.prevalence(k / n), 0.0, 1.0))


def likelihood_interval(channel: BinaryChannel, k: int, n: int, level: float) -> ConfidenceInterval:
    """{π ∈ [0, 1] : 2(ℓ(π̃) − ℓ(π)) ≤ χ²₁(level)} for the binomial likelihood of the reports."""
    best = binary_mle(channel, k, n)
    cut = stats.chi2.ppf(level, 1) / 2
    peak = _binomial_loglik(k, n, channel.rate(best))

    def drop(pi):
        return peak - _binomial_loglik(k, n, channel.rate(pi)) - cut

    low = 0.0 if drop(0.0) <= 0 else optimize.brentq(drop, 0.0, best, xtol=1e-12)
    high = 1.0 if drop(1.0) <= 0 else optimize.brentq(drop, best, 1.0, xtol=1e-12)
    return ConfidenceInterval(float(low), float(high))


def is_binary(mechanism: Mechanism) -> bool:
    """Two answers and two reports: one share to estimate, from a binomial count (yes/no questions, and
    any choice between two options)."""
    return not isinstance(mechanism, UnaryMechanism) and len(mechanism.answers) == 2 and len(mechanism.reports) == 2


def marginal_channel(q: np.ndarray) -> BinaryChannel | None:
    """For a square channel with one value on the diagonal and one off it (k-ary randomized response, a
    public question), the count of report j is Binomial(n, o + (p − o)π_j): each answer's share has a
    two-answer channel of its own, (p, o). None for any other channel."""
    if q.shape[0] != q.shape[1] or q.shape[0] < 2:
        return None
    diagonal = np.diag(q)
    off = q[~np.eye(len(q), dtype=bool)]
    if np.ptp(diagonal) > 1e-15 or np.ptp(off) > 1e-15 or diagonal[0] == off[0]:
        return None
    return BinaryChannel(float(diagonal[0]), float(off[0]))


def binary_channel(mechanism: Mechanism) -> BinaryChannel:
    """The (p, q) of a two-answer mechanism (P(first report | first answer), P(first report | second
    answer)), or of one option's bit in a unary mechanism."""
    if isinstance(mechanism, UnaryMechanism):
        return BinaryChannel(float(mechanism.keep_one), float(mechanism.flip_zero))
    (first, second), report = mechanism.answers, mechanism.reports[0]
    return BinaryChannel(float(mechanism.probability(report, first)), float(mechanism.probability(report, second)))


def per_answer_level(level: float, count: int, simultaneous: bool) -> float:
    """Bonferroni: with ``simultaneous``, each of ``count`` intervals at level 1 − (1 − level)/count."""
    return 1 - (1 - level) / count if simultaneous and count > 1 else level
