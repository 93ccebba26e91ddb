"""What a survey's skip logic may read, checked when a spec is read: every ``relevant`` and ``required`` expression
reads only public questions asked before it in every order (`order.asked_before`), with literals they can take. A rule
that read a randomized answer would tell the server that answer by whether a report arrives (`questions.leak_message`).
Which items an answer set shows and requires is `Survey.shown` and `Survey.required_now`."""

from __future__ import annotations

from . import skiplogic
from .errors import SpecError
from .order import asked_before
from .questions import Question, leak_message


def check_skip_logic(survey) -> None:
    """`SpecError` naming the first expression that reads what it may not."""
    for section, before in asked_before(survey):
        earlier: dict[str, Question] = {qid: survey.questions[qid] for qid in before}
        if section.relevant is not None:
            assert section.id is not None  # the implicit section of a spec without sections has no skip logic
            _check_expression(survey, section.relevant, f"section {section.id!r}.relevant", section.id, earlier)
        for item in section.items:
            if item.relevant is not None:
                _check_expression(survey, item.relevant, f"{item.where}.relevant", item.id, earlier)
            if isinstance(item, Question) and not isinstance(item.required, bool):
                _check_expression(survey, item.required, f"{item.where}.required", item.id, earlier)
            if isinstance(item, Question) and not section.randomize:
                earlier[item.id] = item


def _check_expression(survey, tree, where: str, item_id: str, earlier: dict):
    for leaf in skiplogic.comparisons(tree):
        ref = leaf["question"]
        question = earlier.get(ref)
        if question is None:
            if ref in survey.questions or any(i.id == ref for i in survey.items):
                order = "; in a random order, only what is asked before it in every order" \
                    if survey.has_random_order else ""
                raise SpecError(f"{where}: {ref!r} is not a question asked before this one "
                                f"(skip logic reads answers already given{order})")
            raise SpecError(f"{where}: no question {ref!r} in this survey")
        if question.is_private:
            raise SpecError(leak_message(where, item_id, ref))
        op, value = leaf["op"], leaf["value"]
        if question.type == "number":
            if op == "selected" or "number" not in value:
                raise SpecError(f"{where}: {ref!r} is a number question; compare it with a number, "
                                f"as in {ref} >= 18")
            continue
        allowed = ["yes", "no"] if question.type == "yes_no" else question.options
        if question.type == "multi_select" and op != "selected":
            raise SpecError(f"{where}: {ref!r} allows several answers; use selected({ref}, 'option')")
        if op in skiplogic.ORDERINGS or "text" not in value:
            raise SpecError(f"{where}: {ref!r} has named answers; use {ref} = 'option' or selected({ref}, 'option')")
        if value["text"] not in allowed:
            raise SpecError(f"{where}: {value['text']!r} is not an answer of {ref!r} (answers: {', '.join(allowed)})")
