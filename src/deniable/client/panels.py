"""Repeated surveys (panels): a permanent randomized report per true answer, re-randomized in every wave.

``repeated: true`` on a survey (or ``repeated: {instant_epsilon: 2}``) makes each private question two
layers, as RAPPOR does (Erlingsson et al. 2014):

* the **permanent** report: the question's own design, drawn once per true answer with randomness derived
  from the device's memo (`memo.Memo`), so every wave repeats it and averaging waves gains nothing. Over all
  waves together a respondent whose answer stays the same spends the design's ε once: ε∞. In a design in
  which the respondent randomizes, the respondent's own fixed fact (a birthday) is already permanent.
* the **instantaneous** layer: fresh randomness on the device re-randomizes the permanent report in each
  wave (`InstantLayer`), so a person's reports differ between waves and do not single them out.

What the server receives in one wave is the composite channel, instantaneous ∘ permanent, whose ε is ε₁
(≤ ε∞). `memoized` builds it as a mechanism of the same shape as the design's, so counting, estimation and
exports use it unchanged. A changed answer draws a new permanent report: two answers' reports, 2·ε∞ at
most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from .compliance import GroupedMechanism
from .exact import EpsilonRequest, epsilon_of
from .laplace import LaplaceMechanism
from .mechanisms import ChannelMechanism, Mechanism, SymmetricMechanism, UnaryMechanism, symmetric_index
from .randomness import bernoulli, default_source

#: Without ``instant_epsilon``, the instantaneous layer replaces the permanent report by a uniformly drawn
#: one (possibly itself) with this probability: one report keeps 90% of the design's signal, so its ε and
#: its variance stay near the design's (ε₁ = 0.97 for a coin design of ε = ln 3 ≈ 1.10).
DEFAULT_REFRESH = Fraction(1, 10)


@dataclass(frozen=True)
class Repeated:
    """A survey's ``repeated`` field: ``True``, or ``{instant_epsilon: ε}`` for the instantaneous layer's ε."""

    instant_epsilon: EpsilonRequest | None = None

    @classmethod
    def parse(cls, raw, where: str = "survey.repeated") -> "Repeated | None":
        if raw is None or raw is False:
            return None
        if raw is True:
            return cls()
        if isinstance(raw, dict) and set(raw) == {"instant_epsilon"}:
            return cls(EpsilonRequest.parse(raw["instant_epsilon"], f"{where}.instant_epsilon"))
        raise ValueError(f"{where}: true, or a mapping {{instant_epsilon: ε}} (the ε of the layer that re-randomizes "
                         f"the permanent report in each wave), got {raw!r}")

    def canonical(self):
        return True if self.instant_epsilon is None else {"instant_epsilon": self.instant_epsilon.canonical()}

    def layer(self, mechanism: Mechanism) -> "InstantLayer":
        """The instantaneous layer for ``mechanism``'s reports: k-ary randomized response within each block of
        reports that share their public part (a group), or a symmetric flip of each option's bit."""
        if isinstance(mechanism, UnaryMechanism):
            bits = len(mechanism.options)
            if self.instant_epsilon is None:
                keep = 1 - DEFAULT_REFRESH / 2
            else:
                ratio = self.instant_epsilon.exp_lower_bound(bits)  # e^ε of the whole report: the bits' product
                keep = ratio / (1 + ratio)
            return InstantLayer(keep, 1 - keep, 2, per_bit=True)
        size = len(mechanism.reports) // (len(mechanism.groups) if isinstance(mechanism, GroupedMechanism) else 1)
        if self.instant_epsilon is None:
            other = DEFAULT_REFRESH / size
            return InstantLayer(1 - DEFAULT_REFRESH + other, other, size)
        ratio = self.instant_epsilon.exp_lower_bound()
        return InstantLayer(ratio / (ratio + size - 1), 1 / (ratio + size - 1), size)


@dataclass(frozen=True)
class InstantLayer:
    """k-ary randomized response over a block of ``size`` reports: keep with ``keep``, each other with
    ``other`` (``per_bit``: over each bit of a multi-select report)."""

    keep: Fraction
    other: Fraction
    size: int
    per_bit: bool = False

    @property
    def exp_epsilon(self) -> Fraction:
        return self.keep / self.other

    def apply(self, mechanism: Mechanism, report, rng):
        """A fresh re-randomization of ``report`` (a permanent report, or what a respondent typed): each option's
        bit kept with ``keep`` (an exact Bernoulli draw), or k-ary randomized response within the report's block
        drawn as `SymmetricMechanism` draws."""
        if self.per_bit:
            chosen = set(report)
            kept = (self.keep.numerator, self.keep.denominator)
            assert isinstance(mechanism, UnaryMechanism)  # bit by bit: the options of a multi-select question
            return [option for option in mechanism.options if (option in chosen) == bernoulli(*kept, rng)]
        block = _block(mechanism, report)
        return block[self.redraw(next(i for i, r in enumerate(block) if r == report), rng)]

    def redraw(self, position: int, rng) -> int:
        """Where in its block the report at ``position`` goes: one draw below the common denominator of keep and
        other, laid out as `SymmetricMechanism` lays it out (`symmetric_index`)."""
        denominator = math.lcm(self.keep.denominator, self.other.denominator)
        keep = self.keep.numerator * (denominator // self.keep.denominator)
        other = self.other.numerator * (denominator // self.other.denominator)
        return symmetric_index(rng.randbelow(denominator), position, keep, other)

    def transform(self, probability: Fraction, block_mass: Fraction = Fraction(1)) -> Fraction:
        """P(r | a) after the layer, from P(r | a) before it and the mass of r's block under a."""
        return self.other * block_mass + (self.keep - self.other) * probability


def _block(mechanism: Mechanism, report) -> list:
    """The reports the instantaneous layer may turn ``report`` into: all of them, or those of its group."""
    if isinstance(mechanism, GroupedMechanism):
        return [r for r in mechanism.reports if r["group"] == report["group"]]
    return mechanism.reports


def memoized(mechanism: Mechanism, layer: InstantLayer) -> Mechanism:
    """The composite channel instantaneous ∘ permanent, as a mechanism of the permanent one's shape (so the
    analysis dispatches on it as before), with ``permanent`` and ``instant`` attached."""
    composite: Mechanism
    if isinstance(mechanism, UnaryMechanism):
        def bit(p):
            return layer.keep * p + layer.other * (1 - p)

        composite = UnaryMechanism(mechanism.design, mechanism.params, mechanism.options,
                                   bit(mechanism.keep_one), bit(mechanism.flip_zero))
    elif isinstance(mechanism, SymmetricMechanism):
        composite = SymmetricMechanism(mechanism.design, mechanism.params, mechanism.answers,
                                       layer.transform(mechanism.keep), layer.transform(mechanism.other))
    elif isinstance(mechanism, LaplaceMechanism):
        composite = MemoizedLaplace(mechanism, layer)
    elif isinstance(mechanism, GroupedMechanism):
        share = Fraction(1, len(mechanism.groups))  # each group's mass, whatever the answer

        def grouped(column):
            return [layer.transform(p, share) for p in column]

        columns = [grouped(column) for column in mechanism.columns()]
        classes = [(label, grouped(column)) for label, column in mechanism.latent_classes]
        composite = GroupedMechanism(mechanism.design, mechanism.params, mechanism.groups, columns, classes)
    elif isinstance(mechanism, ChannelMechanism):
        columns = [[layer.transform(p) for p in column] for column in mechanism.columns()]
        composite = ChannelMechanism(mechanism.design, mechanism.params, mechanism.answers, mechanism.reports, columns)
    else:
        raise TypeError(f"no composite channel for {type(mechanism).__name__}")
    composite.respondent_randomizes = mechanism.respondent_randomizes
    composite.permanent, composite.instant = mechanism, layer
    return composite


class MemoizedLaplace(LaplaceMechanism):
    """A number's composite channel: the permanent discrete-Laplace report, then k-ary randomized response
    over the report window."""

    def __init__(self, permanent: LaplaceMechanism, layer: InstantLayer):
        super().__init__(permanent.design, permanent.params, permanent.minimum, permanent.maximum, permanent.step,
                         permanent.alpha)
        self.layer = layer

    def _index_probability(self, r: int, a: int) -> Fraction:
        return self.layer.transform(super()._index_probability(r, a))

    def _channel_key(self):
        return self.alpha, self.layer.keep, self.layer.other

    @property
    def epsilon(self) -> float:
        return epsilon_of(self.exp_epsilon)  # the composite's, from its exact ratio (not the permanent's closed form)

    @property
    def exp_epsilon(self):
        # The layer is increasing in P(r|a), so each row's extremes stay where the permanent row has them: the
        # nearest and the farthest grid end. Rows 0 and N (a grid end: the largest peak) and the folded tails
        # (−N, 2N) are the candidates for the worst (tests enumerate small grids entry by entry).
        n, (low, high) = self.points, self.report_range
        worst = Fraction(1)
        for row in {0, n, low, high}:
            values = [self._index_probability(row, a) for a in (0, n)] + \
                     [self._index_probability(row, min(max(row, 0), n))]
            worst = max(worst, max(values) / min(values))
        return worst

    def randomize(self, answer, rng=None):
        rng = rng or default_source()
        return self._window[self.layer.redraw(self._window_position[super().randomize(answer, rng)], rng)]

    def _draw_many(self, canonical: list, words) -> list | None:
        # The permanent reports in bulk, then the layer on each: the inherited loop alone drew the permanent channel.
        permanent = super()._draw_many(canonical, words)
        if permanent is None:
            return None
        window, position, redraw = self._window, self._window_position, self.layer.redraw
        return [window[redraw(position[report], words)] for report in permanent]

    @cached_property
    def _window(self) -> list:
        """The reports, in the order the layer's block lays them out (`InstantLayer.apply` on `reports`)."""
        return self.reports

    @cached_property
    def _window_position(self) -> dict:
        return {report: position for position, report in enumerate(self._window)}


#: What a private question's spec says that decides its permanent report, beside the memo and the answer: a device
#: draws the report with the memo's randomness for (survey, question, the answer's position), through the design.
_PERMANENT_FIELDS = ("type", "options", "min", "max", "step", "privacy", "split_ballot")


def _permanent_spec(question) -> dict:
    spec = question.to_dict()
    spec["options"] = question.options  # the values in order; labels are wording
    return {field: spec.get(field) for field in _PERMANENT_FIELDS}


def redrawn_questions(earlier, later) -> list[str]:
    """The questions of ``later``, a version of the repeated survey ``earlier`` was, whose permanent report a device's
    memo would draw differently for the same answer: private in both, with another design, answer alphabet or split
    ballot. The two draws read the same randomness, so together they can reveal the answer outright (a coin design of
    truth 1/2 changed to truth 3/4 draws, for one respondent in eight, a pair of reports only their answer can give):
    a panel's ε over every wave holds only while the design holds. A question under a new id draws from randomness of
    its own."""
    if earlier.repeated is None or later.repeated is None:
        return []  # a survey asked once draws afresh for every response; no memo ties two versions' reports
    return [qid for qid, question in later.questions.items()
            if question.is_private and qid in earlier.questions and earlier.questions[qid].is_private
            and _permanent_spec(question) != _permanent_spec(earlier.questions[qid])]
