"""The shortcuts ingest takes answer exactly as the long way does."""

import pytest

from deniable.client import Survey
from deniable.client.json_text import JsonShapeError, check_json_text


def _nested(levels: int):
    value = "leaf"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [1, 7, 8, 9, 20])
def test_the_bracket_count_shortcut_agrees_with_the_walk_at_every_depth(levels):
    value = {"a": _nested(levels - 1)} if levels else "x"
    fast_error = walked_error = None
    try:
        check_json_text(value, "v", max_depth=8)
    except JsonShapeError as error:
        fast_error = str(error)
    try:
        check_json_text(value, "v", max_depth=8, text=False)  # depth only: the walk, always
    except JsonShapeError as error:
        walked_error = str(error)
    assert fast_error == walked_error
    assert (fast_error is not None) == (levels > 8)


def test_brackets_inside_text_only_send_the_value_the_long_way():
    check_json_text({"a": "[[[[[[[[[[{{{{{{{{{{"}, "v", max_depth=3)
    with pytest.raises(JsonShapeError, match="NUL"):
        check_json_text({"a": ["x\x00"]}, "v")


def test_a_remembered_report_is_the_report_and_refusals_are_never_remembered():
    survey = Survey.from_dict({"id": "m", "title": "M", "questions": [
        {"id": "n", "type": "number", "text": "N?", "min": 0, "max": 4, "privacy": {"design": "laplace", "epsilon": 1}},
        {"id": "c", "type": "choice", "text": "C?", "options": ["a", "b"], "privacy": {"design": "k_rr", "epsilon": 1}}]})
    number, choice = survey.questions["n"], survey.questions["c"]
    for _ in range(3):  # the first answer computes, the others remember: the same each time
        assert choice.validate_report("a") == "a" and number.validate_report(1) == 1
        with pytest.raises(ValueError):
            choice.validate_report("z")
        with pytest.raises(ValueError):
            number.validate_report(True)  # a bool is not the number 1, though True == 1 and hash(True) == hash(1)
    assert number.validate_report(1) == 1 and type(number.validate_report(1)) is int
