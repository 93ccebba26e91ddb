"""Debiased estimates from report counts, by inverting the mechanism's exact channel.

For a channel Q (reports × answers) and observed report frequencies λ̂ from n reports:

* unbiased π̂ = Q⁺ λ̂ (Q⁺ = Q⁻¹ when square; the least-squares left inverse otherwise, still
  unbiased because Q⁺Q = I), covariance Q⁺ (diag λ − λλᵀ)/n Q⁺ᵀ with λ̂ plugged in;
* constrained π̃ on the simplex: the maximum-likelihood estimate by EM (iterative Bayesian update).

Raw estimates outside [0, 1] are reported as they are, beside the constrained ones.
"""

from __future__ import annotations

import math
import warnings
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


def em(q: np.ndarray, counts: np.ndarray, tolerance: float = 1e-9, max_iterations: int = 20_000) -> tuple[np.ndarray, int]:
    """Maximum likelihood on the simplex by EM (iterative Bayesian update), π ← π ⊙ Qᵀ(c / Qπ) / n,
    accelerated by SQUAREM (Varadhan & Roland 2008) because plain EM crawls when the maximum
    sits on the boundary. Every step stays on the simplex. Returns (π, EM steps used)."""
    n = counts.sum()
    observed = counts > 0
    q_obs, c_obs = q[observed], counts[observed]

    def step(pi):
        return pi * (q_obs.T @ (c_obs / np.maximum(q_obs @ pi, 1e-300))) / n

    def loglik(pi):
        return float(c_obs @ np.log(np.maximum(q_obs @ pi, 1e-300)))

    pi = np.full(q.shape[1], 1.0 / q.shape[1])
    steps = 0
    while steps < max_iterations:
        first = step(pi)
        second = step(first)
        steps += 2
        r = first - pi
        v = second - first - r
        if np.linalg.norm(v) == 0:
            updated = second
        else:
            alpha = min(-np.linalg.norm(r) / np.linalg.norm(v), -1.0)
            candidate = np.clip(pi - 2 * alpha * r + alpha * alpha * v, 0.0, None)
            candidate = step(candidate / candidate.sum())
            steps += 1
            updated = candidate if loglik(candidate) >= loglik(second) else second
        gain = loglik(updated) - loglik(pi)
        if np.max(np.abs(updated - pi)) < tolerance or 0 <= gain < 1e-10 * abs(loglik(pi)):
            return updated, steps
        pi = updated
    warnings.warn(f"EM did not converge in {max_iterations} steps", RuntimeWarning, stacklevel=2)
    return pi, steps


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


def binary_interval(channel: BinaryChannel, k: int, n: int, level: float, method: str) -> tuple[ConfidenceInterval, bool]:
    """An interval for π from k "yes" reports out of n. Returns (interval, clipped?).

    Intervals on the report rate λ are mapped through π = (λ − q)/(p − q) and clipped to [0, 1].
    When the mapped interval lies wholly outside [0, 1] (the data sit where the design cannot
    reach), or for method "likelihood", the profile-likelihood interval on π ∈ [0, 1] is used:
    it always contains the constrained MLE and is never [0, 0].
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
        rate_low = 0.0 if k == 0 else stats.beta.ppf(alpha / 2, k, n - k + 1)
        rate_high = 1.0 if k == n else stats.beta.isf(alpha / 2, k + 1, n - k)
        low, high = sorted(channel.prevalence(np.array([rate_low, rate_high])))
    else:
        return likelihood_interval(channel, k, n, level), False
    if high < 0 or low > 1:
        return likelihood_interval(channel, k, n, level), True
    clipped = low < 0 or high > 1
    return ConfidenceInterval(max(low, 0.0), min(high, 1.0)), clipped


def constrained_binary(channel: BinaryChannel, k: int, n: int) -> float:
    return float(np.clip(channel.prevalence(k / n), 0.0, 1.0))


def likelihood_interval(channel: BinaryChannel, k: int, n: int, level: float) -> ConfidenceInterval:
    """{π ∈ [0, 1] : 2(ℓ(π̃) − ℓ(π)) ≤ χ²₁(level)} for the binomial likelihood of the reports."""
    best = constrained_binary(channel, k, n)
    cut = stats.chi2.ppf(level, 1) / 2
    peak = _binomial_loglik(k, n, channel.rate(best))

    def drop(pi):
        return peak - _binomial_loglik(k, n, channel.rate(pi)) - cut

    low = 0.0 if drop(0.0) <= 0 else optimize.brentq(drop, 0.0, best, xtol=1e-12)
    high = 1.0 if drop(1.0) <= 0 else optimize.brentq(drop, best, 1.0, xtol=1e-12)
    return ConfidenceInterval(float(low), float(high))


def binary_channel(mechanism: Mechanism) -> BinaryChannel:
    """The (p, q) of a yes/no mechanism, or of one option's bit in a unary mechanism."""
    if isinstance(mechanism, UnaryMechanism):
        return BinaryChannel(float(mechanism.keep_one), float(mechanism.flip_zero))
    return BinaryChannel(float(mechanism.probability("yes", "yes")), float(mechanism.probability("yes", "no")))


def simultaneous_z(level: float, count: int) -> float:
    """Bonferroni: each of ``count`` intervals at level 1 − (1 − level)/count."""
    return float(stats.norm.isf((1 - level) / (2 * count)))
