import json
import math
import subprocess
import sys
from fractions import Fraction

import pytest
from scipy import stats

from deniable.client import SpecError, Survey, posterior_bound, privacy_statement
from deniable.client.mechanisms import _worst_ratio
from tests.conftest import ROOT
from tests.vectors import generate

VECTOR_SPECS = [Survey.from_dict(case["spec"]) for case in json.loads(generate.VECTORS.read_text())]
ALL_QUESTIONS = [(s.id, q.id) for s in VECTOR_SPECS for q in s.questions.values()]
SURVEYS = {s.id: s for s in VECTOR_SPECS}

# Chi-square tests: each column's p-value must exceed this. With about 150 columns in Python
# and as many in JS, a false failure somewhere has probability below 1e-6 per run.
GOF_ALPHA = 3e-9


def one_question(**question):
    return Survey.from_dict({"id": "s", "title": "t", "questions": [{"id": "q", "text": "?", **question}]}).questions["q"]


def test_coin_flip_design_of_the_seeds():
    mechanism = one_question(type="yes_no").mechanism
    assert mechanism.design == "forced_response"
    assert mechanism.probability("yes", "yes") == Fraction(3, 4)
    assert mechanism.probability("yes", "no") == Fraction(1, 4)
    assert mechanism.exp_epsilon == 3
    assert mechanism.epsilon == pytest.approx(math.log(3), abs=1e-15)
    # Tammy's prior of 0.02 becomes about 0.058 (seed 001, slide 14)
    assert posterior_bound(0.02, mechanism.epsilon) == pytest.approx(0.02 * 0.75 / (0.02 * 0.75 + 0.98 * 0.25))
    assert round(posterior_bound(0.02, mechanism.epsilon), 3) == 0.058
    assert "at most 5.8% sure" in privacy_statement(mechanism.epsilon)


def test_warner_p_three_quarters_is_the_coin_flip_channel():
    assert one_question(type="yes_no", privacy={"design": "warner", "p": "3/4"}).mechanism.channel() == \
        one_question(type="yes_no").mechanism.channel()


def test_posterior_bound_edges():
    assert posterior_bound(0.3, math.inf) == 1.0
    assert posterior_bound(0.0, 5.0) == 0.0
    assert posterior_bound(0.3, 0.0) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        posterior_bound(1.5, 1.0)
    assert "not randomized" in privacy_statement(math.inf)


def test_vectors_file_is_what_the_generator_writes():
    assert generate.VECTORS.read_text(encoding="utf-8") == generate.render(), \
        "run `python tests/vectors/generate.py` after changing a mechanism"


@pytest.mark.parametrize("survey_id,question_id", ALL_QUESTIONS)
def test_channel_is_column_stochastic_and_epsilon_matches_enumeration(survey_id, question_id):
    mechanism = SURVEYS[survey_id].questions[question_id].mechanism
    channel = mechanism.channel()
    for column in zip(*channel):
        assert sum(column) == 1
        assert min(column) >= 0
    # ε enumerated over every (report, answer, answer') triple of the full matrix
    enumerated = None
    unbounded = False
    for row in channel:
        for p in row:
            for q in row:
                if p > 0 and q == 0:
                    unbounded = True
                elif q > 0:
                    enumerated = p / q if enumerated is None else max(enumerated, p / q)
    assert mechanism.exp_epsilon == (None if unbounded else enumerated)
    assert mechanism.epsilon == (math.inf if unbounded else pytest.approx(math.log(enumerated), rel=1e-15))


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1, "ln 3", math.log(3), 2, 3.3, 7])
@pytest.mark.parametrize("question", [
    dict(type="yes_no", privacy={"design": "k_rr"}),
    dict(type="choice", options=list("abcde"), privacy={"design": "k_rr"}),
    dict(type="ordinal", options=list("1234567"), privacy={"design": "ordinal"}),
    dict(type="ordinal", options=list("12"), privacy={"design": "ordinal"}),
    dict(type="multi_select", options=list("abcd"), privacy={"design": "unary"}),
    dict(type="multi_select", options=list("abc"), privacy={"design": "unary", "variant": "optimized"}),
    dict(type="number", min=0, max=20, step=2, privacy={"design": "laplace"}),
    dict(type="number", min=-1, max=1, step=0.25, privacy={"design": "laplace"}),
])
def test_requested_epsilon_is_met_from_below(epsilon, question):
    question = json.loads(json.dumps(question))
    question["privacy"]["epsilon"] = epsilon
    mechanism = one_question(**question).mechanism
    requested = math.log(3) if epsilon == "ln 3" else epsilon
    bound = mechanism.exp_epsilon
    # the exact ratio never exceeds e^ε (checked without floats where e^ε is rational)
    if epsilon == "ln 3" and question["type"] in ("yes_no", "choice"):
        assert bound == 3
    assert bound <= Fraction(math.exp(requested)) * (1 + Fraction(1, 10**12))
    assert mechanism.epsilon <= requested + 1e-12
    # …and spends (nearly) all of it: a budget left unused is accuracy thrown away
    assert mechanism.epsilon >= requested * 0.99 - 1e-6


@pytest.mark.parametrize("survey_id,question_id", ALL_QUESTIONS)
def test_reported_epsilon_never_understates_the_exact_ratio(survey_id, question_id):
    from decimal import Decimal, localcontext

    mechanism = SURVEYS[survey_id].questions[question_id].mechanism
    if mechanism.exp_epsilon is None:
        assert mechanism.epsilon == math.inf
        return
    with localcontext() as context:
        context.prec = 60
        exact = (Decimal(mechanism.exp_epsilon.numerator) / Decimal(mechanism.exp_epsilon.denominator)).ln()
        assert Decimal(mechanism.epsilon) >= exact
        assert Decimal(mechanism.epsilon) - exact < Decimal("1e-14") * max(exact, Decimal(1))


def test_tiny_and_huge_ratios_keep_epsilon_exact_enough():
    from deniable.client.exact import epsilon_of

    tiny = Fraction(10**15 + 1, 10**15)  # ε ≈ 1e-15: ln of a float near 1 would be all rounding error
    true_epsilon = 1e-15 - 0.5e-30  # ln(1 + x) = x − x²/2 + …
    assert true_epsilon <= epsilon_of(tiny) <= true_epsilon * (1 + 1e-15)
    huge = Fraction(10**400)  # beyond float range
    assert epsilon_of(huge) == pytest.approx(400 * math.log(10))
    assert epsilon_of(Fraction(1)) == 0.0


def test_unary_epsilon_is_the_product_of_its_bits_by_enumeration():
    mechanism = one_question(type="multi_select", options=list("abc"),
                             privacy={"design": "unary", "epsilon": 1.5, "variant": "optimized"}).mechanism
    assert len(mechanism.answers) == 8
    assert _worst_ratio(mechanism.channel()) == mechanism.exp_epsilon


def test_laplace_shortcut_equals_enumeration_and_alphabet_is_clamped():
    mechanism = one_question(type="number", min=10, max=20, step=2, privacy={"design": "laplace", "epsilon": 2}).mechanism
    assert mechanism.answers == [10, 12, 14, 16, 18, 20]
    assert mechanism.reports == list(range(0, 32, 2))  # min − range … max + range
    assert _worst_ratio(mechanism.channel()) == mechanism.exp_epsilon
    assert mechanism.validate_answer(13) == 14  # ties snap upward
    assert mechanism.validate_answer(10) == 10 and mechanism.validate_answer(20) == 20
    for outside in (-50, 9.99, 20.5, 99):  # refused, never clamped
        with pytest.raises(ValueError, match="outside 10 to 20"):
            mechanism.validate_answer(outside)
    for bad in (31, 1, -2, "12", True, None):
        with pytest.raises(ValueError):
            mechanism.validate_report(bad)


def test_alphabets_are_enforced():
    mechanism = one_question(type="yes_no").mechanism
    for bad in ("Yes", True, 1, None, ["yes"]):
        with pytest.raises(ValueError):
            mechanism.randomize(bad)
        with pytest.raises(ValueError):
            mechanism.validate_report(bad)
    multi = one_question(type="multi_select", options=list("ab"), privacy={"design": "unary", "epsilon": 1}).mechanism
    assert multi.validate_report(["b", "a"]) == ["a", "b"]
    for bad in (["a", "a"], ["c"], "a", [1]):
        with pytest.raises(ValueError):
            multi.validate_report(bad)


def _chi_square_pvalue(observed: dict, column: dict, draws: int) -> float:
    """Pearson's test with cells of expected count < 5 pooled into one."""
    big = [r for r, p in column.items() if p * draws >= 5]
    small = [r for r, p in column.items() if 0 < p * draws < 5]
    for r, p in column.items():
        if p == 0:
            assert observed.get(r, 0) == 0, f"report {r} has probability 0 but was drawn"
    assert sum(observed.values()) == draws
    obs = [observed.get(r, 0) for r in big]
    exp = [float(column[r]) * draws for r in big]
    if small:
        obs.append(sum(observed.get(r, 0) for r in small))
        exp.append(draws - sum(exp))
    if len(obs) < 2:
        return 1.0
    return stats.chisquare(obs, exp).pvalue


def _key(value) -> str:
    return json.dumps(value, separators=(",", ":"))  # as JavaScript's JSON.stringify writes it


def _columns(mechanism):
    keys = [_key(r) for r in mechanism.reports]
    return {_key(a): {k: mechanism.probability(r, a) for k, r in zip(keys, mechanism.reports)}
            for a in mechanism.answers}


@pytest.mark.parametrize("survey_id,question_id", ALL_QUESTIONS)
def test_python_samples_fit_the_exact_channel(survey_id, question_id, rng):
    mechanism = SURVEYS[survey_id].questions[question_id].mechanism
    draws = 4000
    for answer_key, column in _columns(mechanism).items():
        answer = json.loads(answer_key)
        observed = {}
        for _ in range(draws):
            key = _key(mechanism.randomize(answer, rng))
            observed[key] = observed.get(key, 0) + 1
        assert _chi_square_pvalue(observed, column, draws) > GOF_ALPHA, f"answer {answer_key}"


@pytest.mark.parametrize("survey_id,question_id", ALL_QUESTIONS)
def test_javascript_samples_fit_the_exact_channel(survey_id, question_id, node):
    survey = SURVEYS[survey_id]
    mechanism = survey.questions[question_id].mechanism
    draws = 4000
    result = subprocess.run([node, str(ROOT / "client/js/tests/sample.mjs"), survey.canonical_json(), question_id, str(draws)],
                            capture_output=True, text=True, check=True, timeout=120)
    counts = json.loads(result.stdout)
    columns = _columns(mechanism)
    assert set(counts) == set(columns)
    for answer_key, column in columns.items():
        assert _chi_square_pvalue(counts[answer_key], column, draws) > GOF_ALPHA, f"answer {answer_key}"


def test_default_source_is_secrets_and_draws_vary():
    mechanism = one_question(type="yes_no").mechanism
    reports = {mechanism.randomize("yes") for _ in range(200)}
    assert reports == {"yes", "no"}


def test_client_imports_only_the_standard_library():
    code = ("import sys; before = set(sys.modules); import deniable.client; "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "print(sorted(new - set(sys.stdlib_module_names) - {'deniable'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


PRIVACY_MISTAKES = [
    ({"desgin": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}, "is 'desgin' a misspelling of 'design'?"),
    ({"Design": "k_rr", "epsilon": 1}, "is 'Design' a misspelling of 'design'?"),
    ({"epsilon": 1}, "keys given: 'epsilon'"),
    ({"design": "k_rr", "epsilon": "1e-9"}, "so close to 0"),
    ({"design": "k_rr", "epsilon": 0.005}, "ε = 0.005 is so close to 0"),
    ({"design": "warner", "p": "0.501"}, "so close to 0"),
]


@pytest.mark.parametrize("privacy, message", PRIVACY_MISTAKES)
def test_privacy_mistakes_are_named_alike_by_both_twins(privacy, message, node):
    """A misspelt key is named (not "unknown design None"); ε ≈ 0 is refused: the report would carry
    nothing. The JavaScript twin refuses with the same words."""
    spec = {"id": "s", "title": "t", "questions": [{"id": "q", "text": "?", "type": "yes_no", "privacy": privacy}]}
    with pytest.raises(SpecError) as python:
        Survey.from_dict(spec)
    assert message in str(python.value) and "question 'q'.privacy" in str(python.value)
    script = ("import { Survey } from './client/js/deniable.js';"
              "try { Survey.fromSpec(JSON.parse(process.argv[1])); console.log('accepted'); }"
              "catch (error) { console.log(error.message); }")
    javascript = subprocess.run([node, "--input-type=module", "-e", script, json.dumps(spec)], cwd=ROOT,
                                capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert javascript == str(python.value)


def test_a_small_but_real_epsilon_and_a_weak_one_are_accepted_the_weak_one_flagged():
    ok = Survey.from_dict({"id": "s", "title": "t", "questions": [
        {"id": "q", "text": "?", "type": "yes_no", "privacy": {"design": "k_rr", "epsilon": 0.05}},
        {"id": "w", "text": "?", "type": "yes_no", "privacy": {"design": "k_rr", "epsilon": 50}}]})
    assert ok.questions["q"].epsilon == pytest.approx(0.05, abs=1e-6)
    flagged = [w for w in ok.warnings if "little protection" in w]
    assert len(flagged) == 1 and "'w'" in flagged[0] and "100% sure" in flagged[0]
    at_threshold = Survey.from_dict({"id": "s", "title": "t", "questions": [
        {"id": "q", "text": "?", "type": "yes_no", "privacy": {"design": "k_rr", "epsilon": 3.8}}]})
    assert not [w for w in at_threshold.warnings if "little protection" in w]
