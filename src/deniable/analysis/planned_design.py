"""The design effect a plan assumes for a spec's ``sample:``: how much wider than a simple random sample's the
intervals of a weighted, clustered sample will be, before any response is in.

A figure planned at n respondents under a design has a simple random sample's variance at n times its design effect
(its SE and margin √deff wider), and the n a margin needs is deff times a simple random sample's. Where deff comes
from is said beside the plan, always:

* given (``--design-effect``): a figure from an earlier round or a similar survey;
* from the invitations' frame, Kish's approximation: deff = (1 + CV² of the weights) × (1 + (b̄ − 1) ρ κ), the
  weights' share from the frame's own weights, b̄ the respondents a PSU is expected to hold (the frame's invitations
  per PSU, weighted by size, scaled to the planned n), ρ the intraclass correlation of the answers within PSUs, stated
  (``--icc``) or assumed at `ASSUMED_ICC`, and κ ≤ 1 the figure's direct-to-randomized variance ratio
  (`PlannedDesign`). Strata are left out: proportionate stratification only narrows intervals, so leaving it out
  errs wide;
* none: a spec without a sample design is planned as a simple random sample; one with a design but nothing to
  compute its effect from says that its plan is a simple random sample's, and how to plan with the design.

After fielding, each design-based estimate states its realised design effect (`weighted.design_effect`), which the
dashboard shows beside this one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import AnalysisError
from .family import Result

#: The intraclass correlation a plan assumes when none is stated: a middling value for behaviours and attitudes
#: within villages, schools or clinics (most published ICCs of such outcomes lie between 0.01 and 0.1); said as an
#: assumption wherever it is used.
ASSUMED_ICC = 0.05


@dataclass(frozen=True)
class PlannedDesign(Result):
    """A plan's design effect (the variance of an estimate over a simple random sample's of the same n) and where it
    came from, in words. ``unused``: the spec names a design that this effect leaves out (say so beside the plan).

    ``effect`` is a directly asked question's. A randomized one's clustering is diluted: answers correlated within a
    PSU (ρ) make reports correlated only through the answers, and the estimate's variance between PSUs grows by
    (b̄ − 1)ρ times the direct question's variance, not the randomized one's, so its design effect is
    weighting × (1 + (b̄ − 1)ρκ), κ the direct-to-randomized variance ratio of the figure (`for_figure`)."""

    effect: float
    words: str
    unused: bool = False
    weighting: float = 1.0
    per_psu: float = 1.0
    rho: float = 0.0
    given: bool = False  # an assumed overall effect: every figure takes it as it is

    def for_figure(self, kappa: float) -> float:
        """The design effect of a figure whose variance is 1/κ times a directly asked one's (κ in (0, 1])."""
        if self.given:
            return self.effect
        return self.weighting * (1 + max(self.per_psu - 1, 0.0) * self.rho * min(max(kappa, 0.0), 1.0))

    def to_frame(self):
        import pandas as pd  # a frame asked for: planning itself (`survey check`) loads no pandas

        frame = pd.DataFrame([[self.effect, self.weighting, self.per_psu, self.rho, self.given, self.unused]],
                             columns=["design_effect", "weighting", "respondents_per_psu", "icc", "assumed", "unused"],
                             index=pd.Index(["planned design"], name="design"))
        frame.attrs["words"] = self.words
        return frame

    def _summary_lines(self) -> list[str]:
        return [f"Planned design: {self.words}; design effect {self.effect:.3g}"]

    def __repr__(self) -> str:
        return f"<PlannedDesign effect={self.effect:.3g}{' assumed' if self.given else ''}: {self.words}>"


SIMPLE = PlannedDesign(1.0, "a simple random sample (the spec names no sample design)")


def planned_design(survey, n: int, frame=None, icc: float | None = None,
                   assumed: float | None = None) -> PlannedDesign:
    """The design effect to plan ``survey`` at ``n`` respondents with: ``assumed`` when given; else from ``frame``
    (the invitations' rows, as dicts, or (row, invitations) pairs) and ``icc``; else none, said."""
    sample = survey.sample or {}
    roles = {role: sample[role] for role in ("weights", "clusters", "strata") if sample.get(role)}
    if assumed is not None:
        if isinstance(assumed, bool) or not isinstance(assumed, (int, float)) or not 0 < assumed < math.inf:
            raise AnalysisError(f"design_effect: a positive number (1 for a simple random sample), got {assumed!r}",
                                "design_effect")
        return PlannedDesign(float(assumed), f"an assumed design effect of {assumed:g} (as precise as "
                                             f"{n / assumed:,.0f} simple random respondents)", given=True)
    if icc is not None and (isinstance(icc, bool) or not isinstance(icc, (int, float)) or not 0 <= icc <= 1):
        raise AnalysisError(f"icc: the intraclass correlation, between 0 and 1, got {icc!r}", "icc")
    if not roles.get("weights") and not roles.get("clusters"):
        if icc is not None:
            raise AnalysisError("icc: the spec's sample names no clusters for an intraclass correlation to act within",
                                "icc")
        return SIMPLE if not roles else PlannedDesign(1.0, f"strata {roles['strata']!r} alone: planned as a simple "
                                                           "random sample (proportionate strata only narrow intervals)")
    named = ", ".join(f"{role} {name!r}" for role, name in roles.items())
    if frame is None:
        return PlannedDesign(1.0, f"a simple random sample, though the spec's sample has {named}: this plan leaves "
                                  "the design out (give the invitations' frame, or a design effect, to plan with it)",
                             unused=True)
    rows = [(row, 1) if isinstance(row, dict) else (row[0], int(row[1])) for row in frame]
    invitations = sum(count for _, count in rows)
    if invitations == 0:
        raise AnalysisError("frame: no invitations to plan the design from", "frame")
    columns = set().union(*(row for row, _ in rows))
    parts, effect, kish, per_psu, rho = [], 1.0, 1.0, 1.0, 0.0
    weights = roles.get("weights")
    if weights is not None and weights in columns:
        values = [(_positive(row.get(weights), weights), count) for row, count in rows]
        total = sum(w * count for w, count in values)
        kish = invitations * sum(w * w * count for w, count in values) / total**2
        effect *= kish
        parts.append(f"weights {kish:.2f} (1 + CV² of the frame's {weights!r})")
    elif weights:
        parts.append(f"weights {weights!r} left out (not a frame column: known only once answered)")
    clusters = roles.get("clusters")
    if clusters in columns:
        strata = roles.get("strata") if roles.get("strata") in columns else None
        sizes: dict = {}
        for row, count in rows:
            psu = (row.get(strata) if strata else None, row.get(clusters))
            sizes[psu] = sizes.get(psu, 0) + count
        per_psu = sum(m * m for m in sizes.values()) / invitations * min(n / invitations, 1.0)
        rho = ASSUMED_ICC if icc is None else float(icc)
        clustering = 1 + max(per_psu - 1, 0.0) * rho
        effect *= clustering
        stated = "given" if icc is not None else "assumed: state yours"
        parts.append(f"clusters up to {clustering:.2f} (1 + (b̄ − 1)ρκ: b̄ = {per_psu:.1f} respondents per PSU of "
                     f"{clusters!r} at n = {n:,}, ρ = {rho:g} the answers' ICC {stated}, κ ≤ 1 the question's "
                     "direct-to-randomized variance ratio: randomizing dilutes the clustering)")
    elif clusters:
        parts.append(f"clusters {clusters!r} left out (not a frame column)")
    words = (f"design effect up to {effect:.2f} from the invitations' frame: " + " × ".join(parts) +
             (f"; strata {roles['strata']!r} left out, as they only narrow" if roles.get("strata") else "") +
             "; each question's own is beside it")
    return PlannedDesign(effect, words, weighting=kish, per_psu=per_psu, rho=rho)


def _positive(value, column: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not number > 0 or math.isinf(number):
        raise AnalysisError(f"frame: the weights column {column!r} holds {value!r}, not a positive number", "frame")
    return number
