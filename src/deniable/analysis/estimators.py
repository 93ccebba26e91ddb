"""Building blocks of the estimates: the channel as a matrix, the moment estimator, covariances, and
the closed forms of two-answer (binary) designs.

For a channel Q (reports × answers) and observed report frequencies λ̂ from n reports:

* the estimate of record is the maximum-likelihood estimate on the simplex (`likelihood.maximise`;
  for a binary design the clipped closed form `binary_mle`), with covariance from the Fisher information
  at its fitted rates (`channels.fitted_covariance`);
* the unbiased moment estimate π̂ = Q⁺ λ̂ (Q⁺ = Q⁻¹ when square; the least-squares left inverse
  otherwise, still unbiased because Q⁺Q = I) stays beside it, with covariance Q⁺ (diag λ̂ − λ̂λ̂ᵀ)/n Q⁺ᵀ.
  It may fall outside [0, 1]; the two agree whenever it does not (and Q is square).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from scipy import special

from . import distributions
from .channels import (
    BinaryChannel,
    Channel,
    FoldedGeometric,
    fitted_covariance,
    left_inverse,
    marginal_channel,
    structure,
    symmetric_covariance,
)
from .errors import AnalysisError

BINARY_METHODS = ("likelihood", "clopper-pearson", "wilson", "wald")
DEFAULT_BINARY_METHOD = "clopper-pearson"  # chosen by the coverage study in docs/validation.md


class ConfidenceInterval(NamedTuple):
    """An interval that unpacks and indexes like scipy's (``low, high = ci``; ``ci[0]``) and names its ends."""

    low: float
    high: float


def unbiased(q: Channel, counts: np.ndarray) -> tuple[np.ndarray, "LinearSpread"]:
    """π̂ = Q⁺λ̂ and its estimated covariance (`LinearSpread`: read as each share's variance or a functional's)."""
    n = counts.sum()
    if n == 0:
        raise AnalysisError("no reports to estimate from")
    rates = counts / n
    marginal = marginal_channel(q)
    if marginal is not None:  # k-ary randomized response: Q⁻¹ in closed form (`channels.symmetric_covariance`)
        return marginal.prevalence(rates), LinearSpread(None, rates, n, marginal)
    if isinstance(q, FoldedGeometric):  # a grid too long to write out: its own left inverse, in O(k + R)
        return q.unbiased(rates), LinearSpread(q, rates, n)
    inverse = left_inverse(q)
    return inverse @ rates, LinearSpread(inverse, rates, n)


class LinearSpread:
    """The covariance of shares L·λ (L a left inverse of the channel, λ the report shares of n reports: the unbiased
    estimate at the observed shares; k-ary randomized response's inverse information at its fitted ones), L(diag λ −
    λλᵀ)Lᵀ/n, read as what the estimates publish (each share's variance, a functional's) without its k × k matrix:
    gᵀL(diag λ − λλᵀ)Lᵀg = Σ_r (Lᵀg)_r² λ_r − (gᵀLλ)², O(k·R) (a 0..1000 grid's matrix was a 3-GFlop product and
    8 MB, for its diagonal and one quadratic form). ``marginal``: k-ary randomized response's channel, whose inverse
    is (I − o11ᵀ)/(p − o) (`channels.symmetric_covariance`); then ``inverse`` is None. ``inverse`` may also be a
    number's structure (`channels.FoldedGeometric.unbiased`: its left inverse, never written out). One of the three
    readings of a covariance (with `CovarianceMatrix` and `bootstrap.Bootstrap`): ``variances``, ``variance`` and
    ``matrix``."""

    def __init__(self, inverse, rates: np.ndarray, n: float, marginal: BinaryChannel | None = None):
        self.inverse, self.rates, self.n, self.marginal = inverse, rates, float(n), marginal

    def variances(self) -> np.ndarray:
        """Each share's variance: the covariance's diagonal."""
        if self.marginal is not None:
            return self.marginal.unit_variance(self.rates) / self.n
        if isinstance(self.inverse, FoldedGeometric):
            return self.inverse.unbiased_variances(self.rates, self.n)
        inverse = self.inverse
        return (np.einsum("ir,ir,r->i", inverse, inverse, self.rates) - (inverse @ self.rates) ** 2) / self.n

    def variance(self, functional: np.ndarray) -> float:
        """gᵀ Cov g for the functional g over the answers."""
        functional = np.asarray(functional, dtype=float)
        # k-ary randomized response's Lᵀg is (g − o·Σg)/(p − o): a shift, which the centring takes away, and a scale.
        pulled = functional if self.marginal is not None else self._pulled(functional)
        centred = pulled @ self.rates
        scale = 1.0 if self.marginal is None else (self.marginal.p - self.marginal.q) ** -2
        return float(((pulled * pulled) @ self.rates - centred * centred) * scale / self.n)

    def _pulled(self, functional: np.ndarray) -> np.ndarray:
        """Lᵀg."""
        if isinstance(self.inverse, FoldedGeometric):
            return self.inverse.unbiased_weights(functional)
        return functional @ self.inverse

    def matrix(self) -> np.ndarray:
        """The covariance written out (k × k; a structure's left inverse is written out for it, O(k·R))."""
        if self.marginal is not None:
            return symmetric_covariance(self.marginal, self.rates) / self.n
        inverse = self.inverse
        if isinstance(inverse, FoldedGeometric):
            inverse = np.array([self._pulled(unit) for unit in np.eye(inverse.shape[1])])
        # L(diag λ − λλᵀ)Lᵀ = (L·λ)Lᵀ − (Lλ)(Lλ)ᵀ: no reports × reports matrix
        centred = inverse @ self.rates
        return ((inverse * self.rates) @ inverse.T - np.outer(centred, centred)) / self.n


class CovarianceMatrix:
    """A covariance already written out, read as `LinearSpread` and `bootstrap.Bootstrap` are."""

    def __init__(self, matrix: np.ndarray):
        self._matrix = matrix

    def variances(self) -> np.ndarray:
        return np.diag(self._matrix)

    def variance(self, functional: np.ndarray) -> float:
        return float(functional @ self._matrix @ functional)

    def matrix(self) -> np.ndarray:
        return self._matrix


class ScaledCovariance:
    """Another estimate's covariance times a factor (a panel's pooled figure: `waves`), read through that covariance's
    own reading where it has one (never written out for a standard error), else from its matrix: ``source`` is a
    reading, a matrix, or a function that writes one out."""

    def __init__(self, source, scale: float):
        self.source, self.scale = source, scale

    def variances(self) -> np.ndarray:
        if hasattr(self.source, "variances"):
            return self.source.variances() * self.scale
        return np.diag(self.matrix()).copy()

    def variance(self, functional: np.ndarray) -> float:
        if hasattr(self.source, "variance"):
            return self.source.variance(functional) * self.scale
        return float(functional @ self.matrix() @ functional)

    def matrix(self) -> np.ndarray:
        matrix = written_out(self.source)
        assert matrix is not None  # a scaled covariance scales one that is there
        return matrix * self.scale


def written_out(source) -> np.ndarray | None:
    """A covariance as a matrix, whatever holds it: a reading (``matrix()``), a function that writes it out, or the
    matrix itself (None: none)."""
    if hasattr(source, "matrix"):
        return source.matrix()
    return source() if callable(source) else source


class SupportedCovariance:
    """A covariance that is zero outside some answers (a fit's positive ones: the linearization holds the others at
    0), kept as its block on them (a long grid's fit sits on a few of its 10,001 answers), read as `CovarianceMatrix`."""

    def __init__(self, size: int, support: np.ndarray, block: np.ndarray):
        self.size, self.support, self.block = size, support, block

    def variances(self) -> np.ndarray:
        variances = np.zeros(self.size)
        variances[self.support] = np.diag(self.block)
        return variances

    def variance(self, functional: np.ndarray) -> float:
        along = np.asarray(functional, dtype=float)[self.support]
        return float(along @ self.block @ along)

    def matrix(self) -> np.ndarray:
        matrix = np.zeros((self.size, self.size))
        matrix[np.ix_(self.support, self.support)] = self.block
        return matrix


class InverseInformation:
    """A number's inverse information at the fit over n (`channels.fitted_covariance`), read through its structure in
    O(k) (`channels.FoldedGeometric`), as `CovarianceMatrix` reads one written out."""

    def __init__(self, structure: FoldedGeometric, pi: np.ndarray, n: float):
        self.structure, self.pi, self.n = structure, pi, float(n)

    def variances(self) -> np.ndarray:
        return self.structure.fitted_variances(self.pi) / self.n

    def variance(self, functional: np.ndarray) -> float:
        return self.structure.fitted_variance(self.pi, functional) / self.n

    def matrix(self) -> np.ndarray:
        return self.structure.fitted_covariance(self.pi) / self.n


def fitted_spread(q, pi: np.ndarray, n: float):
    """The inverse information at the fit ``pi`` over n, as a reading of a covariance: through a number's structure
    where it has one (`channels.fitted_variances`), never written out."""
    known = structure(q)
    if known is not None:
        return InverseInformation(known, pi, n)
    return CovarianceMatrix(fitted_covariance(q, pi) / n)


# --- binary designs --------------------------------------------------------------------------------

def _inside(rate) -> float:
    """A report rate kept off 0 and 1, where the binomial log-likelihood is finite."""
    return min(max(float(rate), 1e-300), 1 - 1e-16)


def _binomial_loglik(k: int, n: int, rate: float) -> float:
    rate = _inside(rate)  # scalars: a root search calls this for every step of an interval's end
    return k * math.log(rate) + (n - k) * math.log1p(-rate)


def clopper_pearson_rates(k, n: int, level: float):
    """The exact binomial interval for the report rate behind k of n (k a number or an array)."""
    alpha = 1 - level
    k = np.asarray(k)
    # Each distinct count once (a thousand answers of ten thousand reports share a few dozen counts), and by scipy.special
    # directly: `stats.beta.ppf` and `.isf` give the same quantiles (to an ulp) after argument checks that were most of a
    # small question's time.
    distinct, position = np.unique(k, return_inverse=True) if k.size > 64 else (k, None)  # np.unique: 50 µs of overhead
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(distinct == 0, 0.0, special.betaincinv(distinct, n - distinct + 1, alpha / 2))
        high = np.where(distinct == n, 1.0, special.betainccinv(distinct + 1, n - distinct, alpha / 2))
    if position is None:
        return low, high
    return low[position].reshape(k.shape), high[position].reshape(k.shape)


def binary_interval(channel: BinaryChannel, k: int, n: int, level: float, method: str) -> tuple[ConfidenceInterval, bool]:
    """An interval for π from k "yes" reports out of n. Returns (interval, clipped?).

    Intervals on the report rate λ are mapped through π = (λ − q)/(p − q) and clipped to [0, 1].
    When the mapped interval lies wholly outside [0, 1] (the data sit where the design cannot
    reach), or for method "likelihood", the profile-likelihood interval on π ∈ [0, 1] is used:
    it always contains the maximum-likelihood estimate and is never [0, 0].
    """
    if method not in BINARY_METHODS:
        raise AnalysisError(f"method must be one of {', '.join(BINARY_METHODS)}, got {method!r}")
    alpha = 1 - level
    rate = k / n
    if method == "wald":
        estimate = channel.prevalence(rate)
        se = math.sqrt(channel.unit_variance(rate) / n)
        z = distributions.norm_isf(alpha / 2)
        low, high = estimate - z * se, estimate + z * se
    elif method == "wilson":
        z = distributions.norm_isf(alpha / 2)
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
    return min(max(float(channel.prevalence(k / n)), 0.0), 1.0)


def likelihood_interval(channel: BinaryChannel, k: int, n: int, level: float) -> ConfidenceInterval:
    """{π ∈ [0, 1] : 2(ℓ(π̃) − ℓ(π)) ≤ χ²₁(level)} for the binomial likelihood of the reports."""
    best = binary_mle(channel, k, n)
    floor = _binomial_loglik(k, n, channel.rate(best)) - _half_chi2(level)
    ends = []
    for edge in (0.0, 1.0):
        if _binomial_loglik(k, n, channel.rate(edge)) >= floor:
            ends.append(edge)
        else:
            found = channel.prevalence(_rate_crossing(k, n, floor, channel.rate(best), channel.rate(edge)))
            ends.append(min(max(float(found), 0.0), 1.0))
    return ConfidenceInterval(*sorted(ends))


@functools.lru_cache(maxsize=16)
def _half_chi2(level: float) -> float:
    return float(special.gammaincinv(0.5, level))  # χ²₁'s quantile / 2, as `stats.chi2.ppf` computes it


#: Newton steps before an interval's end is left to Brent's method.
CROSSING_STEPS = 40


def _rate_crossing(k: int, n: int, floor: float, top: float, far: float) -> float:
    """The report rate between ``top`` (the maximum of ℓ(λ) = k log λ + (n − k) log(1 − λ)) and ``far`` where ℓ falls
    to ``floor``. Newton's method on floor − ℓ, in log λ below the maximum and in log(1 − λ) above it: there the
    function is convex (−(n − k) log(1 − e^v) and −k log(1 − e^w) are), so each step from ``far`` lands short of the
    crossing and they approach it from outside, monotonically; the term the logarithm makes linear (k log λ for a rare
    report, the one that bends most) costs no steps: about five steps for a rare count, where Brent's method on the
    share took ten evaluations and the overhead of scipy's wrapper (30–60 µs an end; a k-ary estimate takes one end
    per distinct rare count). Steps that stop short of it (rounding) or would leave the floats leave the rest to
    brentq."""
    below = far < top
    rate = _inside(far)

    def excess(r):
        return floor - _binomial_loglik(k, n, r)

    for _ in range(CROSSING_STEPS):
        value = excess(rate)
        if value <= 0:
            return rate
        # below: v = log λ, d(floor − ℓ)/dv = −k + (n − k)·λ/(1 − λ); above: w = log(1 − λ), k(1 − λ)/λ − (n − k)
        slope = -k + (n - k) * rate / (1 - rate) if below else k * (1 - rate) / rate - (n - k)
        if not slope < 0 or -value / slope > 700:  # no descent to follow, or a step past the floats
            break
        following = rate * math.exp(-value / slope) if below else 1 - (1 - rate) * math.exp(-value / slope)
        if following == rate:  # within an ulp
            return rate
        if not (rate < following <= top if below else top <= following < rate):  # rounding: no further progress
            break
        rate = following
    from scipy import optimize  # the rare fallback: importing scipy.optimize costs 0.2 s of every estimate's CPU

    low, high = sorted((rate, top))
    return optimize.brentq(excess, low, high, xtol=1e-15)


def per_answer_level(level: float, count: int, simultaneous: bool) -> float:
    """Bonferroni: with ``simultaneous``, each of ``count`` intervals at level 1 − (1 − level)/count."""
    return 1 - (1 - level) / count if simultaneous and count > 1 else level
