"""What a survey promises its respondents about their answers, in the words of their language, derived from the spec:
which questions are randomized (all, some, none) and where (on their device, or by the respondents themselves where a
design has them draw). The page's opening words and the invitation and reminder e-mails say it; none of them may
promise more than the spec does (a survey that asks some questions directly says so)."""

from __future__ import annotations


def _counts(survey) -> tuple[int, int, set]:
    """(private questions, questions, where the private ones are randomized: {"device", "respondent"})."""
    private = survey.private_questions
    where = {"respondent" if getattr(q.mechanism, "respondent_randomizes", False) else "device" for q in private}
    return len(private), len(survey.questions), where


def page_intro(survey, words: dict) -> str:
    """The page's opening words: every answer randomized on this device (each respondent-randomized question says
    that it is drawn by the respondent, in its own statement), some, or none."""
    private, total, _ = _counts(survey)
    return words["intro"] if private == total else words["intro_some"] if private else words["intro_none"]


def email_promise(survey, words: dict) -> str:
    """The e-mails' sentence about the answers (``{privacy}`` in their bodies)."""
    private, total, where = _counts(survey)
    if not private:
        return words["privacy_none"]
    place = words["where_both" if len(where) == 2 else f"where_{where.pop()}"]
    if private == total:
        return words["privacy_all"].format(where=place)
    return words["privacy_some"].format(where=place, private=private, total=total)
