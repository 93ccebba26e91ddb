"""A survey's privacy budget (max_epsilon): sequential composition over its private questions, decided
exactly at the boundary, refused with the figures, stated in the summary; the same in the JS twin."""

import pytest

from deniable.client import SpecError, Survey

COIN = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}  # e^ε = 3


def two_coins(**top):
    questions = [{"id": qid, "type": "yes_no", "text": "?", "privacy": COIN} for qid in ("a", "b")]
    return {"id": "s", "title": "S", "questions": questions, **top}


@pytest.mark.parametrize("budget,allowed", [
    ("ln(9)", True),                # e^ε = 9 exactly: the budget is met, not exceeded
    ("ln(8.999)", False),
    (2.1972245773362196, True),     # the float just above 2·ln 3
    (2.197224577336219, False),     # the float just below it: refused by the exact product
    (3, True),
    (1, False),
])
def test_the_budget_is_decided_exactly(budget, allowed):
    if allowed:
        survey = Survey.from_dict(two_coins(max_epsilon=budget))
        assert survey.exp_epsilon == 9 and survey.max_epsilon is not None
    else:
        with pytest.raises(SpecError, match=r"survey.max_epsilon: the private questions spend ε = 2.197 per respondent"):
            Survey.from_dict(two_coins(max_epsilon=budget))


def test_the_budget_is_stated_and_kept_in_the_spec():
    survey = Survey.from_dict(two_coins(max_epsilon=3))
    assert survey.budget_use() == "ε = 2.197 of 3 (73%)"
    assert "Budget (max_epsilon): ε = 2.197 of 3 (73%)" in survey.privacy_summary()
    assert survey.to_dict()["max_epsilon"] == 3 and Survey.from_dict(survey.to_dict()).hash == survey.hash
    assert Survey.from_dict(two_coins()).hash != survey.hash and Survey.from_dict(two_coins()).budget_use() is None


@pytest.mark.parametrize("budget,message", [
    (0, "must be greater than 0"), ("ln(1)", "must be greater than 0"), ("plenty", "survey.max_epsilon"),
    (True, "survey.max_epsilon"),
])
def test_a_malformed_budget_is_a_spec_error(budget, message):
    with pytest.raises(SpecError, match=message):
        Survey.from_dict(two_coins(max_epsilon=budget))


def test_an_infinite_epsilon_never_fits_a_budget_and_public_questions_do_not_count():
    spec = two_coins(max_epsilon=100)
    spec["questions"].append({"id": "c", "type": "yes_no", "text": "?", "privacy": {
        "design": "triangular", "p": "1/4", "companion": "Were you born on a Sunday?"}})
    with pytest.raises(SpecError, match="over the budget of 100"):
        Survey.from_dict(spec)
    spec["questions"][-1] = {"id": "c", "type": "yes_no", "text": "?", "privacy": "none"}
    assert Survey.from_dict(spec).epsilon == pytest.approx(2.1972245773362196)
