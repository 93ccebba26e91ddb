"""Privacy mechanisms as exact channels.

A mechanism is the column-stochastic matrix ``Q[r][a] = P(report r | true answer a)`` with
`Fraction` entries, plus a sampler that draws a report from column ``a`` with a
cryptographically secure integer source. ε is computed from the matrix:
``ε = max_r max_{a,a'} ln(Q[r][a] / Q[r][a'])``; the exact worst-case ratio is kept as
``exp_epsilon`` so both clients and the analysis can compare it without rounding.

Three shapes cover every design:

* `ChannelMechanism`: a finite matrix written out (yes/no designs, k-ary RR, ordinal RR).
* `UnaryMechanism`: one independent 2×2 channel per option of a multi-select question.
* `LaplaceMechanism` (in `laplace`): discrete Laplace noise on a bounded numeric grid, tails folded.

`designs.build` makes one from a question's spec; `randomness` says what a source of randomness is.
"""

from __future__ import annotations

import bisect
import itertools
import math
from fractions import Fraction
from functools import cached_property

from .exact import epsilon_of
from .randomness import WORD, WordPool, bernoulli, default_source

YES_NO = ("yes", "no")

#: Cap on the size of a numeric grid (answers); the report alphabet is three times as large.
MAX_GRID_POINTS = 10_001
#: Cap on multi-select options: the answer alphabet has 2**options subsets.
MAX_MULTI_SELECT_OPTIONS = 16


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


class Mechanism:
    """What every mechanism offers; subclasses supply the channel and the sampler."""

    design: str
    params: dict
    #: True for designs in which the respondent randomizes (crosswise, triangular, a natural
    #: randomizer): the page takes what the respondent chose, already a report, and never sees the
    #: true answer. The channel is the same kind of object; `randomize` then simulates a respondent.
    respondent_randomizes: bool = False
    #: A panel's memoized composite (`panels.memoized`) keeps what it was built from: the permanent mechanism
    #: and the instantaneous layer. Not set on any other mechanism.
    permanent: Mechanism
    instant: object

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
        checked: dict = {}
        canonical = []
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

    def answer_position(self, answer) -> int:
        """Where ``answer`` sits in the answer alphabet (what a panel memo keys a permanent report on)."""
        canonical = self.validate_answer(answer)
        return next(i for i, a in enumerate(self.answers) if a == canonical)

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
        self._report_index = {self._report_key(r): i for i, r in enumerate(self._reports)}
        self._samplers: dict = {}

    @staticmethod
    def _report_key(report):
        """How a report is looked up (a report carrying a group marker is a mapping: its key is a tuple)."""
        return report

    @property
    def answers(self):
        return list(self._answers)

    @property
    def reports(self):
        return list(self._reports)

    def probability(self, report, answer) -> Fraction:
        a = self._answer_index[self.validate_answer(answer)]
        r = self._report_index[self._report_key(self.validate_report(report))]
        return self._columns[a][r]

    def answer_position(self, answer) -> int:
        return self._answer_index[self.validate_answer(answer)]

    def columns(self) -> list[list[Fraction]]:
        """``P(· | a)`` for each answer a, in answer order: the channel by columns."""
        return [list(column) for column in self._columns]

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
        rng = rng or default_source()
        denominator, thresholds = self._sampler(self._answer_index[self.validate_answer(answer)])
        draw = rng.randbelow(denominator)
        return self._reports[bisect.bisect_right(thresholds, draw)]

    def _draw_many(self, canonical, words):
        samplers = {}
        for answer in canonical:
            if answer not in samplers:
                samplers[answer] = self._sampler(self._answer_index[answer])
        if any(denominator > WORD for denominator, _ in samplers.values()):
            return None
        below, reports, right = words.below, self._reports, bisect.bisect_right
        return [reports[right(thresholds, below(denominator))]
                for denominator, thresholds in map(samplers.__getitem__, canonical)]


def symmetric_index(draw: int, position: int, keep: int, other: int) -> int:
    """The report index an integer draw gives in k-ary randomized response: the draw's range is laid out as
    ``other`` for each index before ``position``, ``keep`` for ``position``, ``other`` for each after it (the
    thresholds the written-out column would give, so shared vectors agree)."""
    before = position * other
    if draw < before:
        return draw // other
    if draw < before + keep:
        return position
    return position + 1 + (draw - before - keep) // other


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

    def validate_answer(self, answer):
        """As every mechanism checks an answer, by one lookup where the base class scans the k answers."""
        try:
            known = answer in self._answer_index
        except TypeError:  # unhashable (a list): not an option
            known = False
        return answer if known and not isinstance(answer, bool) else super().validate_answer(answer)

    def _draw_many(self, canonical, words):
        if self._denominator > WORD:
            return None
        limit, keep, other = self._denominator, self._keep_width, self._other_width
        below, index, reports = words.below, self._answer_index, self._reports
        return [reports[symmetric_index(below(limit), index[answer], keep, other)] for answer in canonical]

    def randomize(self, answer, rng=None):
        rng = rng or default_source()
        # An option's own name is found by one lookup; anything else (a bool, a number, a wrong name) is judged by
        # `validate_answer`, which names what is wrong.
        a = self._answer_index.get(answer) if type(answer) is str else None
        if a is None:
            a = self._answer_index[self.validate_answer(answer)]
        draw = rng.randbelow(self._denominator)
        return self._reports[symmetric_index(draw, a, self._keep_width, self._other_width)]


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

    def answer_position(self, answer) -> int:
        """The bitmask of the selected options (option i is bit i)."""
        return sum(bit << i for i, bit in enumerate(self._bits(answer, "answer")))

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

    @cached_property
    def _thresholds(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(numerator, denominator) of P(reported | bit 0) and of P(reported | bit 1), as integers."""
        return ((self.flip_zero.numerator, self.flip_zero.denominator),
                (self.keep_one.numerator, self.keep_one.denominator))

    def randomize(self, answer, rng=None):
        return self._draw(self._bits(answer, "answer"), rng or default_source())

    def _draw(self, bits, source) -> list:
        thresholds = self._thresholds
        return [option for option, bit in zip(self.options, bits) if bernoulli(*thresholds[bit], source)]

    def _draw_many(self, canonical, words):
        selected: dict = {}
        out = []
        for answer in canonical:
            key = tuple(answer)
            if key not in selected:
                selected[key] = [int(o in answer) for o in self.options]
            out.append(self._draw(selected[key], words))
        return out
