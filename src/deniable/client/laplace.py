"""Bounded numbers: discrete Laplace noise on a grid, sampled exactly (see `LaplaceMechanism`)."""

from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction
from functools import cached_property

from .exact import parse_fraction
from .json_text import json_number
from .mechanisms import Mechanism
from .randomness import default_source


class LaplaceMechanism(Mechanism):
    """Bounded numbers: discrete Laplace (two-sided geometric) noise on the ``step`` grid.

    The answer must lie in [min, max] (anything else is refused, never clamped: 99 for a 0-20
    question is a mistake, not a 20) and is snapped to the nearest grid point (index i of 0..N).
    Noise K has P(K = k) ∝ α^|k|; the report index i + K is clamped to the window
    −N..2N, i.e. values from ``min − range`` to ``max + range``, so the tails beyond are
    folded onto the two ends. A clamped, finite alphabet lets the server validate every
    report and gives the analysis an exact finite channel to invert; clamping is
    post-processing and cannot raise ε. With α = 1/L, L ≤ e^(ε/N), every ratio is at most
    α^-N ≤ e^ε.
    """

    def __init__(self, design: str, params: dict, minimum: Fraction, maximum: Fraction, step: Fraction,
                 alpha: Fraction | None):
        self.design = design
        self.params = params
        self.minimum, self.maximum, self.step = minimum, maximum, step
        self.points = int((maximum - minimum) / step)  # N
        self.alpha = alpha  # None: no noise (a public question)
        low, high = (-self.points, 2 * self.points) if alpha is not None else (0, self.points)
        self.report_range = (low, high)
        # Exact arithmetic costs more than drawing the noise: answers seen and values written are
        # remembered (a few per grid point at most, so a stream of odd answers cannot grow them).
        self._indexes: dict = {}
        self._values: dict = {}

    def _channel_key(self):
        return self.alpha

    def _value(self, index: int):
        value = self._values.get(index)
        if value is None:
            value = self._values[index] = json_number(self.minimum + index * self.step)
        return value

    @property
    def answers(self):
        return [self._value(i) for i in range(self.points + 1)]

    @property
    def reports(self):
        low, high = self.report_range
        return [self._value(i) for i in range(low, high + 1)]

    def answer_index(self, answer) -> int:
        """Snap to the nearest grid point (ties upward); ValueError outside [min, max]."""
        if isinstance(answer, bool) or not isinstance(answer, (int, float, str)):
            raise ValueError(f"answer must be a number, got {answer!r}")
        key = (type(answer), answer)  # 1 and 1.0 and "1" parse alike but are kept apart all the same
        index = self._indexes.get(key)
        if index is None:
            index = self._snap(answer)
            if len(self._indexes) < 4 * (self.points + 1):
                self._indexes[key] = index
        return index

    def _snap(self, answer) -> int:
        value = parse_fraction(answer, "answer")
        if not self.minimum <= value <= self.maximum:
            raise ValueError(f"answer {answer!r} is outside {json_number(self.minimum)} to {json_number(self.maximum)}")
        return math.floor((value - self.minimum) / self.step + Fraction(1, 2))

    def report_index(self, report) -> int:
        if isinstance(report, bool) or not isinstance(report, (int, float)):
            raise ValueError(f"report must be a number, got {report!r}")
        position = (parse_fraction(report, "report") - self.minimum) / self.step
        low, high = self.report_range
        if position.denominator != 1 or not low <= position <= high:
            raise ValueError(
                f"report {report!r} is not on the grid {self._value(low)}..{self._value(high)} step {json_number(self.step)}"
            )
        return int(position)

    def validate_answer(self, answer):
        return self._value(self.answer_index(answer))

    def answer_position(self, answer) -> int:
        return self.answer_index(answer)

    def validate_report(self, report):
        return self._value(self.report_index(report))

    def _index_probability(self, r: int, a: int) -> Fraction:
        if self.alpha is None:
            return Fraction(int(r == a))
        alpha, distance = self.alpha, abs(r - a)
        low, high = self.report_range
        if r in (low, high):  # a folded tail: Σ_{k ≥ d} c·α^k = α^d / (1 + α)
            return alpha**distance / (1 + alpha)
        return (1 - alpha) / (1 + alpha) * alpha**distance

    def probability(self, report, answer) -> Fraction:
        return self._index_probability(self.report_index(report), self.answer_index(answer))

    @cached_property
    def exp_epsilon(self):
        # P(r|a) ∝ α^|r − a| within each row (the folded tails too). A row at or beyond an end
        # of the grid has answers at distances d and d + N (N = points), an inner row a smaller
        # spread: the worst ratio is α^−N exactly. Tests compare it with the matrix enumerated.
        if self.alpha is None:
            return None if self.points > 0 else Fraction(1)
        return (1 / self.alpha) ** self.points

    @property
    def is_private(self) -> bool:
        return self.alpha is not None or self.points == 0

    @property
    def epsilon(self) -> float:
        """N·ln(1/α), rounded upward as `exact.epsilon_of` rounds, without raising α to the N-th power: the exact
        e^ε (`exp_epsilon`) of a 1001-point grid has thousands of digits, and building it for every number
        question made checking a large spec cost seconds. Tests compare the two routes."""
        if self.alpha is None:
            return math.inf if self.points > 0 else 0.0
        step = math.log1p(float(self.alpha.denominator - self.alpha.numerator) / self.alpha.numerator)  # ln(1/α)
        value = self.points * step
        for _ in range(4):  # log1p's and the product's rounding, then epsilon_of's two steps up
            value = math.nextafter(value, math.inf)
        return value

    #: How far (relative) a float estimate must sit from a threshold to decide; 1000 times its error
    #: bound at the smallest 1 − α a spec allows. Tests set it huge to take the exact path every time.
    _float_margin = 1e-6

    def randomize(self, answer, rng=None):
        index = self.answer_index(answer)
        if self.alpha is None:
            return self._value(index)
        rng = rng or default_source()
        low, high = self.report_range
        # U's first 64 bits, then (for a non-zero magnitude) one more word whose low bit is the sign: word for
        # word what the JS twin reads, so a panel memo's stream gives both clients the same report.
        magnitude = self._magnitude(rng, rng.randbelow(1 << 32) << 32 | rng.randbelow(1 << 32))
        noisy = index - magnitude if magnitude and rng.randbelow(1 << 32) & 1 else index + magnitude
        return self._value(min(max(noisy, low), high))

    def _draw_many(self, canonical: list, words) -> list | None:
        """`randomize` for every answer in one loop over one block of the pool's words (three per answer: U's first
        64 bits, then the sign of a non-zero magnitude). The magnitude is found by bisecting the thresholds'
        logarithms (`_log_thresholds`) where ln U sits clearly between two; within a hair of one, `_magnitude`
        decides as for a single draw (exact comparisons, reading more of the pool). The same distribution as
        `randomize`, not the same words: only single draws are the JS client's twin word for word."""
        if self.alpha is None:
            return None
        low, high = self.report_range
        fenced = self._log_thresholds  # −∞, the thresholds ascending, +∞: no bounds to check
        beyond, log = len(fenced) - 1, math.log
        below_by, above_by = _LOG_SLACK, _WIDEST_STEP + _LOG_SLACK
        indexes: dict = {}
        reported: dict = {}
        word = iter(words.take(3 * len(canonical))).__next__
        reports = []
        for answer in canonical:
            index = indexes.get(answer)
            if index is None:
                index = indexes[answer] = self.answer_index(answer)
            prefix = word() << 32 | word()
            sign = word()
            logarithm = log(prefix) if prefix >= _SMALLEST_BISECTED else 0.0
            above = bisect_right(fenced, logarithm)
            # ln(2^64·U) lies in [ln prefix, ln(prefix + 1)]: decided when no threshold falls within a hair of it
            if fenced[above - 1] < logarithm - below_by and fenced[above] > logarithm + above_by and logarithm:
                magnitude = beyond - above
            else:
                magnitude = self._magnitude(words, prefix)
            noisy = index - magnitude if sign & 1 else index + magnitude  # ±0 alike
            noisy = low if noisy < low else high if noisy > high else noisy
            value = reported.get(noisy)
            if value is None:
                value = reported[noisy] = self._value(noisy)
            reports.append(value)
        return reports

    @cached_property
    def _log_thresholds(self) -> list[float]:
        """ln(2^64·t(m)) for m = 2N down to 1, ascending, between −∞ and +∞: U < t(m) ⇔ ln(2^64·U) < ln(2^64·t(m)),
        so the magnitude (the largest m ≤ 2N with U < t(m)) is the number of thresholds above ln(2^64·U)."""
        log_alpha, log_half = self._logs
        return [-math.inf, *(_LOG_2_64 + m * log_alpha - log_half for m in range(2 * self.points, 0, -1)), math.inf]

    @cached_property
    def _logs(self) -> tuple[float, float]:
        gap = float(1 - self._noise)
        return math.log1p(-gap), math.log1p(-gap / 2)  # ln α, ln((1 + α)/2)

    def _magnitude(self, rng, prefix: int) -> int:
        """|K| for noise K with P(K = k) ∝ α^|k|, by inversion of one uniform U: P(|K| ≥ m) = t(m) =
        2α^m / (1 + α) for m ≥ 1, so |K| is the largest m with U < t(m) (capped at 2N: any larger
        magnitude clamps to the same report). A float estimate decides when U's first 64 bits (``prefix``) put it
        clearly between two thresholds; otherwise exact integer comparisons decide, reading more bits
        of U as needed. Constant cost at any range (the twin of deniable.js's _magnitude)."""
        cap = 2 * self.points  # U ∈ [prefix, prefix + 1) / 2^64
        if prefix:
            log_alpha, log_half = self._logs
            most = (math.log(prefix) - _LOG_2_64 + log_half) / log_alpha  # U < t(m) ⇔ m < x(U)
            least = (math.log(prefix + 1) - _LOG_2_64 + log_half) / log_alpha
            margin = self._float_margin * (1 + abs(most))
            if least - margin > cap:
                return cap
            first = math.ceil(most + margin) - 1
            if first == math.ceil(least - margin) - 1:
                return min(first, cap)
            return self._exact_magnitude(rng, prefix, min(max(first, 0), cap), cap)
        return self._exact_magnitude(rng, prefix, cap, cap)

    @property
    def _noise(self) -> Fraction:
        """α of a grid with noise (a public question's has none, and never draws)."""
        assert self.alpha is not None, "a public number draws no noise"
        return self.alpha

    def _exact_magnitude(self, rng, prefix: int, guess: int, cap: int) -> int:
        a, b = self._noise.numerator, self._noise.denominator
        bits, length = prefix, 64

        def below(m: int) -> bool:  # U < t(m) = 2a^m / (b^(m−1)(a + b)), with as many bits of U as it takes
            nonlocal bits, length
            if m == 0:
                return True
            numerator, denominator = 2 * a**m, b ** (m - 1) * (a + b)
            while True:
                if (bits + 1) * denominator <= numerator << length:
                    return True
                if bits * denominator >= numerator << length:
                    return False
                bits, length = bits << 32 | rng.randbelow(1 << 32), length + 32

        m = guess
        while m < cap and below(m + 1):
            m += 1
        while m > 0 and not below(m):
            m -= 1
        return m


_LOG_2_64 = 64 * math.log(2)
#: Below this U's first 64 bits say too little for the logarithms to bisect (probability 2^-24): `_magnitude`.
_SMALLEST_BISECTED = 1 << 40
#: ln(prefix + 1) − ln(prefix) at most, for a prefix from `_SMALLEST_BISECTED` up.
_WIDEST_STEP = 2.0**-40
#: How far ln(2^64·U) (28 to 45) must sit from a threshold's float to decide: far above the rounding of a log, of
#: m·ln α for m up to millions, and of the sums (each about 1e-14), so a decision by floats is always the exact one.
_LOG_SLACK = 1e-7
