"""Privacy mechanisms as exact channels.

A mechanism is the column-stochastic matrix ``Q[r][a] = P(report r | true answer a)`` with
`Fraction` entries, plus a sampler that draws a report from column ``a`` with a
cryptographically secure integer source. ε is computed from the matrix:
``ε = max_r max_{a,a'} ln(Q[r][a] / Q[r][a'])``; the exact worst-case ratio is kept as
``exp_epsilon`` so both clients and the analysis can compare it without rounding.

Three shapes cover every design:

* `ChannelMechanism`: a finite matrix written out (yes/no designs, k-ary RR, ordinal RR).
* `UnaryMechanism`: one independent 2×2 channel per option of a multi-select question.
* `LaplaceMechanism`: discrete Laplace noise on a bounded numeric grid, tails folded.

A randomness source is anything with ``randbelow(n) -> int`` uniform on ``range(n)``;
the default is the `secrets` module. Tests may inject a seeded one; real use must not.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import math
import os
import secrets
from array import array
from fractions import Fraction
from functools import cached_property

from .exact import EpsilonRequest, epsilon_of, integer_root, json_number, parse_fraction
from .privacy import MIN_EPSILON

YES_NO = ("yes", "no")

#: Cap on the size of a numeric grid (answers); the report alphabet is three times as large.
MAX_GRID_POINTS = 1001
#: Cap on multi-select options: the answer alphabet has 2**options subsets.
MAX_MULTI_SELECT_OPTIONS = 16
#: Resolution of the searched base of the ordinal design's exponential weights.
ORDINAL_BASE_BITS = 20


def _worst_ratio(rows) -> Fraction | None:
    """max over rows of max/min entry; None (unbounded) when a row mixes zero and non-zero."""
    worst = Fraction(1)
    for row in rows:
        high, low = max(row), min(row)
        if high == 0:
            continue
        if low == 0:
            return None
        worst = max(worst, high / low)
    return worst


_WORD = 1 << 32


class WordPool:
    """A `secrets`-grade source (``randbelow``) that reads the operating system's randomness in blocks of
    ``words`` 32-bit words rather than once per draw: what `randomize_many` amortises. Rejection sampling
    as `secrets.randbelow` does, so each draw is exactly uniform."""

    def __init__(self, words: int = 4096):
        self._size = max(64, words)
        self._words = array("I")
        self._next = 0
        assert self._words.itemsize == 4

    def word(self) -> int:
        if self._next == len(self._words):
            self._words = array("I", os.urandom(4 * self._size))
            self._next = 0
        word = self._words[self._next]
        self._next += 1
        return word

    def below(self, limit: int) -> int:
        """A uniform int in [0, limit) for 1 ≤ limit ≤ 2^32, from one word (rarely more: rejection)."""
        ceiling = _WORD - _WORD % limit
        word = self.word()
        while word >= ceiling:
            word = self.word()
        return word % limit

    def randbelow(self, n: int) -> int:
        if n <= 0:
            raise ValueError("randbelow needs n > 0")
        if n <= _WORD:
            return self.below(n)
        words = (max(n - 1, 1).bit_length() + 31) // 32
        excess = 32 * words - max(n - 1, 1).bit_length()
        while True:
            value = 0
            for _ in range(words):
                value = value << 32 | self.word()
            value >>= excess
            if value < n:
                return value


class Mechanism:
    """What every mechanism offers; subclasses supply the channel and the sampler."""

    design: str
    params: dict

    @property
    def answers(self) -> list:
        """The input alphabet, as JSON values."""
        raise NotImplementedError

    @property
    def reports(self) -> list:
        """The output alphabet, as JSON values."""
        raise NotImplementedError

    def probability(self, report, answer) -> Fraction:
        """Exact P(report | answer)."""
        raise NotImplementedError

    def randomize(self, answer, rng=None):
        """Draw a report for ``answer`` (default source: `secrets`)."""
        raise NotImplementedError

    def randomize_many(self, answers, rng=None) -> list:
        """Reports for many answers, in order: the same distribution as `randomize` one by one, with the
        operating system's randomness read in large blocks (and, for channels whose denominators fit in 32 bits,
        one word per draw in a tight loop). Every answer is checked before any is drawn: a ValueError names the first
        bad one and its position. ``rng``: a source with ``randbelow`` (tests), used answer by answer."""
        canonical = self._validate_many(answers)
        if rng is None:
            drawn = self._draw_many(canonical, WordPool(len(canonical) + 64))
            if drawn is not None:
                return drawn
        source = rng or WordPool()
        return [self.randomize(answer, source) for answer in canonical]

    def _draw_many(self, canonical: list, words: "WordPool") -> list | None:
        """Reports for validated answers in a tight loop over 32-bit words, where the channel allows it
        (None: draw answer by answer)."""
        return None

    def _validate_many(self, answers) -> list:
        checked, canonical = {}, []
        for position, answer in enumerate(answers):
            try:
                key = (type(answer), answer) if not isinstance(answer, list) else None
                if key is not None and key in checked:
                    canonical.append(checked[key])
                    continue
                value = self.validate_answer(answer)
            except ValueError as error:
                raise ValueError(f"answers[{position}]: {error}") from None
            if key is not None:
                checked[key] = value
            canonical.append(value)
        return canonical

    def channel(self) -> list[list[Fraction]]:
        """The full matrix ``Q[r][a]`` in the order of `reports` and `answers`."""
        answers = self.answers
        return [[self.probability(r, a) for a in answers] for r in self.reports]

    @cached_property
    def exp_epsilon(self) -> Fraction | None:
        """Exact e^ε: the largest ratio P(r|a)/P(r|a') over the channel; None when unbounded."""
        return _worst_ratio(self.channel())

    @property
    def epsilon(self) -> float:
        """ε = ln(exp_epsilon), computed from the channel, never copied from the spec."""
        return epsilon_of(self.exp_epsilon)

    @property
    def is_private(self) -> bool:
        return self.exp_epsilon is not None

    def same_channel(self, other: "Mechanism") -> bool:
        """True when ``other`` has the same answers, reports and exact probabilities (so reports of
        the two can be counted together). Subclasses compare the few numbers that fix their matrix."""
        return (type(self) is type(other) and self.answers == other.answers and self.reports == other.reports
                and self._channel_key() == other._channel_key())

    def _channel_key(self):
        return self.channel()

    def validate_answer(self, answer):
        """The canonical form of ``answer``; ValueError when it is not in the input alphabet."""
        if answer in self.answers and not isinstance(answer, bool):
            return answer
        raise ValueError(f"answer {answer!r} is not one of {self.answers!r}")

    def validate_report(self, report):
        """The canonical form of ``report``; ValueError when it is outside the output alphabet."""
        if report in self.reports and not isinstance(report, bool):
            return report
        raise ValueError(f"report {report!r} is not one of {self.reports!r}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.design} ε={self.epsilon:.6g}>"


class ChannelMechanism(Mechanism):
    """A finite channel given column by column: ``columns[a][r] = P(reports[r] | answers[a])``."""

    def __init__(self, design: str, params: dict, answers, reports, columns):
        self.design = design
        self.params = params
        self._answers = list(answers)
        self._reports = list(reports)
        self._columns = [list(map(Fraction, column)) for column in columns]
        for answer, column in zip(self._answers, self._columns):
            if len(column) != len(self._reports) or sum(column) != 1 or min(column) < 0:
                raise ValueError(f"column for answer {answer!r} is not a probability distribution")
        self._answer_index = {a: i for i, a in enumerate(self._answers)}
        self._report_index = {r: i for i, r in enumerate(self._reports)}
        self._samplers = {}

    @property
    def answers(self):
        return list(self._answers)

    @property
    def reports(self):
        return list(self._reports)

    def probability(self, report, answer) -> Fraction:
        a = self._answer_index[self.validate_answer(answer)]
        r = self._report_index[self.validate_report(report)]
        return self._columns[a][r]

    def channel(self):
        columns = self._columns  # a property in subclasses: build it once, not once per row
        return [[column[r] for column in columns] for r in range(len(self._reports))]

    def _sampler(self, a: int):
        # Integer thresholds over the column's common denominator: no float in sampling.
        if a not in self._samplers:
            column = self._columns[a]
            denominator = math.lcm(*(p.denominator for p in column))
            thresholds = list(itertools.accumulate(p.numerator * (denominator // p.denominator) for p in column))
            self._samplers[a] = (denominator, thresholds)
        return self._samplers[a]

    def randomize(self, answer, rng=None):
        rng = rng or secrets
        denominator, thresholds = self._sampler(self._answer_index[self.validate_answer(answer)])
        draw = rng.randbelow(denominator)
        return self._reports[bisect.bisect_right(thresholds, draw)]

    def _draw_many(self, canonical, words):
        samplers = {}
        for answer in canonical:
            if answer not in samplers:
                samplers[answer] = self._sampler(self._answer_index[answer])
        if any(denominator > _WORD for denominator, _ in samplers.values()):
            return None
        below, reports, right = words.below, self._reports, bisect.bisect_right
        return [reports[right(thresholds, below(denominator))]
                for denominator, thresholds in map(samplers.__getitem__, canonical)]


class SymmetricMechanism(ChannelMechanism):
    """A k×k channel that keeps the answer with probability ``keep`` and sends each other
    option with ``other`` (k-ary RR; the identity of a public choice). Held as those two
    numbers, not k² entries, so building, validating and bounding ε cost O(k) at any size;
    `channel()` still writes the whole matrix for whoever asks."""

    def __init__(self, design: str, params: dict, options, keep: Fraction, other: Fraction):
        self.design = design
        self.params = params
        self._answers = self._reports = list(options)
        self.keep, self.other = Fraction(keep), Fraction(other)
        if self.keep < 0 or self.other < 0 or self.keep + (len(self._answers) - 1) * self.other != 1:
            raise ValueError("keep + (k − 1)·other must be 1")
        self._answer_index = self._report_index = {a: i for i, a in enumerate(self._answers)}
        # One integer range for every answer: [other]*a, keep, [other]*(k−1−a) in report order,
        # the same thresholds the written-out column would give (so shared vectors still agree).
        self._denominator = math.lcm(self.keep.denominator, self.other.denominator)
        self._keep_width = self.keep.numerator * (self._denominator // self.keep.denominator)
        self._other_width = self.other.numerator * (self._denominator // self.other.denominator)

    def _channel_key(self):
        return self.keep, self.other

    @property
    def _columns(self):
        k = len(self._answers)
        return [[self.keep if r == a else self.other for r in range(k)] for a in range(k)]

    def probability(self, report, answer) -> Fraction:
        a = self._answer_index[self.validate_answer(answer)]
        r = self._report_index[self.validate_report(report)]
        return self.keep if r == a else self.other

    @cached_property
    def exp_epsilon(self):
        if len(self._answers) == 1:
            return Fraction(1)
        high, low = max(self.keep, self.other), min(self.keep, self.other)
        return None if low == 0 else high / low

    def _draw_many(self, canonical, words):
        if self._denominator > _WORD:
            return None
        limit, keep, other = self._denominator, self._keep_width, self._other_width
        below, index, reports, out = words.below, self._answer_index, self._reports, []
        for answer in canonical:
            draw, a = below(limit), index[answer]
            before = a * other
            if draw < before:
                out.append(reports[draw // other])
            elif draw < before + keep:
                out.append(reports[a])
            else:
                out.append(reports[a + 1 + (draw - before - keep) // other])
        return out

    def randomize(self, answer, rng=None):
        rng = rng or secrets
        a = self._answer_index[self.validate_answer(answer)]
        draw = rng.randbelow(self._denominator)
        before = a * self._other_width
        if draw < before:
            return self._reports[draw // self._other_width]
        if draw < before + self._keep_width:
            return self._reports[a]
        return self._reports[a + 1 + (draw - before - self._keep_width) // self._other_width]


class OrdinalMechanism(ChannelMechanism):
    """The exponential mechanism on a scale, ``P(r | a) = w^|r−a| / Z_a``, held as integer
    weights ``W_d = n^d · m^(k−1−d)`` for ``w = n/m`` and the column totals ``Z_a``: O(k) to
    build, not k² fractions. Moving a away from r lowers ``P(r | a)`` (the step ratio is
    ``w·Z_a / Z_(a±1)`` < 1 whenever w < 1), so each row's extremes are at a = r and at an end
    of the scale, and the worst row is an end one: e^ε = w^−(k−1) exactly. Tests compare that
    with the enumerated matrix."""

    def __init__(self, design: str, params: dict, options, base: Fraction):
        self.design = design
        self.params = params
        self._answers = self._reports = list(options)
        self.base = Fraction(base)
        if not 0 < self.base <= 1:
            raise ValueError("the base of the ordinal design must be in (0, 1]")
        self._answer_index = self._report_index = {a: i for i, a in enumerate(self._answers)}
        self._samplers = {}

    def _channel_key(self):
        return self.base

    # Weights and totals are big integers (k·20 bits each): made when first needed, so checking
    # a spec (which needs only ε) never pays for them.
    @cached_property
    def _weights(self) -> list[int]:
        k, n, m = len(self._answers), self.base.numerator, self.base.denominator
        return [n**d * m ** (k - 1 - d) for d in range(k)]

    @cached_property
    def _totals(self) -> list[int]:
        k, weights = len(self._answers), self._weights
        running = list(itertools.accumulate(weights))  # running[i] = W_0 + … + W_i
        return [running[a] + running[k - 1 - a] - weights[0] for a in range(k)]

    @property
    def _columns(self):
        k = len(self._answers)
        return [[Fraction(self._weights[abs(r - a)], self._totals[a]) for r in range(k)] for a in range(k)]

    def probability(self, report, answer) -> Fraction:
        a = self._answer_index[self.validate_answer(answer)]
        r = self._report_index[self.validate_report(report)]
        return Fraction(self._weights[abs(r - a)], self._totals[a])

    @cached_property
    def exp_epsilon(self):
        return (1 / self.base) ** (len(self._answers) - 1)

    def _sampler(self, a: int):
        # The reduced column's common denominator, as the written-out column would give it.
        if a not in self._samplers:
            weights = [self._weights[abs(r - a)] for r in range(len(self._answers))]
            common = math.gcd(self._totals[a], *weights)
            self._samplers[a] = (self._totals[a] // common, list(itertools.accumulate(w // common for w in weights)))
        return self._samplers[a]


class UnaryMechanism(Mechanism):
    """Multi-select: each option is a bit sent through its own 2×2 channel, independently.

    ``keep_one = P(bit reported 1 | bit 1)`` and ``flip_zero = P(bit reported 1 | bit 0)``.
    Answers and reports are lists of the selected options, in option order. Because the bits
    are independent and each may change between two answers, e^ε of the whole channel is the
    product of the per-bit worst ratios; `exp_epsilon` computes it so (enumerating 2^m × 2^m
    entries would be the same number, and tests check that for small m).
    """

    def __init__(self, design: str, params: dict, options, keep_one: Fraction, flip_zero: Fraction):
        self.design = design
        self.params = params
        self.options = list(options)
        self.keep_one = Fraction(keep_one)
        self.flip_zero = Fraction(flip_zero)

    def _channel_key(self):
        return self.keep_one, self.flip_zero

    def bit_channel(self) -> list[list[Fraction]]:
        """``[[P(0|0), P(0|1)], [P(1|0), P(1|1)]]`` shared by every option."""
        return [[1 - self.flip_zero, 1 - self.keep_one], [self.flip_zero, self.keep_one]]

    def _subsets(self):
        for mask in range(2 ** len(self.options)):
            yield [o for i, o in enumerate(self.options) if mask >> i & 1]

    @property
    def answers(self):
        return list(self._subsets())

    @property
    def reports(self):
        return list(self._subsets())

    def _bits(self, selection, what: str) -> list[int]:
        if not isinstance(selection, (list, tuple)):
            raise ValueError(f"{what} must be a list of options, got {selection!r}")
        chosen = set()
        for item in selection:
            if not isinstance(item, str) or item not in self.options:
                raise ValueError(f"{what} {item!r} is not one of the options {self.options!r}")
            if item in chosen:
                raise ValueError(f"{what} lists {item!r} twice")
            chosen.add(item)
        return [int(o in chosen) for o in self.options]

    def validate_answer(self, answer):
        bits = self._bits(answer, "answer")
        return [o for o, b in zip(self.options, bits) if b]

    def validate_report(self, report):
        bits = self._bits(report, "report")
        return [o for o, b in zip(self.options, bits) if b]

    def probability(self, report, answer) -> Fraction:
        bit_channel = self.bit_channel()
        result = Fraction(1)
        for r, a in zip(self._bits(report, "report"), self._bits(answer, "answer")):
            result *= bit_channel[r][a]
        return result

    @cached_property
    def exp_epsilon(self):
        per_bit = _worst_ratio(self.bit_channel())
        return None if per_bit is None else per_bit ** len(self.options)

    def randomize(self, answer, rng=None):
        rng = rng or secrets
        report = []
        for option, bit in zip(self.options, self._bits(answer, "answer")):
            p_one = self.keep_one if bit else self.flip_zero
            if rng.randbelow(p_one.denominator) < p_one.numerator:
                report.append(option)
        return report


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

    #: How far (relative) a float estimate must sit from a threshold to decide; 1000 times its error
    #: bound at the smallest 1 − α a spec allows. Tests set it huge to take the exact path every time.
    _float_margin = 1e-6

    def randomize(self, answer, rng=None):
        index = self.answer_index(answer)
        if self.alpha is None:
            return self._value(index)
        rng = rng or secrets
        low, high = self.report_range
        draw = rng.randbelow(1 << 65)  # one read: 64 bits of U and the sign
        magnitude = self._magnitude(rng, draw >> 1)
        noisy = index - magnitude if draw & 1 else index + magnitude
        return self._value(min(max(noisy, low), high))

    @cached_property
    def _logs(self) -> tuple[float, float]:
        gap = float(1 - self.alpha)
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

    def _exact_magnitude(self, rng, prefix: int, guess: int, cap: int) -> int:
        a, b = self.alpha.numerator, self.alpha.denominator
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


# --- designs: each builds one of the shapes above from spec parameters -------------------------

def _probability(params: dict, name: str, where: str) -> Fraction:
    if name not in params:
        raise ValueError(f"{where}.{name}: missing")
    value = parse_fraction(params[name], f"{where}.{name}")
    if not 0 <= value <= 1:
        raise ValueError(f"{where}.{name}: must be between 0 and 1, got {params[name]!r}")
    return value


def _binary(design, params, yes_given_yes: Fraction, yes_given_no: Fraction):
    if yes_given_yes == yes_given_no:
        raise ValueError(f"privacy: this {design} design sends the same report whatever the answer; "
                         "nothing about the population could be estimated")
    columns = [[yes_given_yes, 1 - yes_given_yes], [yes_given_no, 1 - yes_given_no]]
    return ChannelMechanism(design, params, YES_NO, YES_NO, columns)


def forced_response(params: dict, where: str):
    """With probability ``truth`` report the true answer, else report ``yes`` or ``no`` as forced.

    Default: the coin-flip design (truth 1/2, yes 1/4, no 1/4), P(yes|yes) = 3/4,
    P(yes|no) = 1/4, ε = ln 3.
    """
    truth, yes, no = (_probability(params, n, where) for n in ("truth", "yes", "no"))
    if truth + yes + no != 1:
        raise ValueError(f"{where}: truth + yes + no must be 1, got {truth} + {yes} + {no} = {truth + yes + no}")
    if truth == 0:
        raise ValueError(f"{where}.truth: must be greater than 0, or the report carries no information")
    normalized = {"design": "forced_response", "truth": str(truth), "yes": str(yes), "no": str(no)}
    return _binary("forced_response", normalized, truth + yes, yes)


def warner(params: dict, where: str):
    """Warner (1965): with probability ``p`` answer "Is the statement true of you?", else its negation."""
    p = _probability(params, "p", where)
    if p == Fraction(1, 2):
        raise ValueError(f"{where}.p: 1/2 makes the report independent of the answer; choose p ≠ 1/2")
    return _binary("warner", {"design": "warner", "p": str(p)}, p, 1 - p)


def unrelated_question(params: dict, where: str):
    """With probability ``p`` answer the sensitive question, else an innocuous one whose "yes"
    prevalence ``innocuous_yes`` is known (e.g. "Were you born in April?")."""
    p = _probability(params, "p", where)
    innocuous = _probability(params, "innocuous_yes", where)
    if p == 0:
        raise ValueError(f"{where}.p: must be greater than 0, or the report carries no information")
    normalized = {"design": "unrelated_question", "p": str(p), "innocuous_yes": str(innocuous)}
    return _binary("unrelated_question", normalized, p + (1 - p) * innocuous, (1 - p) * innocuous)


def _exp_bound(request: EpsilonRequest, where: str, divisor: int = 1) -> Fraction:
    bound = request.exp_lower_bound(divisor)
    if bound <= 1:
        raise ValueError(f"{where}.epsilon: too small to give this question any signal ({divisor} part(s) of "
                         f"{float(request):.3g} each round to no information); choose a larger epsilon")
    return bound


def _epsilon_or(params: dict, where: str, alternative: str | None = None) -> EpsilonRequest | None:
    if "epsilon" in params and alternative and alternative in params:
        raise ValueError(f"{where}: give either epsilon or {alternative}, not both")
    if "epsilon" in params:
        return EpsilonRequest.parse(params["epsilon"], f"{where}.epsilon")
    if alternative and alternative in params:
        return None
    wanted = "epsilon" + (f" or {alternative}" if alternative else "")
    raise ValueError(f"{where}: {wanted} is required")


def k_rr(params: dict, where: str, options):
    """Generalized (k-ary) randomized response: the true option with probability ``p_truth``,
    each other option with (1 − p_truth)/(k − 1). Given ``epsilon``, p_truth = L/(L + k − 1)
    with the largest grid rational L ≤ e^ε."""
    k = len(options)
    request = _epsilon_or(params, where, "p_truth")
    if request is not None:
        bound = _exp_bound(request, where)
        p_truth = bound / (bound + k - 1)
        normalized = {"design": "k_rr", "epsilon": request.canonical()}
    else:
        p_truth = _probability(params, "p_truth", where)
        if p_truth <= Fraction(1, k):
            raise ValueError(f"{where}.p_truth: must exceed 1/{k} (one over the number of options), got {params['p_truth']!r}")
        normalized = {"design": "k_rr", "p_truth": str(p_truth)}
    return SymmetricMechanism("k_rr", normalized, options, p_truth, (1 - p_truth) / (k - 1))


def ordinal(params: dict, where: str, options):
    """Ordinal randomized response for Likert scales: the exponential mechanism with utility
    −|i − j|, P(j | i) ∝ w^|i−j|. Reports near the truth are likelier. Given ``epsilon``, the
    base w = n/2^20 is the smallest on that grid whose exact channel has e^ε ≤ L ≤ e^ε
    (w^−(k−1) ≤ L solved for n in integers, see `OrdinalMechanism`; the textbook w = e^(−ε/2Δ)
    spends less of the budget than allowed)."""
    request = _epsilon_or(params, where)
    bound = _exp_bound(request, where)
    degree, scale = len(options) - 1, 2**ORDINAL_BASE_BITS
    # the smallest n with n^(k−1) · L ≥ scale^(k−1), L = bound as a fraction
    target = -(-(scale**degree * bound.denominator) // bound.numerator)
    root = integer_root(target, degree)
    n = root if root**degree >= target else root + 1
    normalized = {"design": "ordinal", "epsilon": request.canonical()}
    return OrdinalMechanism("ordinal", normalized, options, Fraction(n, scale))


def unary(params: dict, where: str, options):
    """Unary encoding for multi-select: each option's bit is randomized on its own, with ε/m per
    bit (m options; an answer may change every bit). ``variant: symmetric`` (default, basic
    RAPPOR) keeps each bit with L/(1 + L); ``variant: optimized`` (OUE) reports a 1 as 1 with
    probability 1/2 and a 0 as 1 with 1/(2L), which lowers the variance of rare options."""
    variant = params.get("variant", "symmetric")
    if variant not in ("symmetric", "optimized"):
        raise ValueError(f"{where}.variant: must be 'symmetric' or 'optimized', got {variant!r}")
    request = _epsilon_or(params, where)
    bound = _exp_bound(request, where, len(options))
    if variant == "symmetric":
        keep_one = bound / (1 + bound)
        flip_zero = 1 - keep_one
    else:
        keep_one, flip_zero = Fraction(1, 2), 1 / (2 * bound)
    normalized = {"design": "unary", "epsilon": request.canonical(), "variant": variant}
    return UnaryMechanism("unary", normalized, options, keep_one, flip_zero)


def laplace(params: dict, where: str, minimum, maximum, step):
    """Discrete Laplace on the grid; see `LaplaceMechanism`. α = 1/L, L ≤ e^(ε/N)."""
    request = _epsilon_or(params, where)
    points = int((maximum - minimum) / step)
    alpha = 1 / _exp_bound(request, where, points)
    normalized = {"design": "laplace", "epsilon": request.canonical()}
    return LaplaceMechanism("laplace", normalized, minimum, maximum, step, alpha)


def public(question_type: str, options=None, grid=None):
    """``privacy: none``: the answer is sent as is (ε = ∞)."""
    params = {"design": "none"}
    if question_type == "yes_no":
        return ChannelMechanism("none", params, YES_NO, YES_NO, [[1, 0], [0, 1]])
    if question_type in ("choice", "ordinal"):
        return SymmetricMechanism("none", params, options, Fraction(1), Fraction(0))
    if question_type == "multi_select":
        return UnaryMechanism("none", params, options, Fraction(1), Fraction(0))
    return LaplaceMechanism("none", params, *grid, alpha=None)


#: design name → (question types it serves, parameter names it accepts)
DESIGNS = {
    "forced_response": (("yes_no",), ("truth", "yes", "no")),
    "warner": (("yes_no",), ("p",)),
    "unrelated_question": (("yes_no",), ("p", "innocuous_yes")),
    "k_rr": (("yes_no", "choice", "ordinal"), ("epsilon", "p_truth")),
    "ordinal": (("ordinal",), ("epsilon",)),
    "unary": (("multi_select",), ("epsilon", "variant")),
    "laplace": (("number",), ("epsilon",)),
}

DEFAULT_PRIVACY = {"yes_no": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}


def build(question_type: str, privacy, where: str, options=None, grid=None) -> Mechanism:
    """The mechanism a question's ``privacy`` field asks for (raises ValueError naming the field)."""
    if privacy == "none":
        return public(question_type, options, grid)
    if not isinstance(privacy, dict):
        raise ValueError(f"{where}: expected 'none' or a mapping with a 'design', got {privacy!r}")
    design = privacy.get("design")
    if design is None:
        # Usually a misspelt key ("desgin:"): name it rather than the design it failed to give.
        others = sorted(set(privacy) - {"design"})
        close = difflib.get_close_matches("design", others, n=1, cutoff=0.75)
        hint = f"; is {close[0]!r} a misspelling of 'design'?" if close else \
            (f" (keys given: {', '.join(map(repr, others))})" if others else "")
        raise ValueError(f"{where}.design: missing{hint} Choose one of {', '.join(DESIGNS)} (or privacy: none)")
    if not isinstance(design, str) or design not in DESIGNS:
        raise ValueError(f"{where}.design: unknown design {design!r}; choose one of {', '.join(DESIGNS)} (or privacy: none)")
    types, accepted = DESIGNS[design]
    if question_type not in types:
        raise ValueError(f"{where}.design: {design} does not apply to {question_type} questions (it serves {', '.join(types)})")
    unknown = sorted(set(privacy) - {"design", *accepted})
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} for design {design} (accepted: {', '.join(accepted)})")
    if design == "forced_response":
        mechanism = forced_response(privacy, where)
    elif design == "warner":
        mechanism = warner(privacy, where)
    elif design == "unrelated_question":
        mechanism = unrelated_question(privacy, where)
    elif design == "k_rr":
        mechanism = k_rr(privacy, where, list(YES_NO) if question_type == "yes_no" else options)
    elif design == "ordinal":
        mechanism = ordinal(privacy, where, options)
    elif design == "unary":
        mechanism = unary(privacy, where, options)
    else:
        mechanism = laplace(privacy, where, *grid)
    # A requested ε is met from below (on a 2^-32 grid): 0.01 asked may come out a hair under 0.01.
    if mechanism.exp_epsilon is not None and mechanism.epsilon < MIN_EPSILON * (1 - 1e-3):
        raise ValueError(f"{where}: ε = {mechanism.epsilon:.3g} is so close to 0 that a report says next to nothing "
                         f"about the answer; estimates would need millions of respondents. Use ε ≥ {MIN_EPSILON} "
                         "(0.5 to 3 is usual)")
    return mechanism
