"""Skip logic: the expression language, the rule that it reads public answers only, and the
property that what is sent depends on the public answers alone."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.client import SpecError, Survey, skiplogic
from tests.conftest import EXAMPLES, SeededSource
from tests.vectors import skiplogic as vectors

VECTORS = json.loads(vectors.VECTORS.read_text(encoding="utf-8"))


def test_vectors_file_is_what_the_generator_writes():
    assert vectors.VECTORS.read_text(encoding="utf-8") == vectors.render(), \
        "run `python -m tests.vectors.skiplogic` after changing the spec format or the expression language"


@pytest.mark.parametrize("case", VECTORS["expressions"], ids=lambda c: c["text"])
def test_expressions_parse_to_one_tree_and_print_canonically(case):
    tree = skiplogic.parse(case["text"])
    assert tree == case["tree"]
    assert skiplogic.parse(skiplogic.to_text(tree)) == tree


def test_grouping_and_spacing_do_not_make_a_different_tree():
    assert skiplogic.parse("(a = 'x' and b = 'y') and c = 'z'") == skiplogic.parse("a='x' and (b='y' and c='z')")
    assert skiplogic.parse("n = 7.50") == skiplogic.parse("n = 007.5")
    assert skiplogic.to_text(skiplogic.parse("not(a='x' or b='y')")) == "not (a = 'x' or b = 'y')"


@pytest.mark.parametrize("case", VECTORS["bad_expressions"], ids=lambda c: c["text"][:20])
def test_malformed_expressions_say_where(case):
    with pytest.raises(skiplogic.ExpressionError) as raised:
        skiplogic.parse(case["text"])
    assert str(raised.value) == case["error"]


def test_overlong_and_overdeep_expressions_are_refused_at_once():
    with pytest.raises(skiplogic.ExpressionError, match="longer than 2000"):
        skiplogic.parse("a = 'x' or " * 300 + "a = 'x'")
    with pytest.raises(skiplogic.ExpressionError, match="nested more than"):
        skiplogic.parse("not " * 100 + "a = 'x'")
    with pytest.raises(skiplogic.ExpressionError, match="more than 30 characters"):
        skiplogic.parse("a = " + "9" * 31)


def test_unanswered_questions_compare_unequal_to_everything():
    answers = {"n": 0.1, "pets": ["cat"], "r": "North"}
    holds = lambda text, given=answers: skiplogic.evaluate(skiplogic.parse(text), given)  # noqa: E731
    assert holds("n = 0.1") and holds("n <= 0.1") and not holds("n > 0.1")  # the float 0.1 is the decimal 0.1
    assert holds("selected(pets, 'cat')") and not holds("selected(pets, 'dog')")
    assert holds("r = 'North'") and holds("selected(r, 'North')") and not holds("r != 'North'")
    for text in ("missing = 'x'", "missing < 3", "missing >= 3", "selected(missing, 'x')"):
        assert not holds(text)
    assert holds("missing != 'x'") and holds("not missing = 'x'")
    assert not holds("n = 1", {"n": "1e999999"})  # a malformed answer is no number, and costs nothing


# ---------------------------------------------------------------- hypothesis

@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(list("ab=!<>()'\", .-0123456789 ") + [" and ", " or ", "not ", "selected("]),
                max_size=30).map("".join))
def test_no_text_crashes_the_parser(text):
    try:
        tree = skiplogic.parse(text)
    except skiplogic.ExpressionError:
        return
    assert skiplogic.parse(skiplogic.to_text(tree)) == tree


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=80))
def test_no_unicode_text_crashes_the_parser(text):
    try:
        tree = skiplogic.parse(text)
    except skiplogic.ExpressionError:
        return
    assert skiplogic.parse(skiplogic.to_text(tree)) == tree


question_ids = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True).filter(lambda s: s not in skiplogic.KEYWORDS)
texts = st.text(alphabet=st.characters(blacklist_characters="'\"", blacklist_categories=("Cs",)), max_size=8)
numbers = st.from_regex(r"-?[0-9]{1,4}(\.[0-9]{1,3})?", fullmatch=True)
leaves = st.one_of(
    st.builds(lambda q, op, v: {"op": op, "question": q, "value": {"text": v}}, question_ids, st.sampled_from(["=", "!="]), texts),
    st.builds(lambda q, op, v: {"op": op, "question": q, "value": {"number": skiplogic.canonical_number(v)}},
              question_ids, st.sampled_from(skiplogic.COMPARISONS), numbers),
    st.builds(lambda q, v: {"op": "selected", "question": q, "value": {"text": v}}, question_ids, texts),
)


def _join(op, args):
    flat = []
    for arg in args:
        flat.extend(arg["args"] if arg["op"] == op else [arg])
    return {"op": op, "args": flat}


trees = st.recursive(leaves, lambda inner: st.one_of(
    st.builds(lambda a: {"op": "not", "arg": a}, inner),
    st.builds(lambda op, args: _join(op, args), st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=3)),
), max_leaves=12)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(trees)
def test_printing_a_tree_and_parsing_it_again_gives_the_same_tree(tree):
    assert skiplogic.parse(skiplogic.to_text(tree)) == tree


# ---------------------------------------------------------------- the rule that cannot leak

@pytest.mark.parametrize("case", VECTORS["refused"], ids=lambda c: c["error"][:40])
def test_refused_specs(case):
    with pytest.raises(SpecError) as raised:
        Survey.from_dict(case["spec"])
    assert str(raised.value) == case["error"]


def test_a_leaking_relevant_is_refused_with_the_reason_and_the_safe_pattern():
    spec, _ = vectors.LEAKS[0]
    with pytest.raises(SpecError) as raised:
        Survey.from_dict(spec)
    message = str(raised.value)
    assert message.startswith("question 'where'.relevant: refers to 'abroad', a private (randomized) question.")
    assert "would reveal the true answer to 'abroad'" in message
    assert "Ask 'where' of everyone instead" in message and "'does not apply'" in message


def test_the_same_follow_up_asked_of_everyone_is_accepted():
    spec = {"id": "safe", "title": "Safe", "questions": [
        {"id": "abroad", "type": "yes_no", "text": "Have you ever travelled abroad?"},
        {"id": "where", "type": "choice", "text": "Where did you go?", "options": ["Europe", "Asia", "Does not apply"],
         "privacy": {"design": "k_rr", "epsilon": 1}}]}
    survey = Survey.from_dict(spec)
    assert survey.shown({"abroad": "no"}) == survey.shown({"abroad": "yes"}) == ["abroad", "where"]


def _public_part(survey, answers):
    return {q: a for q, a in answers.items() if not survey.questions[q].is_private}


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**9))
def test_property_the_keys_sent_are_a_function_of_the_public_answers_alone(seed):
    rng = random.Random(seed)
    survey = Survey.from_dict(vectors.random_spec(rng, seed))
    answers = vectors.random_answers(rng, survey)
    keys = set(survey.randomize(answers, SeededSource(seed)))
    for variant in range(5):
        varied = dict(answers)
        for question in survey.private_questions:
            if answers[question.id] is not None:  # answering at all is the respondent's choice, not the truth
                varied[question.id] = None
                while varied[question.id] is None:
                    varied[question.id] = vectors.random_answer(rng, question)
        assert _public_part(survey, varied) == _public_part(survey, answers)
        assert set(survey.randomize(varied, SeededSource(variant))) == keys
        assert survey.shown(varied) == survey.shown(answers)
        assert survey.required_now(varied) == survey.required_now(answers)


def test_answers_to_hidden_questions_are_never_sent():
    survey = Survey.from_file(EXAMPLES / "questionnaire.yaml")
    answers = {"region": "North", "worked": "no", "dodged": "no", "fairness": "Agree", "cash": "Salary", "hours": 5}
    assert set(survey.randomize(answers)) == {"region", "worked", "dodged", "fairness"}
    assert "cash" not in survey.shown(answers) and "coin_note" in survey.shown(answers)
    assert survey.required_now(answers) == ["region", "worked", "dodged", "fairness"]
    assert survey.required_now({**answers, "worked": "yes"}) == ["region", "worked", "dodged", "fairness", "cash", "hours"]
