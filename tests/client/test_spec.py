import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.client import AnswerError, SpecError, Survey
from tests.conftest import EXAMPLES

NORWAY_YAML = """
id: tax
title: Taxes
questions:
  - id: dodged
    type: yes_no
    text: Have you ever dodged your taxes?
    privacy: {design: forced_response, truth: 1/2, yes: 1/4, no: 1/4}
  - id: mood
    type: choice
    text: Pick one
    options: [yes, no, on, off]
    privacy: {design: k_rr, epsilon: ln 3}
"""


def spec(*questions, **survey):
    return {"id": "s", "title": "A survey", "questions": list(questions), **survey}


def question(**fields):
    return {"id": "q", "text": "Question?", **fields}


def test_yaml_reads_yes_no_on_off_as_strings_not_booleans():
    survey = Survey.from_yaml(NORWAY_YAML)
    assert survey.questions["dodged"].mechanism.params == {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}
    assert survey.questions["mood"].options == ["yes", "no", "on", "off"]
    assert survey.questions["mood"].mechanism.exp_epsilon == 3


def test_yaml_and_json_of_the_same_content_share_one_hash(tmp_path):
    yaml_survey = Survey.from_file(EXAMPLES / "tax.yaml")
    path = tmp_path / "tax.json"
    path.write_text(json.dumps(yaml_survey.to_dict()))
    assert Survey.from_file(path).hash == yaml_survey.hash
    assert len(yaml_survey.hash) == 64


def test_hash_ignores_notation_and_key_order_but_not_content():
    a = Survey.from_dict(spec(question(type="yes_no", privacy={"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"})))
    b = Survey.from_dict({"questions": [{"privacy": {"no": 0.25, "yes": "0.25", "truth": 0.5, "design": "forced_response"},
                                         "text": "Question?", "type": "yes_no", "id": "q"}], "title": "A survey", "id": "s"})
    default = Survey.from_dict(spec(question(type="yes_no")))
    assert a.hash == b.hash == default.hash
    changed = Survey.from_dict(spec(question(type="yes_no", privacy={"design": "warner", "p": "3/4"})))
    retitled = Survey.from_dict(spec(question(type="yes_no"), title="Another title"))
    assert len({a.hash, changed.hash, retitled.hash}) == 3


def test_canonical_spec_round_trips():
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    again = Survey.from_dict(json.loads(survey.canonical_json()))
    assert again.hash == survey.hash
    assert [q.mechanism.channel() for q in again.questions.values()] == [q.mechanism.channel() for q in survey.questions.values()]


def test_survey_epsilon_composes_private_questions_and_names_public_ones():
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    assert survey.epsilon == pytest.approx(sum(q.epsilon for q in survey.private_questions))
    assert [q.id for q in survey.public_questions] == ["region"]
    summary = survey.privacy_summary()
    assert "WARNING" in summary and "region" in summary and "NOT randomized" in summary
    assert math.isinf(survey.questions["region"].epsilon)


def test_randomize_a_whole_survey(rng):
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    reports = survey.randomize({"dodged": "yes", "region": "North", "undeclared": ["Tips"], "hours": 12, "cash": None}, rng)
    assert set(reports) == {"dodged", "region", "undeclared", "hours"}
    assert reports["region"] == "North"
    for qid, report in reports.items():
        survey.questions[qid].mechanism.validate_report(report)
    with pytest.raises(AnswerError, match="answers.nope: no such question in this survey"):
        survey.randomize({"nope": "yes"})


@pytest.mark.parametrize("answers,message", [
    ({"hours": 99}, r"answers\.hours: answer 99 is outside -?\d+ to \d+; allowed: a number from"),
    ({"hours": -1000}, r"answers\.hours: answer -1000 is outside"),
    ({"dodged": "maybe"}, r"answers\.dodged: .*'maybe'.*; allowed: one of 'yes', 'no'"),
    ({"undeclared": ["Lottery"]}, r"answers\.undeclared: .*'Lottery'.*; allowed: a list of some of"),
    ({"dodged": "yes", "hours": "many"}, r"answers\.hours: .*; allowed: a number from"),
])
def test_answers_outside_a_question_are_refused_never_clamped(answers, message):
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    with pytest.raises(AnswerError, match=message) as raised:
        survey.randomize(answers)
    assert raised.value.question == next(q for q in answers if q != "dodged" or len(answers) == 1)


@pytest.mark.parametrize("bad,message", [
    (spec(question(type="maybe")), r"question 'q'\.type: must be one of"),
    (spec(question(type="yes_no", privacy={"design": "coin"})), r"question 'q'\.privacy\.design: unknown design 'coin'"),
    (spec(question(type="yes_no", privacy={"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/2"})),
     r"question 'q'\.privacy: truth \+ yes \+ no must be 1"),
    (spec(question(type="yes_no", privacy={"design": "forced_response", "truth": "3/2", "yes": "-1/4", "no": "-1/4"})),
     r"question 'q'\.privacy\.truth: must be between 0 and 1"),
    (spec(question(type="yes_no", privacy={"design": "forced_response", "yes": "1/2", "no": "1/2"})), r"privacy\.truth: missing"),
    (spec(question(type="yes_no", privacy={"design": "forced_response", "truth": 0, "yes": "1/2", "no": "1/2"})), r"privacy\.truth: must be greater than 0"),
    (spec(question(type="yes_no", privacy={"design": "warner", "p": "1/2"})), r"privacy\.p: 1/2 makes the report independent"),
    (spec(question(type="yes_no", privacy={"design": "warner", "p": "half"})), r"privacy\.p: expected a number"),
    (spec(question(type="choice", options=["a", "b"], privacy={"design": "k_rr", "epsilon": 0})), r"privacy\.epsilon: must be greater than 0"),
    (spec(question(type="choice", options=["a", "b"], privacy={"design": "k_rr", "epsilon": -1})), r"privacy\.epsilon: must be greater than 0"),
    (spec(question(type="choice", options=["a", "b"], privacy={"design": "k_rr", "epsilon": "ln 1"})), r"privacy\.epsilon: must be greater than 0"),
    (spec(question(type="choice", options=["a", "b"], privacy={"design": "k_rr", "epsilon": 1, "p_truth": "3/4"})), r"either epsilon or p_truth"),
    (spec(question(type="choice", options=["a", "b", "c"], privacy={"design": "k_rr", "p_truth": "1/3"})), r"p_truth: must exceed 1/3"),
    (spec(question(type="choice", options=["a", "b"], privacy={"design": "k_rr"})), r"epsilon or p_truth is required"),
    (spec(question(type="choice", options=["a", "b"], privacy={"design": "laplace", "epsilon": 1})), r"laplace does not apply to choice"),
    (spec(question(type="choice", options=["a", "b"], privacy={"design": "k_rr", "epsilon": 1, "delta": 0})), r"unknown field 'delta'"),
    (spec(question(type="choice", options=["a"], privacy="none")), r"question 'q'\.options: choice questions need"),
    (spec(question(type="choice", privacy="none")), r"question 'q'\.options"),
    (spec(question(type="choice", options=["a", "a"], privacy="none")), r"'a' appears more than once"),
    (spec(question(type="choice", options=["a", ""], privacy="none")), r"options\[1\]: must be a non-empty string"),
    (spec(question(type="choice", options=["a", "b"])), r"question 'q'\.privacy: required for choice"),
    (spec(question(type="yes_no", options=["a", "b"])), r"question 'q'\.options: a yes/no question takes only labels for its answers"),
    (spec(question(type="number", min=5, max=5, privacy="none")), r"question 'q'\.min: must be less than max"),
    (spec(question(type="number", max=5, privacy="none")), r"question 'q'\.min: required"),
    (spec(question(type="number", min=0, max=1, step=0.3, privacy="none")), r"whole number of steps"),
    (spec(question(type="number", min=0, max=1, step=-1, privacy="none")), r"step: must be greater than 0"),
    (spec(question(type="number", min=0, max=100000, privacy="none")), r"at most 10001 grid points"),
    (spec(question(type="number", min="0", max=1, privacy="none")), r"question 'q'\.min: must be a number"),
    (spec(question(type="number", min=0, max=10, privacy={"design": "laplace", "epsilon": "1e-12"})), r"too small"),
    (spec(question(type="multi_select", options=list("abcd"), privacy={"design": "unary", "epsilon": 1, "variant": "fast"})), r"variant: must be"),
    (spec(question(type="yes_no", colour="red")), r"question 'q': unknown field 'colour'"),
    (spec(question(type="yes_no", required="yes")), r"question 'q'\.required: must be true, false or a skip-logic expression"),
    (spec(question(type="yes_no", text="")), r"question 'q'\.text: must be a non-empty string"),
    (spec(question(type="yes_no", id="has space")), r"questions\[0\]\.id"),
    (spec(question(type="yes_no"), question(type="yes_no")), r"question 'q'\.id: duplicate id"),
    (spec(), r"survey\.questions: must be a non-empty list"),
    (spec(question(type="yes_no"), id=""), r"survey\.id"),
    (spec(question(type="yes_no"), title=None), r"survey\.title"),
    (spec(question(type="yes_no"), revision=2), r"survey: unknown field 'revision'"),
        (spec(question(type="yes_no"), version=2), r"survey\.version: must be a non-empty string"),
    ([1, 2], r"survey: must be a mapping"),
])
def test_every_mistake_names_its_field(bad, message):
    with pytest.raises(SpecError, match=message):
        Survey.from_dict(bad)


def test_file_errors_are_spec_errors(tmp_path):
    with pytest.raises(SpecError, match="cannot read"):
        Survey.from_file(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(SpecError, match="not valid JSON"):
        Survey.from_file(broken)
    bad_yaml = tmp_path / "broken.yaml"
    bad_yaml.write_text("id: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        Survey.from_file(bad_yaml)


# --- property tests: nothing malformed is accepted, nothing crashes ------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
field_names = st.sampled_from(["id", "type", "text", "options", "min", "max", "step", "privacy", "required",
                               "design", "epsilon", "truth", "yes", "no", "p", "p_truth", "innocuous_yes", "variant"])
VALID = Survey.from_file(EXAMPLES / "tax.yaml").to_dict()


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, prefix + (index,))


PATHS = [p for p in _paths(VALID) if p]


def _replace(value, path, new):
    value = json.loads(json.dumps(value))
    target = value
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), new=json_values)
def test_any_field_replaced_by_anything_is_accepted_or_rejected_cleanly(path, new):
    mutated = _replace(VALID, path, new)
    try:
        survey = Survey.from_dict(mutated)
    except SpecError:
        return
    # accepted: it must be a working survey whose every mechanism is a channel
    assert survey.hash
    for q in survey.questions.values():
        for column in zip(*q.mechanism.channel()) if len(q.mechanism.answers) <= 64 else []:
            assert sum(column) == 1


@settings(max_examples=200, deadline=None)
@given(spec_value=json_values)
def test_arbitrary_json_is_rejected_cleanly(spec_value):
    with pytest.raises(SpecError):
        Survey.from_dict(spec_value)


@settings(max_examples=200, deadline=None)
@given(path=st.sampled_from([p for p in PATHS if len(p) >= 3 and p[-1] in ("truth", "yes", "no", "p", "epsilon", "p_truth")]),
       new=st.one_of(st.floats(max_value=0), st.floats(min_value=1.0000001, allow_infinity=True),
                     st.sampled_from(["", "abc", "1/0", "ln 0", "-1/4", None, True, [], {}])))
def test_invalid_probabilities_and_budgets_are_never_accepted(path, new):
    mutated = _replace(VALID, path, new)
    if path[-1] == "epsilon" and isinstance(new, float) and 1 < new <= 50:
        return  # a valid budget
    with pytest.raises(SpecError):
        Survey.from_dict(mutated)


@settings(max_examples=150, deadline=None)
@given(extra=field_names, value=json_values)
def test_unknown_fields_are_never_silently_ignored(extra, value):
    privacy_path = ("questions", 0, "privacy")
    mutated = _replace(VALID, privacy_path + (extra,), value)
    if extra in ("design", "truth", "yes", "no"):
        return
    with pytest.raises(SpecError):
        Survey.from_dict(mutated)


def test_a_yaml_alias_bomb_is_refused_before_anything_is_built():
    """Nine nested aliases turn 342 bytes into 9⁹ values ("billion laughs"): a 562-byte one took `survey check` 31 s
    and 377 MB. Refused on the composed node graph, before anything is built; bounded by CPU time."""
    import time

    from deniable.client.specfile import load_yaml

    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    started = time.process_time()
    with pytest.raises(SpecError, match="aliases expand to more than 100,000 values"):
        load_yaml("\n".join(lines))
    assert time.process_time() - started < 2
    # a few aliases for repeated options stay fine
    assert load_yaml("opts: &o [a, b, c]\nq1: *o\nq2: *o\n") == {"opts": ["a", "b", "c"], "q1": ["a", "b", "c"],
                                                                 "q2": ["a", "b", "c"]}
