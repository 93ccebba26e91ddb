import json
import math
import os
import random
import subprocess
import sys
from array import array
from fractions import Fraction

import pytest
from scipy import stats

from deniable.client import SpecError, Survey, posterior_bound, privacy_statement
from deniable.client.laplace import LaplaceMechanism
from deniable.client.mechanisms import _worst_ratio
from tests.conftest import ROOT
from tests.vectors import generate

VECTOR_SPECS = [Survey.from_dict(case["spec"]) for case in json.loads(generate.VECTORS.read_text())]
ALL_QUESTIONS = [(s.id, q.id) for s in VECTOR_SPECS for q in s.questions.values()]
SURVEYS = {s.id: s for s in VECTOR_SPECS}

# Chi-square tests: each column's p-value must exceed this. With about 150 columns in Python
# and as many in JS, a false failure somewhere has probability below 1e-6 per run.
GOF_ALPHA = 3e-9


def one_question(repeated=None, **question):
    return Survey.from_dict({"id": "s", "title": "t", "questions": [{"id": "q", "text": "?", **question}],
                             "repeated": repeated}).questions["q"]


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
    result = subprocess.run([node, str(ROOT / "src/deniable/client/js/tests/sample.mjs"), survey.canonical_json(), question_id, str(draws)],
                            capture_output=True, text=True, check=True, timeout=120)
    counts = json.loads(result.stdout)
    columns = _columns(mechanism)
    assert set(counts) == set(columns)
    for answer_key, column in columns.items():
        assert _chi_square_pvalue(counts[answer_key], column, draws) > GOF_ALPHA, f"answer {answer_key}"


SAMPLER_CASES = {
    "k_rr k=4 (32-bit denominator)": {"type": "choice", "options": list("abcd"), "privacy": {"design": "k_rr", "epsilon": "ln 3"}},
    "ordinal k=5 (denominator above 2^32)": {"type": "ordinal", "options": list("12345"), "privacy": {"design": "ordinal", "epsilon": 1}},
    "unary m=3": {"type": "multi_select", "options": list("abc"), "privacy": {"design": "unary", "epsilon": 2}},
    "laplace 0-6": {"type": "number", "min": 0, "max": 6, "step": 1, "privacy": {"design": "laplace", "epsilon": 2}},
    "laplace 0-1 step 0.25, small ε": {"type": "number", "min": 0, "max": 1, "step": 0.25, "privacy": {"design": "laplace", "epsilon": 0.3}},
}


def test_the_sampler_cases_cover_both_sides_of_2_to_the_32():
    small = one_question(**SAMPLER_CASES["k_rr k=4 (32-bit denominator)"]).mechanism
    large = one_question(**SAMPLER_CASES["ordinal k=5 (denominator above 2^32)"]).mechanism
    assert small._denominator <= 2**32 < large._sampler(0)[0]


@pytest.mark.parametrize("mode", ["fast", "bigint", "exact"])
@pytest.mark.parametrize("case", SAMPLER_CASES)
def test_every_javascript_sampling_path_fits_the_exact_channel(case, mode, node):
    """The 32-bit Number path, the BigInt path and the exact (no float) path of the numeric sampler
    draw from the same exact channel."""
    question = one_question(**SAMPLER_CASES[case])
    survey = Survey.from_dict({"id": "s", "title": "t", "questions": [{"id": "q", "text": "?", **SAMPLER_CASES[case]}]})
    draws = 4000
    result = subprocess.run([node, str(ROOT / "src/deniable/client/js/tests/sample.mjs"), survey.canonical_json(), "q", str(draws), mode],
                            capture_output=True, text=True, check=True, timeout=120)
    counts = json.loads(result.stdout)
    for answer_key, column in _columns(question.mechanism).items():
        assert _chi_square_pvalue(counts[answer_key], column, draws) > GOF_ALPHA, f"{case}, {mode}: answer {answer_key}"


@pytest.mark.parametrize("case", ["laplace 0-6", "laplace 0-1 step 0.25, small ε"])
def test_the_exact_path_of_the_numeric_sampler_fits_the_exact_channel(case, rng, monkeypatch):
    monkeypatch.setattr(LaplaceMechanism, "_float_margin", 1e300)  # never close enough to decide by floats
    mechanism = one_question(**SAMPLER_CASES[case]).mechanism
    draws = 4000
    for answer_key, column in _columns(mechanism).items():
        observed = {}
        for _ in range(draws):
            key = _key(mechanism.randomize(json.loads(answer_key), rng))
            observed[key] = observed.get(key, 0) + 1
        assert _chi_square_pvalue(observed, column, draws) > GOF_ALPHA, f"answer {answer_key}"


@pytest.mark.slow
@pytest.mark.parametrize("spec", [
    {"min": 0, "max": 100, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
    {"min": 0, "max": 1000, "step": 1, "privacy": {"design": "laplace", "epsilon": 0.01}},  # 1 − α ≈ 1e-5
    {"min": 0, "max": 10_000, "step": 1, "privacy": {"design": "laplace", "epsilon": 0.01}},  # 1 − α ≈ 1e-6: the smallest
    {"min": 0, "max": 2, "step": 1, "privacy": {"design": "laplace", "epsilon": 8}},
])
def test_the_float_estimate_decides_only_where_the_exact_comparison_agrees(spec):
    """The numeric sampler's inversion against the inequality that defines it, on the hardest inputs: U a
    hair either side of thresholds t(m) = 2α^m/(1 + α), and uniform ones. The sampler may defer from its
    float estimate to exact comparisons, but the magnitude it returns must be the exact one: the largest
    m ≤ 2N with U < t(m)."""
    mechanism = one_question(type="number", **spec).mechanism
    a, b = mechanism.alpha.numerator, mechanism.alpha.denominator
    cap = 2 * mechanism.points

    class Thirds:  # the bits after the first 64 (read only when they matter): 0101…, so U = (prefix + 1/3)/2^64
        def randbelow(self, n):
            return n // 3

    limits = {}  # m → the largest integer below 6a^m·2^64 / (b^(m−1)(a + b)), worked out once (20,000-bit powers)

    def exact(prefix):  # largest m ≤ cap with (3·prefix + 1)/(3·2^64) < 2a^m / (b^(m−1)(a + b)), by bisection
        def below(m):
            if m == 0:
                return True
            if m not in limits:
                limits[m] = (2 * a**m * 3 * 2**64 - 1) // (b ** (m - 1) * (a + b))
            return 3 * prefix + 1 <= limits[m]
        low, high = 0, cap
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if below(middle) else (low, middle - 1)
        return low

    checked = sorted(set(range(1, min(cap, 40) + 1)) | set(range(1, cap + 1, max(1, cap // 60))) | {cap})
    prefixes = [int(2 * Fraction(a, b) ** m / (1 + Fraction(a, b)) * 2**64) + offset
                for m in checked for offset in (-2, -1, 0, 1, 2)]
    generator = random.Random(7)
    prefixes += [generator.randrange(1, 2**64) for _ in range(1000)] + [1, 2, 2**64 - 1]
    # just past the batch's slack either side of a threshold, where its bisection (not the exact path) decides
    prefixes += [int(p * (1 + sign * k * 1e-7)) for p in prefixes[:5 * len(checked):5] for sign in (-1, 1) for k in (1, 1.5, 3)]
    prefixes = [p for p in prefixes if 0 < p < 2**64]
    for prefix in prefixes:
        assert mechanism._magnitude(Thirds(), prefix) == exact(prefix), f"prefix {prefix}"

    class Block(Thirds):  # the words a batch takes: each prefix's two, then a sign word saying +
        def take(self, count):
            words = [word for prefix in prefixes for word in (prefix >> 32, prefix & 0xFFFFFFFF, 0)]
            assert count == len(words)
            return words

    # randomize_many bisects the thresholds' logarithms: from the grid's first point, each report is the magnitude
    reports = mechanism._draw_many([mechanism.answers[0]] * len(prefixes), Block())
    for prefix, report in zip(prefixes, reports):
        assert mechanism.report_index(report) == exact(prefix), f"prefix {prefix}"


def test_default_source_is_secrets_and_draws_vary():
    mechanism = one_question(type="yes_no").mechanism
    reports = {mechanism.randomize("yes") for _ in range(200)}
    assert reports == {"yes", "no"}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_never_replays_its_parent_s_buffered_words():
    """The default source buffers the operating system's words; a child made by fork must draw its own, not the ones its
    parent holds and is about to use (two respondents' reports would share their randomness)."""
    from deniable.client.randomness import default_source

    default_source().word()  # the parent's pool now holds 255 unread words
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.close(read)
        os.write(write, array("I", [default_source().word() for _ in range(16)]).tobytes())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        in_child = array("I", pipe.read())
    os.waitpid(child, 0)
    in_parent = array("I", [default_source().word() for _ in range(16)])
    assert len(in_child) == 16 and in_child != in_parent


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
    script = ("import { Survey } from './src/deniable/client/js/deniable.js';"
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
    # the documented floor itself is accepted, also where it is met from below over a 1001-point grid
    floor = Survey.from_dict({"id": "s", "title": "t", "questions": [
        {"id": "n", "text": "?", "type": "number", "min": 0, "max": 1000, "privacy": {"design": "laplace", "epsilon": 0.01}}]})
    assert floor.questions["n"].epsilon == pytest.approx(0.01, rel=1e-4)


BATCH_CASES = {
    "coin flip": ({"type": "yes_no"}, ["yes", "no"]),
    "k_rr k=4": (SAMPLER_CASES["k_rr k=4 (32-bit denominator)"], list("abcd")),
    "ordinal k=5 (denominator above 2^32)": (SAMPLER_CASES["ordinal k=5 (denominator above 2^32)"], list("15")),
    "unary m=3": (SAMPLER_CASES["unary m=3"], [["a"], []]),
    "laplace 0-6": (SAMPLER_CASES["laplace 0-6"], [0, 3]),
    # a panel's composite channels: the bulk loop must draw the instantaneous layer too (a number's once did not)
    "k_rr k=4, repeated": (SAMPLER_CASES["k_rr k=4 (32-bit denominator)"] | {"repeated": True}, list("abcd")),
    "unary m=3, repeated": (SAMPLER_CASES["unary m=3"] | {"repeated": True}, [["a"], []]),
    "laplace 0-6, repeated": (SAMPLER_CASES["laplace 0-6"] | {"repeated": {"instant_epsilon": 2}}, [0, 3]),
}


@pytest.mark.parametrize("case", BATCH_CASES)
def test_randomize_many_draws_from_the_exact_channel(case):
    spec, answers = BATCH_CASES[case]
    mechanism = one_question(**spec).mechanism
    draws = 6000
    reports = mechanism.randomize_many([answer for answer in answers for _ in range(draws)])
    columns = _columns(mechanism)
    for position, answer in enumerate(answers):
        observed = {}
        for report in reports[position * draws:(position + 1) * draws]:
            observed[_key(report)] = observed.get(_key(report), 0) + 1
        assert _chi_square_pvalue(observed, columns[_key(answer)], draws) > GOF_ALPHA, f"answer {answer!r}"


@pytest.mark.parametrize("case", BATCH_CASES)
def test_randomize_many_with_a_scripted_source_is_randomize_one_by_one(case):
    from tests.conftest import SeededSource

    spec, answers = BATCH_CASES[case]
    mechanism = one_question(**spec).mechanism
    batch, one_by_one = answers * 50, SeededSource(11)
    assert mechanism.randomize_many(batch, SeededSource(11)) == [mechanism.randomize(a, one_by_one) for a in batch]


def test_randomize_many_checks_every_answer_before_drawing_any():
    mechanism = one_question(type="choice", options=list("abc"), privacy={"design": "k_rr", "epsilon": 1}).mechanism

    class Counting:
        draws = 0

        def randbelow(self, n):
            Counting.draws += 1
            return 0

    with pytest.raises(ValueError, match=r"answers\[2\]: answer 'd' is not one of"):
        mechanism.randomize_many(["a", "b", "d", "c"], Counting())
    assert Counting.draws == 0
    assert mechanism.randomize_many([]) == []


@pytest.mark.parametrize("n", [1, 3, 2**32 - 5, 2**32, 2**32 + 7, 3 * 2**70 + 1])
def test_the_word_pool_draws_uniformly_below_n(n):
    from deniable.client.randomness import WordPool

    pool = WordPool(256)
    draws = [pool.randbelow(n) for _ in range(6000)]
    assert all(0 <= d < n for d in draws)
    if n > 1:  # up to six near-equal bins of [0, n): a chi-square on the bin counts
        k = min(6, n)
        bins = [0] * k
        for d in draws:
            bins[d * k // n] += 1
        edges = [-(-i * n // k) for i in range(k + 1)]  # the first integer in each bin
        expected = [(edges[i + 1] - edges[i]) / n * 6000 for i in range(k)]
        assert stats.chisquare(bins, expected).pvalue > GOF_ALPHA


def test_the_word_pool_s_own_draw_is_the_word_source_s_on_the_same_words(monkeypatch):
    """`WordPool.randbelow` reads its buffer in place (one call per draw); on the same words it must draw what the
    shared algorithm (`WordSource.randbelow`: `below`, then `word`) draws, rejections and refills included, or the
    Python client would stop being the JS client's twin."""
    import random

    from deniable.client import randomness

    stream = random.Random(7)

    def scripted(count):  # words near 2^32 often, so rejection at n near 2^32 is exercised
        return b"".join((stream.choice([stream.getrandbits(32), 2**32 - 1 - stream.getrandbits(3)])).to_bytes(4, "little")
                        for _ in range(count // 4))

    monkeypatch.setattr(randomness.os, "urandom", scripted)
    fast, shared = randomness.WordPool(64), randomness.WordPool(64)
    limits = [1, 2, 3, 10, 12, 1000, 2**31 + 1, 2**32 - 5, 2**32, 2**32 + 7, 3 * 2**70 + 1]
    stream.seed(7)
    drawn = [fast.randbelow(n) for _ in range(300) for n in limits]
    stream.seed(7)
    expected = [randomness.WordSource.randbelow(shared, n) for _ in range(300) for n in limits]
    assert drawn == expected
    with pytest.raises(ValueError):
        fast.randbelow(0)


@pytest.mark.parametrize("low, high, step, epsilon", [(0, 4, 1, 1), (0, 1000, 1, "ln 3"), (-1, 1, 0.5, 0.05),
                                                      (0, 10, 2, 7), (0, 100, 1, 0.5)])
def test_a_numbers_epsilon_in_closed_form_never_understates_the_exact_one(low, high, step, epsilon):
    """N·ln(1/α) rounded upward, against ε from the exact e^ε = α^−N: equal to a few ulps, never below."""
    from deniable.client import Survey
    from deniable.client.exact import epsilon_of

    mechanism = Survey.from_dict({"id": "v", "title": "v", "questions": [
        {"id": "q", "type": "number", "text": "?", "min": low, "max": high, "step": step,
         "privacy": {"design": "laplace", "epsilon": epsilon}}]}).questions["q"].mechanism
    exact = epsilon_of(mechanism.exp_epsilon)
    assert exact <= mechanism.epsilon <= exact * (1 + 1e-14)
    assert mechanism.is_private
