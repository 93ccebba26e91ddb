"""Quasi-identifiers judged together: the frame's columns and the public answers a response carries out (stratum,
PSU, an exact age, a region) can single out a respondent in combination though each is coarse alone: in a newcomer's
export of 2,700 responses, 1,327 were unique in (PSU, exact age). What `survey show` and `export` say about it, and
the standard remedies an export offers (statistical disclosure control as sdcMicro does it): a public number coarsened
to bands, top-coded, or a column left out."""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field

from deniable.client.errors import DeniableError
from deniable.storage.release import RELEASE_AT

#: A combination held by fewer responses than this is named as small (the frame's release bound).
SMALL_GROUP = RELEASE_AT


class RemedyError(DeniableError, ValueError):
    """A remedy that names no column of the export, or cannot apply to it; the message starts with its option."""


def quasi_identifiers(survey) -> list[str]:
    """The columns a response carries that anyone may know of a respondent: the frame's, and the public questions'."""
    frame = list(survey.sample.get("frame", []))
    public = [qid for qid, question in survey.questions.items() if not question.mechanism.is_private]
    return frame + public


@dataclass(frozen=True)
class Remedies:
    """Coarsen a public number to bands of a width (each value the lower end of its band), top-code one at a value,
    leave columns out."""

    coarsen: dict = field(default_factory=dict)
    top_code: dict = field(default_factory=dict)
    suppress: tuple = ()

    @classmethod
    def parse(cls, survey, coarsen=(), top_code=(), suppress=()) -> "Remedies":
        """From ``column=number`` texts; refuses, naming it, a column that is neither a frame column nor a public
        question, a coarsening or top-code of anything but a public number, and a width that is not positive."""
        known = set(quasi_identifiers(survey))
        for name in suppress:
            if name not in known:
                raise RemedyError(f"--suppress {name}: not a frame column or public question (those are: "
                                  f"{', '.join(sorted(known))})")
        return cls(_numbers(survey, coarsen, "--coarsen", positive=True), _numbers(survey, top_code, "--top-code"),
                   tuple(suppress))

    def __bool__(self) -> bool:
        return bool(self.coarsen or self.top_code or self.suppress)

    def apply(self, row: dict) -> dict:
        """An export row with the remedies applied (a new dict; reports too)."""
        reports = dict(row.get("reports", {}))
        row = {key: value for key, value in row.items() if key != "reports" and key not in self.suppress}
        for qid in self.suppress:
            reports.pop(qid, None)
        for qid, cap in self.top_code.items():
            if isinstance(reports.get(qid), (int, float)) and reports[qid] > cap:
                reports[qid] = cap
        for qid, width in self.coarsen.items():
            if isinstance(reports.get(qid), (int, float)):
                band = math.floor(reports[qid] / width) * width
                reports[qid] = int(band) if float(band).is_integer() else band
        row["reports"] = reports
        return row

    def describe(self) -> str:
        said = [f"{qid} in bands of {width:g} (each value its band's lower end)" for qid, width in self.coarsen.items()]
        said += [f"{qid} top-coded at {cap:g}" for qid, cap in self.top_code.items()]
        said += [f"{name} left out" for name in self.suppress]
        return "; ".join(said)


def _numbers(survey, given, option: str, positive: bool = False) -> dict:
    found = {}
    for text in given:
        name, _, number = text.partition("=")
        question = survey.questions.get(name)
        if question is None or question.mechanism.is_private or question.type != "number":
            raise RemedyError(f"{option} {text}: {name!r} is not a public number question")
        try:
            value = float(number)
        except ValueError:
            raise RemedyError(f"{option} {text}: give {name}=<number>") from None
        if not math.isfinite(value) or (positive and value <= 0):
            raise RemedyError(f"{option} {text}: the number must be {'positive' if positive else 'finite'}")
        found[name] = value
    return found


@dataclass(frozen=True)
class Groups:
    """Responses by their combination of quasi-identifiers: how many, the smallest group, how many are alone."""

    columns: list
    responses: int
    smallest: int | None
    unique: int
    small: int

    def describe(self) -> str:
        if not self.columns or not self.responses:
            return ""
        return (f"{self.unique:,} of {self.responses:,} responses are unique in their combination of "
                f"{', '.join(self.columns)} ({self.small:,} in groups under {SMALL_GROUP}; the smallest group "
                f"{self.smallest})")


def groups(rows, survey, remedies: Remedies | None = None) -> Groups:
    """`Groups` over export ``rows`` (remedies applied first when given)."""
    columns = [name for name in quasi_identifiers(survey) if not remedies or name not in remedies.suppress]
    frame = set(survey.sample.get("frame", []))
    counts = collections.Counter()
    for row in rows:
        if remedies:
            row = remedies.apply(row)
        reports = row.get("reports", {})
        counts[tuple(repr(row.get(name) if name in frame else reports.get(name)) for name in columns)] += 1
    sizes = list(counts.values())
    return Groups(columns, sum(sizes), min(sizes, default=None), sizes.count(1),
                  sum(size for size in sizes if size < SMALL_GROUP))


def expected_groups(survey, n: int, frame_rows: int | None = None) -> str:
    """Before fieldwork: how many combinations the public answers (and the frame's distinct rows, when known) make,
    and how many of ``n`` respondents each holds on average; a warning when that is under `SMALL_GROUP`, naming the
    widest public question (the one to ask, or export, in bands)."""
    sizes = {qid: len(question.mechanism.answers) for qid, question in survey.questions.items()
             if not question.mechanism.is_private}
    combinations = math.prod(sizes.values()) * (frame_rows or 1)
    if not sizes or combinations <= 1:
        return ""
    named = ", ".join(sizes) + (f" and the frame's {frame_rows} rows" if frame_rows else "")
    per = n / combinations
    each = f"{per:.1f}" if per < 10 else f"{per:,.0f}"
    said = f"{combinations:,} combinations of {named}, {each} respondents each on average at n = {n:,}"
    if per >= SMALL_GROUP:
        return f"Public answers: {said}"
    widest = max(sizes, key=sizes.get)
    return (f"WARNING: public answers: {said}: many respondents would be alone in theirs, which anyone who knows those answers of them "
            f"finds in an export; ask {widest} in bands, or export it coarsened (deniable export --coarsen, --top-code, "
            "--suppress)")
