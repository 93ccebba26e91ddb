"""Attention and speed checks that hold no answer: instructed-response items and coarse time per section.

    quality:
      section_times: true     # the page sends the time spent on each section, to the nearest 10 seconds
      min_seconds: 90         # a response faster than this in all is flagged as speeding
    ...
      - id: attention
        type: choice
        text: "To show you are reading, choose 'Often'."
        options: [Never, Sometimes, Often]
        privacy: none
        check: Often          # the instructed answer: another one flags the response

An instructed-response item is a public question (its answer is sent as it is, and it asks nothing about the
respondent), so a wrong answer can be counted. Times are per section, rounded, capped, and never per randomized
question nor a log of changes: they say how long a part took, not what was answered or how often it changed. The
analysis leaves flagged responses out only when asked, and says how many it left out and why."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DeniableError, SpecError

#: The grain of a section's time, and its cap (a page left open over lunch counts an hour).
SECONDS_STEP = 10
MAX_SECTION_SECONDS = 3600
#: The question types an instructed answer can be checked on.
CHECK_TYPES = ("yes_no", "choice", "ordinal")
#: The key of the time of a survey without sections.
WHOLE_SURVEY = "all"


class ParadataError(DeniableError, ValueError):
    """Paradata (the times and checks a page sends beside its reports) that cannot be read; its field is
    ``paradata``."""

    def __init__(self, message: str):
        super().__init__(message, "paradata")


@dataclass(frozen=True)
class Quality:
    section_times: bool = False
    min_seconds: int | None = None

    @classmethod
    def read(cls, raw) -> "Quality | None":
        if raw is None:
            return None
        where = "survey.quality"
        if not isinstance(raw, dict) or not raw:
            raise SpecError(f"{where}: a mapping of section_times (true or false) and min_seconds, got {raw!r}")
        unknown = sorted(set(raw) - {"section_times", "min_seconds"})
        if unknown:
            raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: min_seconds, section_times)")
        times = raw.get("section_times", False)
        if not isinstance(times, bool):
            raise SpecError(f"{where}.section_times: true or false, got {times!r}")
        least = raw.get("min_seconds")
        if least is not None and (isinstance(least, bool) or not isinstance(least, int) or not 1 <= least <= 36000):
            raise SpecError(f"{where}.min_seconds: a whole number of seconds from 1 to 36000, got {least!r}")
        if least is not None and not times:
            raise SpecError(f"{where}.min_seconds: needs section_times: true (the time it is compared with)")
        return cls(times, least)

    def to_dict(self) -> dict:
        spec: dict = {"section_times": self.section_times}
        if self.min_seconds is not None:
            spec["min_seconds"] = self.min_seconds
        return spec


def read_check(value, question, where: str):
    """A question's instructed answer (``check``), or None."""
    if value is None:
        return None
    if question.is_private:
        raise SpecError(f"{where}: an attention check is a public question (privacy: none): its answer is compared "
                        "with the instructed one, which a randomized answer cannot be")
    if question.type not in CHECK_TYPES:
        raise SpecError(f"{where}: an attention check is a {', '.join(CHECK_TYPES)} question")
    answers = list(question.options) if question.options is not None else ["yes", "no"]
    if value not in answers:
        raise SpecError(f"{where}: {value!r} is not an answer of {question.id!r} ({', '.join(answers)})")
    return value


def section_keys(survey) -> list[str]:
    return [section.id or WHOLE_SURVEY for section in survey.sections]


def checked_paradata(survey, paradata) -> dict | None:
    """A response's paradata as kept ({"seconds": {section: whole tens of seconds}}), or ParadataError. Only a survey
    whose spec asks for section times takes any."""
    if paradata is None:
        return None
    quality = survey.quality
    if quality is None or not quality.section_times:
        raise ParadataError(f"paradata: survey {survey.id!r} records no section times (quality.section_times)")
    if not isinstance(paradata, dict) or set(paradata) != {"seconds"} or not isinstance(paradata["seconds"], dict):
        raise ParadataError('paradata: {"seconds": {section id: seconds}}, the time spent on each section')
    keys = section_keys(survey)
    seconds = paradata["seconds"]
    unknown = sorted(set(seconds) - set(keys), key=str)
    if unknown:
        raise ParadataError(f"paradata.seconds: {unknown[0]!r} is not a section of this survey ({', '.join(keys)})")
    for key, value in seconds.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SECTION_SECONDS \
                or value % SECONDS_STEP:
            raise ParadataError(f"paradata.seconds.{key}: whole tens of seconds from 0 to {MAX_SECTION_SECONDS}, "
                                f"got {value!r}")
    return {"seconds": {key: seconds[key] for key in keys if key in seconds}}
