"""Designs that measure whether respondents complied: cheating detection (Clark & Desharnais 1998, with
the symmetric variant of Ostapczuk et al. 2009) and the stochastic lie detector (Moshagen, Musch &
Erdfelder 2012).

The device assigns each respondent one of the spec's groups at random (`GroupedMechanism.assign_group`,
a CSPRNG draw, public and independent of every answer) and shows that group's instruction; the respondent
draws with the natural randomizer the instruction names and types the result, so the page never learns
whether it saw the truth. A report carries its group: ``{"group": "a", "report": "yes"}``. The channel
over the true answers (every respondent honest) states ε; the analysis adds the non-compliant classes as
columns of its own channel (`latent_classes`), since non-compliance is a way of answering, not an answer.
"""

from __future__ import annotations

from fractions import Fraction

from .exact import parse_fraction
from .identifiers import identifier
from .mechanisms import YES_NO, ChannelMechanism
from .randomness import default_source

#: What a respondent in a group may type.
GROUP_REPORTS = YES_NO


class GroupedMechanism(ChannelMechanism):
    """A yes/no channel whose reports carry the respondent's public group: ``{"group": g, "report": x}``.
    Groups are equally likely; ``latent_classes`` are the analysis channel's columns (label, column)."""

    respondent_randomizes = True

    def __init__(self, design: str, params: dict, groups: list[str], columns, latent_classes):
        self.groups = list(groups)
        reports = [{"group": g, "report": x} for g in self.groups for x in GROUP_REPORTS]
        super().__init__(design, params, YES_NO, reports, columns)
        self.latent_classes = [(label, [Fraction(p) for p in column]) for label, column in latent_classes]

    @staticmethod
    def _report_key(report):
        return report["group"], report["report"]

    @property
    def reports(self):
        return [dict(r) for r in self._reports]

    def validate_report(self, report):
        if not isinstance(report, dict) or set(report) != {"group", "report"}:
            raise ValueError(f"report {report!r} must be an object with a 'group' ({', '.join(self.groups)}) and the "
                             f"'report' typed in it (yes or no)")
        group, typed = report["group"], report["report"]
        if not isinstance(group, str) or group not in self.groups:
            raise ValueError(f"group {group!r} is not one of this question's groups ({', '.join(self.groups)})")
        if typed not in GROUP_REPORTS or isinstance(typed, bool):
            raise ValueError(f"report {typed!r} is not one of {list(GROUP_REPORTS)!r}")
        return {"group": group, "report": typed}

    def randomize(self, answer, rng=None):
        return dict(super().randomize(answer, rng))

    def _draw_many(self, canonical, words):
        drawn = super()._draw_many(canonical, words)
        return None if drawn is None else [dict(r) for r in drawn]

    def assign_group(self, rng=None) -> str:
        """The group a new respondent is shown: uniform over the groups, from a CSPRNG (or ``rng``)."""
        return self.groups[(rng or default_source()).randbelow(len(self.groups))]

    def instruction(self, group: str):
        """The instruction a respondent of ``group`` follows (a text, or a map of languages)."""
        return self.params["groups"][group]["randomizer"]


def _group_probability(spec: dict, name: str, where: str) -> Fraction:
    if name not in spec:
        return Fraction(0)
    value = parse_fraction(spec[name], f"{where}.{name}")
    if not 0 <= value < 1:
        raise ValueError(f"{where}.{name}: must be at least 0 and below 1, got {spec[name]!r}")
    return value


def _groups(params: dict, where: str, accepted: tuple, text) -> dict:
    groups = params.get("groups")
    if not isinstance(groups, dict) or len(groups) < 2:
        raise ValueError(f"{where}.groups: at least two groups, each a mapping such as "
                         f"{{a: {{{accepted[0]}: 1/3, randomizer: \"…\"}}, b: …}}, got {groups!r}")
    if len(groups) > 26:
        raise ValueError(f"{where}.groups: at most 26 groups, got {len(groups)}")
    for name, group in groups.items():
        identifier(name, f"{where}.groups")
        at = f"{where}.groups.{name}"
        if not isinstance(group, dict):
            raise ValueError(f"{at}: must be a mapping with {' or '.join(accepted)} and randomizer, got {group!r}")
        unknown = sorted(set(group) - {*accepted, "randomizer"})
        if unknown:
            raise ValueError(f"{at}: unknown field {unknown[0]!r} (accepted: {', '.join((*accepted, 'randomizer'))})")
        if "randomizer" not in group:
            raise ValueError(f"{at}.randomizer: required, the instruction this group's respondents follow")
    return groups


def respondent_text(value, where: str, text=None):
    """A text the respondent reads to randomize (a companion question, a randomizer's instruction): a
    string, or a map of languages when the survey declares them (``text`` checks those)."""
    if text is not None:
        return text(value, where)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: required, the text the respondent reads (a non-empty string), got {value!r}")
    return value


def cheating_detection(params: dict, where: str, text=None) -> GroupedMechanism:
    """Group g forces "yes" with ``yes`` (and, in the symmetric variant, "no" with ``no``); otherwise the
    respondent answers truthfully. Latent classes: honest yes (π), honest no (β), cheaters who say "no"
    whatever they are told (γ = 1 − π − β). Identified when the groups' (1 − no, yes) are not proportional."""
    groups = _groups(params, where, ("yes", "no"), text)
    names = list(groups)
    weight = Fraction(1, len(names))
    forced = {}
    normalized_groups = {}
    for name, group in groups.items():
        at = f"{where}.groups.{name}"
        yes, no = _group_probability(group, "yes", at), _group_probability(group, "no", at)
        if yes + no >= 1:
            raise ValueError(f"{at}: yes + no must be below 1 (some respondents must answer truthfully), got {yes} + {no}")
        forced[name] = (yes, no)
        described = {"yes": str(yes)} if "no" not in group else {"yes": str(yes), "no": str(no)}
        described["randomizer"] = respondent_text(group["randomizer"], f"{at}.randomizer", text)
        normalized_groups[name] = described
    first, *others = names
    (yes_1, no_1) = forced[first]
    if all((1 - no_1) * forced[o][0] == (1 - forced[o][1]) * yes_1 for o in others):
        raise ValueError(f"{where}.groups: every group forces 'yes' and 'no' in the same proportion, so honest "
                         "answers and cheating cannot be told apart; give the groups different 'yes' shares "
                         "(e.g. 1/3 and 2/3)")

    def column(yes_given):  # P((g, yes)) = w·yes_given(g), P((g, no)) = w·(1 − yes_given(g))
        return [weight * p for g in names for p in (yes_given(g), 1 - yes_given(g))]

    honest_yes = column(lambda g: 1 - forced[g][1])
    honest_no = column(lambda g: forced[g][0])
    cheater = column(lambda g: Fraction(0))
    normalized = {"design": "cheating_detection", "groups": normalized_groups}
    return GroupedMechanism("cheating_detection", normalized, names, [honest_yes, honest_no],
                            [("yes", honest_yes), ("no", honest_no), ("cheater", cheater)])


def stochastic_lie_detector(params: dict, where: str, text=None) -> GroupedMechanism:
    """Non-carriers (true "no") answer "yes" with probability 1 − p of their group's natural randomizer;
    carriers (true "yes") answer "yes" if truthful (share t) and "no" if not. Latent classes: truthful
    carriers (πt), lying carriers (π(1 − t)), non-carriers (1 − π). Identified when the groups' p differ."""
    groups = _groups(params, where, ("p",), text)
    names = list(groups)
    weight = Fraction(1, len(names))
    share = {}
    normalized_groups = {}
    for name, group in groups.items():
        at = f"{where}.groups.{name}"
        if "p" not in group:
            raise ValueError(f"{at}.p: required, the chance the randomizer tells a non-carrier to answer no")
        p = parse_fraction(group["p"], f"{at}.p")
        if not 0 < p <= 1:
            raise ValueError(f"{at}.p: must be above 0 and at most 1, got {group['p']!r}")
        share[name] = p
        normalized_groups[name] = {"p": str(p), "randomizer": respondent_text(group["randomizer"], f"{at}.randomizer", text)}
    if len(set(share.values())) == 1:
        raise ValueError(f"{where}.groups: every group has the same p, so the carriers' share and their honesty "
                         "cannot be told apart; give the groups different p (e.g. 2/12 and 10/12)")

    def column(yes_given):
        return [weight * q for g in names for q in (yes_given(g), 1 - yes_given(g))]

    truthful = column(lambda g: Fraction(1))
    lying = column(lambda g: Fraction(0))
    non_carrier = column(lambda g: 1 - share[g])
    normalized = {"design": "stochastic_lie_detector", "groups": normalized_groups}
    return GroupedMechanism("stochastic_lie_detector", normalized, names, [truthful, non_carrier],
                            [("truthful carrier", truthful), ("lying carrier", lying), ("non-carrier", non_carrier)])
