"""What a wide number publishes: shares of ranges of its values (bins) and its quartiles, each with an interval.

A number question whose grid is longer than `WIDE_GRID` values is published by default as its mean, its median and
quartiles, and its distribution over bins; its per-value shares are computed only when asked for. At the ε and n of a
survey one value's share of a long grid is seldom identified (a 0..100 number at ε 1 from 10⁴ reports: 97 of 101
shares read 0.000 with intervals reaching 0.1 to 0.9), while a range of values, a quantile and the mean are.

* A bin is a range of adjacent grid values: its share is the sum of theirs, with the standard error of that sum and
  the profile-likelihood interval of that sum (`calibration.interval`, as every share's). The spec may declare the
  bins by their lower edges (``bins: [0, 1, 5, 10, 20, 50]``: 0, 1–4, 5–9, 10–19, 20–49, 50–max); else about ten of
  equal width on round numbers (`default_edges`).
* The p-quantile is the least grid value v with F(v) ≥ p, F the estimated distribution function. Its interval
  inverts the test of F at the grid points: v is left out when F(v)'s interval lies wholly below p (the quantile is
  above v) or F(v⁻)'s wholly at or above p (it is below v). F's profile bounds rise with v (F(v) does, for every
  distribution), so the interval's ends are the least v whose upper bound reaches p and the least v whose lower bound
  does: each end found by a search over the grid that reads one bound per value it visits (the bounds are shared by
  the three quartiles). The bootstrap's surveys give cheaper intervals that fall short: their own quantiles' order
  statistics (the percentile interval) covered a point mass's lower quartile 0.88 (k 76, ε 0.51, n 15,129) and a
  near-a-face median 0.885 (k 44, ε 0.82, n 258), 400 surveys each, since the estimate's quantile leans toward the
  grid's end and surveys drawn at the estimate lean with it; F̂ ± z·SD over them, inverted (Woodruff's), read 0.77.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd

from deniable.client.laplace import LaplaceMechanism

from . import calibration, distributions

#: A number with more values than this is wide: published as bins and quartiles, per-value rows on request. The
#: grids whose bootstrap surveys are fitted together (`bootstrap.BATCH_ANSWERS`) are also those whose shares are read.
WIDE_GRID = 24
#: About this many bins when the spec declares none.
DEFAULT_BINS = 10
#: The quantiles published beside the mean, by name: the quartiles and the median (the long table's columns are these
#: names with underscores, the dashboard's rows and the summary's words these names).
NAMES = {0.25: "lower quartile", 0.5: "median", 0.75: "upper quartile"}
PROBABILITIES = tuple(NAMES)
#: Round bin widths: these times a power of ten.
_ROUND = (1, 2, 2.5, 5)


def is_wide(mechanism) -> bool:
    """Is this a number question with more than `WIDE_GRID` values?"""
    return isinstance(mechanism, LaplaceMechanism) and mechanism.points + 1 > WIDE_GRID


def default_edges(low: Fraction, high: Fraction, step: Fraction) -> tuple[Fraction, ...]:
    """The lower edges of about `DEFAULT_BINS` bins of equal width on round numbers (1, 2, 2.5 or 5 times a power of
    ten, a whole number of steps), the first at ``low``: 0..100 in tens, 18..99 as 18–19, 20–29, …, 90–99."""
    low, high, step = Fraction(low), Fraction(high), Fraction(step)
    wanted = (high - low) / DEFAULT_BINS
    width = None
    power = math.floor(math.log10(max(float(wanted), 1e-300)))
    for exponent in range(power - 1, power + 3):
        for base in _ROUND:
            candidate = Fraction(base) * Fraction(10) ** exponent
            if candidate >= wanted and (candidate / step).denominator == 1 and (width is None or candidate < width):
                width = candidate
    if width is None:  # a step no round width is a multiple of: whole steps
        width = step * max(1, math.ceil(wanted / step))
    first = math.floor(low / width) * width
    edges = [low] + [first + i * width for i in range(1, math.ceil((high - first) / width) + 1)]
    return tuple(edge for edge in edges if edge < high or edge == low)


def groups(values: np.ndarray, edges) -> list[tuple[str, np.ndarray]]:
    """(label, the grid indices in it) of each bin whose lower edges are ``edges`` (the first bin starts at the grid's
    least value; the last runs to its greatest). Labelled by the first and last value in it ("10–19")."""
    values = np.asarray(values, dtype=float)
    starts = [0] + [int(np.searchsorted(values, float(edge) - 1e-9 * max(abs(float(edge)), 1.0))) for edge in edges]
    starts = sorted(set(start for start in starts if start < len(values)))
    bounds = starts + [len(values)]
    return [(label(values, np.arange(begin, end)), np.arange(begin, end)) for begin, end in zip(bounds, bounds[1:])]


def equal_count_groups(values: np.ndarray, bins: int) -> list[tuple[str, np.ndarray]]:
    """At most ``bins`` ranges of adjacent values, equal in count (`EstimateResult.binned`)."""
    return [(label(values, members), members) for members in np.array_split(np.arange(len(values)),
                                                                            min(bins, len(values)))]


def label(values: np.ndarray, members: np.ndarray) -> str:
    first, last = (f"{v:g}" for v in (values[members[0]], values[members[-1]]))
    if first == last:
        return first
    return f"{first} to {last}" if values[members[0]] < 0 else f"{first}–{last}"


def range_table(q, counts, pi, members_of, variance, level, calibrated, unbiased=None, unbiased_variance=None,
                name: str = "values") -> pd.DataFrame:
    """A row per range (``members_of``: (label, indices) pairs): its share, the standard error of the sum of its
    values' shares (``variance``: a functional's, from the estimate's covariance), its interval at ``level`` (`calibration.interval`,
    clipped to [0, 1] and holding the share), and the unbiased estimate's sum beside it when given."""
    rows, index = [], []
    k = len(pi)
    for name_of_range, members in members_of:
        indicator = np.zeros(k)
        indicator[members] = 1.0
        share = float(indicator @ pi)
        se = math.sqrt(max(variance(indicator), 0.0))
        low, high = calibration.interval(q, counts, pi, indicator, level, calibrated)
        low, high = min(max(low, 0.0), share), max(min(high, 1.0), share)
        row = [share, se, low, high]
        if unbiased is not None:
            row += [float(indicator @ unbiased), math.sqrt(max(unbiased_variance(indicator), 0.0))]
        rows.append(row)
        index.append(name_of_range)
    columns = ["estimate", "se", "ci_low", "ci_high"] + (["unbiased", "unbiased_se"] if unbiased is not None else [])
    return pd.DataFrame(rows, columns=columns, index=pd.Index(index, name=name))


def quantile_index(cumulative: np.ndarray, probability: float) -> int:
    """The least grid index whose distribution function reaches ``probability`` (round-off of the sum forgiven)."""
    return int(np.searchsorted(cumulative, probability - 1e-9))


class QuantileSearch:
    """The quantiles of a fitted distribution on a grid, with intervals by inverting the profile-likelihood test of
    its distribution function at the grid points. Each bound of F(v) read is kept: the quartiles share them."""

    def __init__(self, q, counts, pi, values, level, calibrated=None):
        self.q, self.counts, self.pi, self.values = q, counts, np.asarray(pi, dtype=float), np.asarray(values, float)
        self.level, self.calibrated = level, calibrated
        self.cumulative = np.cumsum(self.pi)
        # Where the search starts: F̂ ± z·SD of F over the bootstrap's surveys (a Woodruff interval), when there are
        # surveys; it decides nothing (the profile bounds do), but an end found at the first or second value read
        # costs two bounds, not the eight or ten of a search from the estimate's own quantile.
        self._guides = None
        if calibrated is not None:
            spread = np.std(np.cumsum(calibrated.surveys.fits, axis=1), axis=0, ddof=1)
            z = distributions.norm_isf((1 - level) / 2)
            self._guides = {1.0: self.cumulative + z * spread, -1.0: self.cumulative - z * spread}
        self._bounds: dict = {}
        self.probes = 0

    def bound(self, index: int, side: float) -> float:
        """The lower (``side`` −1) or upper (+1) end of the interval of F(values[index])."""
        key = (index, side)
        if key not in self._bounds:
            if index >= len(self.pi) - 1:  # F of the greatest value is 1 under every distribution
                self._bounds[key] = 1.0
            else:
                functional = np.zeros(len(self.pi))
                functional[:index + 1] = 1.0
                self._bounds[key] = calibration.end(self.q, self.counts, self.pi, functional, self.level,
                                                    self.calibrated, side)
                self.probes += 1
        return self._bounds[key]

    def _least_reaching(self, probability: float, side: float, floor: int, ceiling: int, guess: int) -> int:
        """The least index in [``floor``, ``ceiling``] whose ``side`` bound of F reaches ``probability``, known to
        be reached at ``ceiling``. The bound rises with the index, so the bracket (low: not reached, high: reached)
        only narrows: its first value read is ``guess``, the next where the line through the bracket's two bounds
        crosses ``probability`` (regula falsi on the bounds read), halving whenever the same end moved twice running:
        4.5 bounds an end on four grids of 61 to 201 values, where halving read 5.7."""
        low, high = floor - 1, ceiling
        low_bound = high_bound = None
        middle = guess if low < guess < high else (low + high) // 2
        moved = []  # which end each read moved: the same end twice running halves next (the Illinois safeguard)
        while high - low > 1:
            value = self.bound(middle, side)
            if value >= probability - 1e-12:
                high, high_bound = middle, value
                moved.append("high")
            else:
                low, low_bound = middle, value
                moved.append("low")
            middle = (low + high) // 2
            stuck = len(moved) >= 2 and moved[-1] == moved[-2]
            if not stuck and low_bound is not None and high_bound is not None and high_bound > low_bound:
                crossing = low + (probability - low_bound) / (high_bound - low_bound) * (high - low)
                # Just inside the crossing on the side the bracket should shrink from, so one read may settle it.
                middle = min(max(int(math.ceil(crossing)) if side > 0 else int(math.floor(crossing)) + 1, low + 1),
                             high - 1) if high - low > 2 else low + 1
        return high

    def quantile(self, probability: float, floors: tuple[int, int] = (0, 0)) -> tuple[float, float, float]:
        """(estimate, interval's low, high) of the ``probability`` quantile; ``floors``: indices its ends cannot be
        below (a lower quantile's ends)."""
        at = quantile_index(self.cumulative, probability)
        last = len(self.pi) - 1

        def guess(side):
            if self._guides is None:
                return at
            return min(quantile_index(np.maximum.accumulate(self._guides[side]), probability), last)

        # F̂(at) ≥ p, so the upper bound reaches p at the estimate; the lower bound reaches it at the last value.
        low = self._least_reaching(probability, 1.0, min(floors[0], at), at, guess(1.0))
        high = self._least_reaching(probability, -1.0, max(floors[1], at), last, guess(-1.0))
        self._found = (low, high)
        return float(self.values[at]), float(self.values[low]), float(self.values[high])

    def table(self, probabilities=PROBABILITIES) -> pd.DataFrame:
        """A row per probability, in increasing order: each quantile's ends are at or above the one before's."""
        probabilities = sorted(probabilities)
        rows, floors = [], (0, 0)
        for p in probabilities:
            rows.append(self.quantile(p, floors))
            floors = self._found
        return pd.DataFrame(rows, columns=["estimate", "ci_low", "ci_high"],
                            index=pd.Index(probabilities, name="quantile"))
