"""The few distribution functions the estimates need, from `scipy.special`'s functions rather than `scipy.stats`.

Importing `scipy.stats` costs about 0.5 s of CPU (every distribution it defines is built at import), more than the
rest of a survey's estimate; these are the same functions `scipy.stats` evaluates underneath (the normal's and
Student's t's quantiles and tails, χ²'s, the beta quantile) or, for the binomial probability, the saddle-point
form of Loader (2000) that R's ``dbinom`` uses, accurate to a few ulps where `scipy.stats` agrees with it to 1e-12
(a test compares them)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special


def norm_isf(p):
    """The standard normal's upper quantile: z with P(Z > z) = p."""
    return -special.ndtri(p)


def norm_sf(x):
    """P(Z > x) for a standard normal Z."""
    return special.ndtr(-np.asarray(x, dtype=float))


def t_isf(p, df):
    """Student's t upper quantile on ``df`` degrees of freedom (the normal's for df None or infinite)."""
    if df is None or np.isinf(df):
        return norm_isf(p)
    return -special.stdtrit(df, p)


def t_sf(x, df):
    """P(T > x) on ``df`` degrees of freedom (the normal's for df None or infinite)."""
    if df is None or np.isinf(df):
        return norm_sf(x)
    return special.stdtr(df, -np.asarray(x, dtype=float))


def bonferroni(pvalues) -> float:
    """The smallest of several p-values, Bonferroni-corrected (times their number, at most 1): a test of them all that
    holds whatever their dependence (a panel's waves, a multi-select question's parts)."""
    pvalues = list(pvalues)
    return min(1.0, len(pvalues) * min(pvalues))


def chi2_ppf(q, df):
    """χ²'s quantile: x with P(X ≤ x) = q on ``df`` degrees of freedom."""
    return 2 * special.gammaincinv(np.asarray(df, dtype=float) / 2, q)


def chi2_sf(x, df):
    """P(X > x) for X ~ χ² on ``df`` degrees of freedom."""
    return special.chdtrc(df, x)


def beta_ppf(q, a, b):
    """The beta distribution's quantile."""
    return special.betaincinv(a, b, q)


_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _stirling_error(n: np.ndarray) -> np.ndarray:
    """log(n!) − log(√(2πn) (n/e)ⁿ): the series above 15, the log-gamma form below (where it loses no digit that
    matters: its terms are of order 10)."""
    n = np.asarray(n, dtype=float)
    small = n <= 15
    out = np.empty_like(n)
    m = n[small]
    with np.errstate(divide="ignore", invalid="ignore"):
        out[small] = np.where(m > 0, special.gammaln(m + 1) - (m + 0.5) * np.log(np.where(m > 0, m, 1)) + m
                              - _HALF_LOG_2PI, 0.0)
    big = n[~small]
    square = big * big
    out[~small] = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * square)) / square) / square) / square) / big
    return out


def _deviance(x: np.ndarray | float, mean: np.ndarray | float) -> np.ndarray:
    """x log(x / mean) + mean − x, by its series where x is near the mean (no cancellation)."""
    x, mean = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(mean, dtype=float))
    out = np.empty(x.shape)
    near = np.abs(x - mean) < 0.1 * (x + mean)
    far = ~near
    with np.errstate(divide="ignore", invalid="ignore"):
        out[far] = np.where(x[far] > 0, x[far] * np.log(x[far] / mean[far]), 0.0) + mean[far] - x[far]
    if near.any():
        xs, ms = x[near], mean[near]
        v = (xs - ms) / (xs + ms)
        total = (xs - ms) * v
        term = 2 * xs * v
        v2 = v * v
        for j in range(1, 1000):
            term = term * v2
            step = term / (2 * j + 1)
            updated = total + step
            if np.array_equal(updated, total):
                break
            total = updated
        out[near] = total
    return out


def binom_pmf(k, n: int, p: float) -> np.ndarray:
    """P(K = k) for K ~ Binomial(n, p), for whole k (Loader's saddle-point form)."""
    k = np.asarray(k, dtype=float)
    q = 1.0 - p
    out = np.zeros(k.shape)
    inside = (k >= 0) & (k <= n)
    if p == 0 or q == 0:
        out[inside & (k == (0 if p == 0 else n))] = 1.0
        return out
    if n == 0:
        out[inside] = 1.0
        return out
    first = inside & (k == 0)
    last = inside & (k == n)
    out[first] = math.exp(-_deviance(n, n * q) - n * p if p < 0.1 else n * math.log(q))
    out[last] = math.exp(-_deviance(n, n * p) - n * q if q < 0.1 else n * math.log(p))
    middle = inside & (k > 0) & (k < n)
    x = k[middle]
    log_core = (_stirling_error(np.full(x.shape, float(n))) - _stirling_error(x) - _stirling_error(n - x)
                - _deviance(x, n * p) - _deviance(n - x, n * q))
    log_factor = 2 * _HALF_LOG_2PI + np.log(x) + np.log1p(-x / n)
    out[middle] = np.exp(log_core - 0.5 * log_factor)
    return out


#: The sequential Monte Carlo test (`sequential_p`): draws first, then more in chunks while fewer than ``enough`` reach
#: the statistic, up to ``most`` (the smallest p is then 1/20,000).
FIRST_DRAWS = 999
CHUNK_DRAWS = 2000
MOST_DRAWS = 19_999
ENOUGH_EXCEEDANCES = 10


def sequential_p(statistics_of, observed: float) -> tuple[float, int, int]:
    """(p, draws, draws reaching the statistic) of a Monte Carlo test, sequentially (Besag and Clifford 1991):
    `FIRST_DRAWS` first, then more in chunks of `CHUNK_DRAWS` while fewer than `ENOUGH_EXCEEDANCES` reached
    ``observed``, up to `MOST_DRAWS`; p = (1 + reaching)/(1 + draws), a valid p-value at any stopping point. Honest
    data stop after the first block (their p is rarely small); data far from the null earn the draws that can say how
    far. ``statistics_of(size)`` returns that many simulated statistics (the next ones of its own seeded stream).
    With no draw reaching the statistic, p is a bound (the statistic's true p is smaller): say "p < …"
    (`p_words`)."""
    threshold = observed - 1e-9 * max(1.0, abs(observed))
    drawn = reaching = 0
    while True:
        size = FIRST_DRAWS if drawn == 0 else min(CHUNK_DRAWS, MOST_DRAWS - drawn)
        reaching += int(np.sum(np.asarray(statistics_of(size)) >= threshold))
        drawn += size
        if reaching >= ENOUGH_EXCEEDANCES or drawn >= MOST_DRAWS:
            return (1 + reaching) / (drawn + 1), drawn, reaching


def p_words(p: float, bound: bool = False) -> str:
    """"p = 0.0312", or for a Monte Carlo p no draw reached (``bound``) "p < 0.0001": the bound rounded up to the next
    power of ten, never printed as the value it only bounds."""
    if bound:
        return f"p < {10.0 ** math.ceil(math.log10(p)):g}"
    return f"p = {p:.3g}"
