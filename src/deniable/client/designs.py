"""Designs: each builds one of the mechanism shapes from a question's spec parameters.

`build` is the one entry: the question type and its ``privacy`` mapping in, a `Mechanism` out, with
every parameter checked and ε computed from the exact channel. Twin of the JS client's
``src/designs.js``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from . import compliance
from .compliance import respondent_text
from .exact import EpsilonRequest, integer_root, parse_fraction
from .laplace import LaplaceMechanism
from .mechanisms import YES_NO, ChannelMechanism, Mechanism, OrdinalMechanism, SymmetricMechanism, UnaryMechanism
from .privacy import MIN_EPSILON

#: Resolution of the searched base of the ordinal design's exponential weights.
ORDINAL_BASE_BITS = 20


def _probability(params: dict, name: str, where: str) -> Fraction:
    if name not in params:
        raise ValueError(f"{where}.{name}: missing")
    value = parse_fraction(params[name], f"{where}.{name}")
    if not 0 <= value <= 1:
        raise ValueError(f"{where}.{name}: must be between 0 and 1, got {params[name]!r}")
    return value


def _binary(design, params, yes_given_yes: Fraction, yes_given_no: Fraction):
    if yes_given_yes == yes_given_no:
        raise ValueError(f"privacy: this {design} design sends the same report whatever the answer; "
                         "nothing about the population could be estimated")
    columns = [[yes_given_yes, 1 - yes_given_yes], [yes_given_no, 1 - yes_given_no]]
    return ChannelMechanism(design, params, YES_NO, YES_NO, columns)


def forced_response(params: dict, where: str, text=None):
    """With probability ``truth`` report the true answer, else report ``yes`` or ``no`` as forced.

    Default: the coin-flip design (truth 1/2, yes 1/4, no 1/4), P(yes|yes) = 3/4,
    P(yes|no) = 1/4, ε = ln 3. With ``randomizer: {text: …}`` the respondent draws, not the device,
    by a natural randomizer with the stated probabilities ("if your mother's birthday is in January or
    February, answer yes; …"), and the page takes the answer already randomized.
    """
    truth, yes, no = (_probability(params, n, where) for n in ("truth", "yes", "no"))
    if truth + yes + no != 1:
        raise ValueError(f"{where}: truth + yes + no must be 1, got {truth} + {yes} + {no} = {truth + yes + no}")
    if truth == 0:
        raise ValueError(f"{where}.truth: must be greater than 0, or the report carries no information")
    normalized: dict = {"design": "forced_response", "truth": str(truth), "yes": str(yes), "no": str(no)}
    randomizer = params.get("randomizer")
    if randomizer is not None:
        if not isinstance(randomizer, dict) or set(randomizer) != {"text"}:
            raise ValueError(f"{where}.randomizer: a mapping with the one key 'text' (the instruction the respondent "
                             f"follows, e.g. 'If your mother's birthday is in January or February, answer yes; …'), "
                             f"got {randomizer!r}")
        normalized["randomizer"] = {"text": respondent_text(randomizer["text"], f"{where}.randomizer.text", text)}
    mechanism = _binary("forced_response", normalized, truth + yes, yes)
    mechanism.respondent_randomizes = randomizer is not None
    return mechanism


def warner(params: dict, where: str):
    """Warner (1965): with probability ``p`` answer "Is the statement true of you?", else its negation."""
    p = _probability(params, "p", where)
    if p == Fraction(1, 2):
        raise ValueError(f"{where}.p: 1/2 makes the report independent of the answer; choose p ≠ 1/2")
    return _binary("warner", {"design": "warner", "p": str(p)}, p, 1 - p)


def unrelated_question(params: dict, where: str):
    """With probability ``p`` answer the sensitive question, else an innocuous one whose "yes"
    prevalence ``innocuous_yes`` is known (e.g. "Were you born in April?")."""
    p = _probability(params, "p", where)
    innocuous = _probability(params, "innocuous_yes", where)
    if p == 0:
        raise ValueError(f"{where}.p: must be greater than 0, or the report carries no information")
    normalized = {"design": "unrelated_question", "p": str(p), "innocuous_yes": str(innocuous)}
    return _binary("unrelated_question", normalized, p + (1 - p) * innocuous, (1 - p) * innocuous)


#: The reports of the respondent-side designs: what the respondent chooses, already randomized.
CROSSWISE_REPORTS = ("same", "different")
TRIANGULAR_REPORTS = ("no_to_both", "other")


def _companion_share(params: dict, where: str) -> Fraction:
    p = _probability(params, "p", where)
    if not 0 < p < 1:
        raise ValueError(f"{where}.p: must be strictly between 0 and 1 (the known share of 'yes' to the companion "
                         f"question), got {params['p']!r}")
    return p


def crosswise(params: dict, where: str, text=None):
    """Crosswise (Yu, Tian & Tang 2008): the respondent answers one combined question, whether their
    answers to the sensitive question and to a companion question whose "yes" share ``p`` is known
    (e.g. "Is your mother's birthday in January, February or March?", p = 1/4) are the same or
    different. P(same | yes) = p, P(same | no) = 1 − p; ε = |ln(p / (1 − p))|. Nothing true is typed."""
    p = _companion_share(params, where)
    if p == Fraction(1, 2):
        raise ValueError(f"{where}.p: 1/2 makes 'same' and 'different' equally likely whatever the answer, so the "
                         "report says nothing; choose a companion question whose 'yes' share is known and not 1/2")
    companion = respondent_text(params.get("companion"), f"{where}.companion", text)
    normalized = {"design": "crosswise", "companion": companion, "p": str(p)}
    mechanism = ChannelMechanism("crosswise", normalized, YES_NO, list(CROSSWISE_REPORTS), [[p, 1 - p], [1 - p, p]])
    mechanism.respondent_randomizes = True
    return mechanism


def triangular(params: dict, where: str, text=None):
    """Triangular (Yu, Tian & Tang 2008): the respondent chooses "A: no to both questions" or "B: any other
    combination" of the sensitive question and a companion question with known "yes" share ``p``.
    P(B | yes) = 1, P(B | no) = p: one-sided, A is only ever chosen by a "no" (ε = ∞; crosswise is
    the two-sided alternative)."""
    p = _companion_share(params, where)
    companion = respondent_text(params.get("companion"), f"{where}.companion", text)
    normalized = {"design": "triangular", "companion": companion, "p": str(p)}
    mechanism = ChannelMechanism("triangular", normalized, YES_NO, list(TRIANGULAR_REPORTS),
                                 [[Fraction(0), Fraction(1)], [1 - p, p]])
    mechanism.respondent_randomizes = True
    return mechanism


def _exp_bound(request: EpsilonRequest, where: str, divisor: int = 1) -> Fraction:
    bound = request.exp_lower_bound(divisor)
    if bound <= 1:
        raise ValueError(f"{where}.epsilon: too small to give this question any signal ({divisor} part(s) of "
                         f"{float(request):.3g} each round to no information); choose a larger epsilon")
    return bound


def _epsilon(params: dict, where: str) -> EpsilonRequest:
    """The design's ε, which it requires."""
    request = _epsilon_or(params, where)
    assert request is not None  # without an alternative, a missing ε is refused
    return request


def _epsilon_or(params: dict, where: str, alternative: str | None = None) -> EpsilonRequest | None:
    if "epsilon" in params and alternative and alternative in params:
        raise ValueError(f"{where}: give either epsilon or {alternative}, not both")
    if "epsilon" in params:
        return EpsilonRequest.parse(params["epsilon"], f"{where}.epsilon")
    if alternative and alternative in params:
        return None
    wanted = "epsilon" + (f" or {alternative}" if alternative else "")
    raise ValueError(f"{where}: {wanted} is required")


def k_rr(params: dict, where: str, options):
    """Generalized (k-ary) randomized response: the true option with probability ``p_truth``,
    each other option with (1 − p_truth)/(k − 1). Given ``epsilon``, p_truth = L/(L + k − 1)
    with the largest grid rational L ≤ e^ε."""
    k = len(options)
    request = _epsilon_or(params, where, "p_truth")
    if request is not None:
        bound = _exp_bound(request, where)
        p_truth = bound / (bound + k - 1)
        normalized = {"design": "k_rr", "epsilon": request.canonical()}
    else:
        p_truth = _probability(params, "p_truth", where)
        if p_truth <= Fraction(1, k):
            raise ValueError(f"{where}.p_truth: must exceed 1/{k} (one over the number of options), got {params['p_truth']!r}")
        normalized = {"design": "k_rr", "p_truth": str(p_truth)}
    return SymmetricMechanism("k_rr", normalized, options, p_truth, (1 - p_truth) / (k - 1))


def ordinal(params: dict, where: str, options):
    """Ordinal randomized response for Likert scales: the exponential mechanism with utility
    −|i − j|, P(j | i) ∝ w^|i−j|. Reports near the truth are likelier. Given ``epsilon``, the
    base w = n/2^20 is the smallest on that grid whose exact channel has e^ε ≤ L ≤ e^ε
    (w^−(k−1) ≤ L solved for n in integers, see `OrdinalMechanism`; the textbook w = e^(−ε/2Δ)
    spends less of the budget than allowed)."""
    request = _epsilon(params, where)
    bound = _exp_bound(request, where)
    degree, scale = len(options) - 1, 2**ORDINAL_BASE_BITS
    # the smallest n with n^(k−1) · L ≥ scale^(k−1), L = bound as a fraction
    target = -(-(scale**degree * bound.denominator) // bound.numerator)
    root = integer_root(target, degree)
    n = root if root**degree >= target else root + 1
    normalized = {"design": "ordinal", "epsilon": request.canonical()}
    return OrdinalMechanism("ordinal", normalized, options, Fraction(n, scale))


def unary(params: dict, where: str, options):
    """Unary encoding for multi-select: each option's bit is randomized on its own, with ε/m per
    bit (m options; an answer may change every bit). ``variant: symmetric`` (default, basic
    RAPPOR) keeps each bit with L/(1 + L); ``variant: optimized`` (OUE) reports a 1 as 1 with
    probability 1/2 and a 0 as 1 with 1/(2L), which lowers the variance of rare options."""
    variant = params.get("variant", "symmetric")
    if variant not in ("symmetric", "optimized"):
        raise ValueError(f"{where}.variant: must be 'symmetric' or 'optimized', got {variant!r}")
    request = _epsilon(params, where)
    bound = _exp_bound(request, where, len(options))
    if variant == "symmetric":
        keep_one = bound / (1 + bound)
        flip_zero = 1 - keep_one
    else:
        keep_one, flip_zero = Fraction(1, 2), 1 / (2 * bound)
    normalized = {"design": "unary", "epsilon": request.canonical(), "variant": variant}
    return UnaryMechanism("unary", normalized, options, keep_one, flip_zero)


def laplace(params: dict, where: str, minimum, maximum, step):
    """Discrete Laplace on the grid; see `LaplaceMechanism`. α = 1/L, L ≤ e^(ε/N)."""
    request = _epsilon(params, where)
    points = int((maximum - minimum) / step)
    alpha = 1 / _exp_bound(request, where, points)
    normalized = {"design": "laplace", "epsilon": request.canonical()}
    return LaplaceMechanism("laplace", normalized, minimum, maximum, step, alpha)


def public(question_type: str, options=None, grid=None):
    """``privacy: none``: the answer is sent as is (ε = ∞)."""
    params = {"design": "none"}
    if question_type == "yes_no":
        return ChannelMechanism("none", params, YES_NO, YES_NO, [[1, 0], [0, 1]])
    if question_type in ("choice", "ordinal"):
        return SymmetricMechanism("none", params, options, Fraction(1), Fraction(0))
    if question_type == "multi_select":
        return UnaryMechanism("none", params, options, Fraction(1), Fraction(0))
    low, high, step = grid
    return LaplaceMechanism("none", params, low, high, step, alpha=None)


#: How analysis estimates a design's mechanism (`analysis.from_counts.ESTIMATORS` names an estimator for each): a yes/no
#: channel of two numbers; the symmetric channel of k-ary randomized response; a channel matrix on the simplex of
#: answers (ordinal scales); independent bits per option (multi-select); a numeric grid; a design with groups.
SHAPES = ("binary", "symmetric", "channel", "unary", "numeric", "grouped")


@dataclass(frozen=True)
class Design:
    """One design and every part of it, named here so a contributor who adds or changes one finds them all (a test,
    tests/docs/test_design_units.py, fails when a part is missing): the question types it serves and the parameters it
    accepts; its builder (``build(params, where, options, grid, text)``, checked and exact) and its JavaScript twin
    (the builder of the same name in client/js/src/designs.js); how analysis estimates it (``shape``, one of
    `SHAPES`); its section in docs/mechanisms.md (``docs``, the heading's text); the catalogue words of its privacy
    statement when the respondent randomizes (``respondent_words``: how, and the fact the guarantee assumes unknown);
    for a yes/no design, the textbook parameter sets a plan sets beside a survey's own (``references``: label →
    privacy field; `analysis.precision.compare_yes_no_designs`, a test checks every yes/no design has one) and the
    non-compliance it measures (``measures``); for a design the device can randomize, the question its ε audit draws
    from (``audit``: a label, the question's fields, the draws per answer; tests/support/epsilon_audit.py finds the
    worst pair of answers and the event from the exact channel, and a test fails when such a design has none; a
    design only the respondent randomizes draws nothing on the device to audit); its cases in the shared vectors are
    found by name in tests/vectors/channels.json."""
    types: tuple[str, ...]
    params: tuple[str, ...]
    build: Callable[..., Mechanism]
    shape: str
    docs: str
    respondent_words: tuple[str, str] | None = None
    references: tuple[tuple[str, dict], ...] = ()
    measures: str | None = None
    audit: tuple[str, dict, int] | None = None


_RESPONDENT_DRAW = ("respondent_instruction", "respondent_draw_fact")
_RESPONDENT_COMPANION = ("respondent_combined", "respondent_companion_fact")

#: design name → its `Design`, in the JS twin's order (a refusal lists the designs in this order on both).
DESIGNS = {
    "forced_response": Design(
        types=("yes_no",), params=("truth", "yes", "no", "randomizer"),
        build=lambda params, where, options, grid, text: forced_response(params, where, text),
        shape="binary", docs="`forced_response` (yes_no)", respondent_words=_RESPONDENT_DRAW,
        references=(("forced response, coin (1/2, 1/4, 1/4)",
                     {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}),),
        audit=("forced_response 1/2, 1/4, 1/4", {"type": "yes_no", "privacy": {
            "design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}, 20000)),
    "crosswise": Design(
        types=("yes_no",), params=("companion", "p"),
        build=lambda params, where, options, grid, text: crosswise(params, where, text),
        shape="binary", docs="Designs in which the respondent randomizes", respondent_words=_RESPONDENT_COMPANION,
        references=(("crosswise (p 1/4)", {"design": "crosswise", "p": "1/4", "companion": "…"}),)),
    "cheating_detection": Design(
        types=("yes_no",), params=("groups",),
        build=lambda params, where, options, grid, text: compliance.cheating_detection(params, where, text),
        shape="grouped", docs="Designs that measure compliance", respondent_words=_RESPONDENT_DRAW,
        references=(("cheating detection (yes 1/3 | 2/3)", {"design": "cheating_detection", "groups": {
                        "a": {"yes": "1/3", "randomizer": "…"}, "b": {"yes": "2/3", "randomizer": "…"}}}),
                    ("cheating detection, symmetric (2/3, 1/12 | 1/12, 2/3)", {"design": "cheating_detection", "groups": {
                        "a": {"yes": "2/3", "no": "1/12", "randomizer": "…"},
                        "b": {"yes": "1/12", "no": "2/3", "randomizer": "…"}}})),
        measures="anyone saying no regardless (γ)"),
    "stochastic_lie_detector": Design(
        types=("yes_no",), params=("groups",),
        build=lambda params, where, options, grid, text: compliance.stochastic_lie_detector(params, where, text),
        shape="grouped", docs="Designs that measure compliance", respondent_words=_RESPONDENT_DRAW,
        references=(("stochastic lie detector (p 2/12 | 10/12)", {"design": "stochastic_lie_detector", "groups": {
                        "a": {"p": "2/12", "randomizer": "…"}, "b": {"p": "10/12", "randomizer": "…"}}}),),
        measures="true yes denying it (t)"),
    "triangular": Design(
        types=("yes_no",), params=("companion", "p"),
        build=lambda params, where, options, grid, text: triangular(params, where, text),
        shape="binary", docs="Designs in which the respondent randomizes", respondent_words=_RESPONDENT_COMPANION,
        references=(("triangular (p 1/4)", {"design": "triangular", "p": "1/4", "companion": "…"}),)),
    "warner": Design(
        types=("yes_no",), params=("p",), build=lambda params, where, options, grid, text: warner(params, where),
        shape="binary", docs="`warner` (yes_no)",
        references=(("Warner (p 3/4)", {"design": "warner", "p": "3/4"}),),
        audit=("warner p = 0.6", {"type": "yes_no", "privacy": {"design": "warner", "p": "3/5"}}, 12000)),
    "unrelated_question": Design(
        types=("yes_no",), params=("p", "innocuous_yes"),
        build=lambda params, where, options, grid, text: unrelated_question(params, where),
        shape="binary", docs="`unrelated_question` (yes_no)",
        references=(("unrelated question (p 2/3, innocuous 1/12)",
                     {"design": "unrelated_question", "p": "2/3", "innocuous_yes": "1/12"}),),
        audit=("unrelated_question 2/3, 1/12", {"type": "yes_no", "privacy": {
            "design": "unrelated_question", "p": "2/3", "innocuous_yes": "1/12"}}, 20000)),
    "k_rr": Design(
        types=("yes_no", "choice", "ordinal"), params=("epsilon", "p_truth"),
        build=lambda params, where, options, grid, text: k_rr(params, where, options),
        shape="symmetric", docs="`k_rr` (choice, ordinal, yes_no)",
        references=(("k-ary randomized response (p_truth 2/3)", {"design": "k_rr", "p_truth": "2/3"}),),
        audit=("k_rr ln 3, 4 options", {"type": "choice", "options": ["a", "b", "c", "d"],
                                         "privacy": {"design": "k_rr", "epsilon": "ln 3"}}, 25000)),
    "ordinal": Design(
        types=("ordinal",), params=("epsilon",),
        build=lambda params, where, options, grid, text: ordinal(params, where, options),
        shape="channel", docs="`ordinal` (ordinal)",
        audit=("ordinal ε = 1, 5 points", {"type": "ordinal", "options": ["1", "2", "3", "4", "5"],
                                            "privacy": {"design": "ordinal", "epsilon": 1}}, 64000)),
    "unary": Design(
        types=("multi_select",), params=("epsilon", "variant"),
        build=lambda params, where, options, grid, text: unary(params, where, options),
        shape="unary", docs="`unary` (multi_select)",
        audit=("unary ε = 2, 2 options", {"type": "multi_select", "options": ["a", "b"],
                                           "privacy": {"design": "unary", "epsilon": 2}}, 24000)),
    "laplace": Design(
        types=("number",), params=("epsilon",),
        build=lambda params, where, options, grid, text: laplace(params, where, *grid),
        shape="numeric", docs="`laplace` (number)",
        audit=("laplace ε = 1, 0..4", {"type": "number", "min": 0, "max": 4, "step": 1,
                                        "privacy": {"design": "laplace", "epsilon": 1}}, 45000)),
}

DEFAULT_PRIVACY = {"yes_no": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}


def build(question_type: str, privacy, where: str, options=None, grid=None, text=None) -> Mechanism:
    """The mechanism a question's ``privacy`` field asks for (raises ValueError naming the field).
    ``text(value, where)`` checks a text the respondent reads (a companion question, a randomizer's
    instruction) in the survey's languages; without it a plain string is required."""
    if privacy == "none":
        return public(question_type, options, grid)
    if not isinstance(privacy, dict):
        raise ValueError(f"{where}: expected 'none' or a mapping with a 'design', got {privacy!r}")
    design = privacy.get("design")
    if design is None:
        # Usually a misspelt key ("desgin:"): name it rather than the design it failed to give.
        others = sorted(set(privacy) - {"design"})
        close = difflib.get_close_matches("design", others, n=1, cutoff=0.75)
        hint = f"; is {close[0]!r} a misspelling of 'design'?" if close else \
            (f" (keys given: {', '.join(map(repr, others))})" if others else "")
        raise ValueError(f"{where}.design: missing{hint} Choose one of {', '.join(DESIGNS)} (or privacy: none)")
    if not isinstance(design, str) or design not in DESIGNS:
        raise ValueError(f"{where}.design: unknown design {design!r}; choose one of {', '.join(DESIGNS)} (or privacy: none)")
    types, accepted = DESIGNS[design].types, DESIGNS[design].params
    if question_type not in types:
        raise ValueError(f"{where}.design: {design} does not apply to {question_type} questions (it serves {', '.join(types)})")
    unknown = sorted(set(privacy) - {"design", *accepted})
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} for design {design} (accepted: {', '.join(accepted)})")
    mechanism = DESIGNS[design].build(privacy, where, list(YES_NO) if question_type == "yes_no" else options, grid, text)
    # A requested ε is met from below (on a 2^-32 grid): 0.01 asked may come out a hair under 0.01.
    if mechanism.is_private and mechanism.epsilon < MIN_EPSILON * (1 - 1e-3):
        raise ValueError(f"{where}: ε = {mechanism.epsilon:.3g} is so close to 0 that a report says next to nothing "
                         f"about the answer; estimates would need millions of respondents. Use ε ≥ {MIN_EPSILON} "
                         "(0.5 to 3 is usual)")
    return mechanism
