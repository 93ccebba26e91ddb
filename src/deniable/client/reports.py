"""What a response may hold, judged against the survey it was randomized under.

A report belongs to its mechanism's output alphabet (invariant 2); whether a question was shown,
and so may be reported, follows from the public answers (invariant 9); and only a public question
may divide respondents into groups. The server, storage and analysis all ask these questions
here, so each rule is written once.
"""

from __future__ import annotations

from . import skiplogic
from .errors import ReportError


def validate_reports(survey, reports, answerable=None) -> dict:
    """Canonical reports, or `ReportError` naming the field: every report in its mechanism's output
    alphabet, no unknown question, no report for a question that skip logic hides (decided by the
    public reports, which are the true public answers), every question that is required for these
    answers present. ``answerable`` limits the required questions to those a client could answer
    (the no-JavaScript form)."""
    if not isinstance(reports, dict):
        raise ReportError("reports: must be an object of question id to report", "reports")
    clean = {}
    for qid, value in reports.items():
        question = survey.questions.get(qid)
        if question is None:
            raise ReportError(f"reports.{qid}: no such question in this survey", f"reports.{qid}")
        if value is None:
            continue
        try:
            clean[qid] = question.validate_report(value)
        except ValueError as error:
            raise ReportError(f"reports.{qid}: {error}", f"reports.{qid}") from None
    shown = survey.shown(clean)
    hidden = [qid for qid in clean if qid not in shown]
    if hidden:
        raise ReportError(f"reports.{hidden[0]}: this question is not shown for these answers (skip logic: "
                          f"{skiplogic.to_text(survey.condition(hidden[0]))})", f"reports.{hidden[0]}")
    missing = [qid for qid in survey.required_now(clean, shown)
               if qid not in clean and (answerable is None or qid in answerable)]
    if missing:
        raise ReportError(f"reports.{missing[0]}: required question not answered", f"reports.{missing[0]}")
    return clean


#: Group by the wave of a repeated survey, where ``by`` otherwise names a public question (an id cannot
#: start with "@"), and the CSV column of a response's wave.
WAVES = "@wave"
WAVE_COLUMN = "wave"


def grouping_question(survey, by: str):
    """The question ``by`` names, if respondents may be grouped by it: only a public question
    (``privacy: none``), whose reports are the true answers. `ReportError` on field ``by`` otherwise."""
    question = survey.questions.get(by)
    if question is None:
        raise ReportError(f"by: no question {by!r} in this survey", "by")
    if question.is_private:
        raise ReportError(f"by: {by!r} is randomized; group only by a public question (privacy: none)", "by")
    return question


# How one question's report spreads over the columns of a CSV export (the server writes them, the
# analysis reads them back): the question's id, and ``id.marker`` for each part beside the report.

def option_column(question_id: str, option: str) -> str:
    """The CSV column of one multi-select option: 1 when the report includes it, 0 when not."""
    return f"{question_id}.{option}"


def group_column(question_id: str) -> str:
    """The CSV column of the public group a respondent was shown (cheating detection, lie detector)."""
    return f"{question_id}.group"


def arm_column(question_id: str) -> str:
    """The CSV column of a split ballot's arm (direct, randomized)."""
    return f"{question_id}.arm"


def direct_column(question_id: str) -> str:
    """The CSV column of a split ballot's direct answer (empty in the randomized arm, whose report is in
    the question's own column)."""
    return f"{question_id}.direct"
