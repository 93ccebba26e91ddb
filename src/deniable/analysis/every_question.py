"""The one loop over a loaded survey's questions: for each, its estimate or why it has none.

The long table (`tables.estimate_table`: what `deniable estimate` prints and the dashboard offers as a file), the
dashboard's estimates page and `LoadedSurvey.estimate_all` all read `each_estimate` (or, to estimate in their own
way, `each_question`), so a question is left out for the same reason, in the same words, on every surface.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .errors import DesignNotSupported, PoolingError
from .estimation import estimate
from .results import EstimateResult
from .survey_data import SurveyData, nothing_to_estimate


@dataclass(frozen=True)
class NoEstimate:
    """Why a question has no estimate: ``pooled`` when the pooled versions randomize it differently (the
    `PoolingError`'s words), else it has nothing to estimate from yet (`survey_data.nothing_to_estimate`'s)."""

    question_id: str
    reason: str
    pooled: bool = False

    def __str__(self) -> str:
        return self.reason


def question_ids(data: SurveyData) -> list[str]:
    """Every question of the loaded versions: the newest version's order, then questions that only
    older versions asked (their data stay reachable)."""
    ids = list(data.survey.questions)
    for version in reversed(data.versions):
        ids += [qid for qid in version.survey.questions if qid not in ids]
    return ids


def each_question(data: SurveyData, questions: Iterable[str] | None = None) -> Iterator[tuple[str, NoEstimate | None]]:
    """``(question_id, None)`` for each question that can be estimated, ``(question_id, NoEstimate)`` for the others;
    ``questions`` defaults to `question_ids`."""
    for qid in question_ids(data) if questions is None else questions:
        if data.pooled:
            try:
                data.versions_for(qid)
            except PoolingError as error:
                yield qid, NoEstimate(qid, str(error), pooled=True)
                continue
        reason = nothing_to_estimate(data, qid)
        yield qid, None if reason is None else NoEstimate(qid, reason)


def each_estimate(data: SurveyData, questions: Iterable[str] | None = None, design=None,
                  **options) -> Iterator[tuple[str, EstimateResult | NoEstimate]]:
    """``(question_id, result)`` for each question that can be estimated (`estimate_with_design`, with ``options``:
    level, simultaneous, language), ``(question_id, NoEstimate)`` for the others."""
    for qid, missing in each_question(data, questions):
        yield qid, missing if missing is not None else estimate_with_design(data, qid, design, **options)


def estimate_with_design(data: SurveyData, question_id: str, design, **options) -> EstimateResult:
    """``question_id``'s estimate with ``design``; where no design-based estimate exists for it yet (multi-select),
    the simple random sample's, saying so first among its notes (the CLI and the dashboard show every question)."""
    if design is None:
        return estimate(data, question_id, **options)
    try:
        return estimate(data, question_id, design=design, **options)
    except DesignNotSupported as error:
        result = estimate(data, question_id, **options)
        why = error.message.split(": ", 1)[-1].split(";")[0]
        return dataclasses.replace(result, remarks=(f"NOT design-based ({why}): shown as if a simple random sample",
                                                    *result.remarks))
