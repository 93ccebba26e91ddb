"""Planning: the variance each design costs, sample sizes for a margin of error, power.

What planning promises is the precision of the estimate deniable will publish (`published_se`): for k-ary
randomized response, multi-select and compliance designs its asymptotic standard error, which shrinks as
1/√n; for ordinal scales and numeric grids the spread of the constrained maximum-likelihood fit at that n,
by parametric bootstrap (`analysis.bootstrap`) — far below the unbiased estimator's, and not shrinking as 1/√n.

Per-respondent variance of the unbiased estimator of one answer's share π (n = 1), `unit_variance`: binary designs
λ(1 − λ)/(p − q)², λ = q + (p − q)π; any channel Q the diagonal of Q⁻¹(diag λ − λλᵀ)Q⁻ᵀ, λ = Qπ; multi-select: each
option a binary channel with (keep_one, flip_zero).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from deniable.client import Question, Survey
from deniable.client.compliance import GroupedMechanism
from deniable.client.designs import DESIGNS
from deniable.client.laplace import LaplaceMechanism
from deniable.client.mechanisms import Mechanism, UnaryMechanism

from . import bootstrap, channels
from .errors import AnalysisError


def _mechanism(question_or_mechanism) -> Mechanism:
    if isinstance(question_or_mechanism, Question):
        return question_or_mechanism.mechanism
    if isinstance(question_or_mechanism, Mechanism):
        return question_or_mechanism
    raise TypeError("expected a Question or a Mechanism")


def two_sided_z(level: float) -> float:
    """The two-sided normal quantile of a confidence level (1.96 at 95%)."""
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def unit_variance(question_or_mechanism, distribution=None) -> np.ndarray:
    """Variance of each answer's (option's) estimated share with one respondent.

    ``distribution``: the assumed true shares (default: uniform; for a yes/no question a number
    is read as the share of "yes"; for multi-select, a share per option)."""
    mechanism = _mechanism(question_or_mechanism)
    if isinstance(mechanism, UnaryMechanism):
        shares = np.full(len(mechanism.options), 0.5) if distribution is None else np.broadcast_to(
            np.asarray(distribution, dtype=float), (len(mechanism.options),))
        channel = channels.binary_channel(mechanism)
        return channel.unit_variance(channel.rate(shares))
    # a design that measures compliance is planned over its latent classes, as it is estimated
    answers = [label for label, _ in mechanism.latent_classes] if isinstance(mechanism, GroupedMechanism) else mechanism.answers
    if distribution is None:
        pi = np.full(len(answers), 1 / len(answers))
    elif np.isscalar(distribution) and answers == ["yes", "no"]:
        share = float(distribution)  # type: ignore[arg-type]  # a scalar: the share of yes
        pi = np.array([share, 1 - share], dtype=float)
    else:
        pi = np.asarray(distribution, dtype=float)
    q = channels.channel_matrix(mechanism)
    if isinstance(q, channels.FoldedGeometric):  # a grid too long to write out: its own left inverse, O(k + R)
        return q.unbiased_variances(q.matvec(pi), 1)
    if isinstance(mechanism, GroupedMechanism):
        # More report cells than classes (each group's yes and no): only the maximum-likelihood estimate is
        # efficient there, and it is the one published, so plan with its covariance (the inverse information).
        return np.diag(channels.fitted_covariance(q, pi)).copy()
    rates = q @ pi
    marginal = channels.marginal_channel(q)
    if marginal is not None:  # k-ary RR: each share is a binary channel of its own, O(k)
        return marginal.unit_variance(rates)
    inverse = channels.left_inverse(q)
    # diag(A (diag λ − λλᵀ) Aᵀ) without the k³ products: Σ_r A²_ir λ_r − (Aλ)²_i
    return (inverse**2) @ rates - (inverse @ rates) ** 2


def _distribution(mechanism: Mechanism, distribution) -> np.ndarray:
    k = len(mechanism.answers)
    return np.full(k, 1 / k) if distribution is None else np.asarray(distribution, dtype=float)


def published_spread(question_or_mechanism, n: int, distribution=None,
                     replicates: int | None = None) -> bootstrap.Bootstrap | None:
    """The spread of the published shares with ``n`` respondents where it is a bootstrap (`bootstrap.needs_bootstrap`
    channels), else None (the inverse information over n: `unit_variance`). Read as each share's variance
    (``variances()``) or a functional's (``variance(g)``) without its k × k matrix (``matrix()``; a 0..10,000 grid's
    is 800 MB)."""
    mechanism = _mechanism(question_or_mechanism)
    if not bootstrap.needs_bootstrap(mechanism):
        return None
    return bootstrap.bootstrap(channels.channel_matrix(mechanism), _distribution(mechanism, distribution), n, replicates)


def published_covariance(question_or_mechanism, n: int, distribution=None) -> np.ndarray | None:
    """`published_spread` written out (k × k), or None."""
    bootstrapped = published_spread(question_or_mechanism, n, distribution)
    return None if bootstrapped is None else bootstrapped.matrix()


def published_se(question_or_mechanism, n: int, distribution=None) -> np.ndarray:
    """The standard error of each answer's published share with ``n`` respondents at ``distribution``."""
    bootstrapped = published_spread(question_or_mechanism, n, distribution)
    if bootstrapped is None:
        return np.sqrt(unit_variance(question_or_mechanism, distribution) / n)
    return np.sqrt(np.clip(bootstrapped.variances(), 0, None))


#: The largest n planning searches for a margin; beyond it the answer is "more than this".
MAX_PLANNED_N = 10**9
#: Bootstrap surveys per step of the search for an n (each step's SE good to about 5%; 200 for the planned SE
#: itself left a mean's SE 14% off in a test, so that one takes `bootstrap.REPLICATES`).
SEARCH_REPLICATES = 200


def sample_size(question_or_mechanism, margin: float, level: float = 0.95, distribution=None) -> int:
    """Respondents needed so that every answer's published share has a Wald half-width ≤ ``margin``:
    closed form where the standard error shrinks as 1/√n, else the smallest n (to 2%) whose bootstrapped
    standard error meets it, searched below the unbiased estimator's n (returned as it is above `MAX_PLANNED_N`)."""
    mechanism = _mechanism(question_or_mechanism)
    if not bootstrap.needs_bootstrap(mechanism):
        return n_for(float(np.max(unit_variance(mechanism, distribution))), margin, level)
    if not 0 < margin < 1:
        raise AnalysisError("margin must be between 0 and 1 (a share, e.g. 0.03)")
    z = two_sided_z(level)

    def meets(n: int) -> bool:  # each step's SE good to about 5%: the n found, to about 10%
        surveys = published_spread(mechanism, n, distribution, replicates=SEARCH_REPLICATES)
        assert surveys is not None  # a bootstrap channel's (checked above)
        variances = surveys.variances()
        return z * float(np.sqrt(np.max(variances))) <= margin

    # The unbiased estimator's n is an upper bound (the simplex only shrinks the spread, and by that n the fit is
    # inside it and as precise as the unbiased estimate, which the bootstrap's own 5% error could deny): search below.
    low, high = 0, n_for(float(np.max(unit_variance(mechanism, distribution))), margin, level)
    if high > MAX_PLANNED_N:
        return high
    if not meets(high - high // 50):  # already within the search's 2% of the bound: the fit is inside the simplex
        return high
    while high - low > max(1, high // 50):
        middle = (low + high) // 2
        low, high = (low, middle) if meets(middle) else (middle, high)
    return high


def n_for(worst_unit_variance: float, margin: float, level: float) -> int:
    if not 0 < margin < 1:
        raise AnalysisError("margin must be between 0 and 1 (a share, e.g. 0.03)")
    z = two_sided_z(level)
    return int(math.ceil(z * z * worst_unit_variance / margin**2))


def margin_of_error(question_or_mechanism, n: int, level: float = 0.95, distribution=None) -> float:
    """The Wald half-width of the least precise answer's published share with ``n`` respondents."""
    return float(two_sided_z(level) * np.max(published_se(question_or_mechanism, n, distribution)))


def power(question_or_mechanism, share_a: float, share_b: float, n_a: int, n_b: int, level: float = 0.95) -> float:
    """Power of the two-sided Wald test (`compare`) to detect shares ``share_a`` ≠ ``share_b`` of
    "yes" (or of an option) between two independent groups."""
    variance_a = float(np.max(unit_variance(question_or_mechanism, share_a))) / n_a
    variance_b = float(np.max(unit_variance(question_or_mechanism, share_b))) / n_b
    se = math.sqrt(variance_a + variance_b)
    z = two_sided_z(level)
    shift = abs(share_a - share_b) / se
    normal = NormalDist()
    return float((1 - normal.cdf(z - shift)) + normal.cdf(-z - shift))


def _design(question_type: str, design: str, options: int, epsilon: float) -> Question:
    names = [f"option {i + 1}" for i in range(options)]
    privacy = {"design": design, "epsilon": epsilon}
    spec = {"id": "q", "text": "?", "type": question_type, "privacy": privacy}
    if question_type != "yes_no":
        spec["options"] = names
    return Survey.from_dict({"id": "plan", "title": "plan", "questions": [spec]}).questions["q"]


def compare_designs(options: int, epsilon: float, distribution=None):
    """Worst per-respondent variance of a share, for every design that fits ``options`` categories
    at budget ``epsilon`` (exactly as built, so ε is met from below), as a pandas DataFrame. Lower is better."""
    import pandas as pd  # here, not at the top: `survey check` plans without loading pandas

    candidates = [("k_rr", "choice" if options > 2 else "yes_no"), ("unary symmetric", "multi_select"),
                  ("unary optimized", "multi_select")]
    if options > 2:
        candidates.append(("ordinal", "ordinal"))
    rows = []
    for name, question_type in candidates:
        design = name.split()[0]
        question = _design(question_type, design, options, epsilon)
        if name == "unary optimized":
            spec = question.to_dict()
            spec["privacy"]["variant"] = "optimized"
            question = Survey.from_dict({"id": "plan", "title": "plan", "questions": [spec]}).questions["q"]
        variance = unit_variance(question, distribution if not name.startswith("unary") else None)
        rows.append({"design": name, "question type": question_type, "epsilon": question.epsilon,
                     "worst unit variance": float(np.max(variance)), "mean unit variance": float(np.mean(variance)),
                     "n for ±0.05": sample_size(question, 0.05, distribution=distribution if not name.startswith("unary") else None)})
    frame = pd.DataFrame(rows).set_index("design").sort_values("worst unit variance")
    frame.attrs["recommended"] = frame.index[0]
    frame.attrs["note"] = ("unary rows are for multi-select questions: an answer may change every option's bit, so "
                           "ε is split over all options and each share costs more than under k_rr; ordinal trades "
                           "per-category accuracy for reports that stay near the truth")
    return frame


#: The yes/no designs `compare_yes_no_designs` sets beside a survey's own, with textbook parameters: label → privacy
#: field, every yes/no design's own (`designs.Design.references`), in the registry's order.
REFERENCE_YES_NO = {label: privacy for design in DESIGNS.values() if "yes_no" in design.types
                    for label, privacy in design.references}
NOTE = ("ε is infinite for one-sided designs (triangular, cheating detection without 'no' shares, the lie detector): "
        "one report reveals an answer. Each compliance design is right only about its own kind: cheating detection "
        "when people may say 'no' to anything (the lie detector reads true 'no' who do so as lying carriers: π 0.46 for "
        "0.40), the lie detector when it is the true 'yes' who deny (docs/validation.md)")


def compare_yes_no_designs(n: int = 1000, questions=(), level: float = 0.95, target: float = 0.05):
    """The yes/no designs side by side at ``n`` (a DataFrame): a survey's own private yes/no ``questions`` first, then
    `REFERENCE_YES_NO`; ε, who randomizes, what non-compliance it measures, the SE and margin of "yes" at n (uniform
    classes), the n for ±``target``, and for cheating detection the n to detect 5% cheaters with 80% power."""
    import pandas as pd  # here, not at the top: `survey check` plans without loading pandas

    if not isinstance(n, int) or n < 1:
        raise AnalysisError(f"n must be a whole number of respondents ≥ 1, got {n!r}")
    candidates = [(q.id, q) for q in questions]
    for name, privacy in REFERENCE_YES_NO.items():
        spec = {"id": "q", "type": "yes_no", "text": "?", "privacy": privacy}
        candidates.append((name, Survey.from_dict({"id": "plan", "title": "plan", "questions": [spec]}).questions["q"]))
    rows = []
    for name, question in candidates:
        mechanism = question.mechanism
        if question.type != "yes_no" or not question.is_private:
            raise AnalysisError(f"{name}: only private yes/no questions are compared here")
        variance = float(unit_variance(question)[0])
        se = math.sqrt(variance / n)
        rows.append({"design": name, "epsilon": question.epsilon,
                     "randomized by": "respondent" if mechanism.respondent_randomizes else "device",
                     "measures compliance": DESIGNS[mechanism.design].measures or "no",
                     "se of yes": se, "margin of yes": two_sided_z(level) * se, f"n for ±{target:g}": n_for(variance, target, level),
                     "n to detect 5% cheaters": (n_to_detect_cheaters(question)
                                                 if mechanism.design == "cheating_detection" else None)})
    frame = pd.DataFrame(rows).set_index("design")
    frame["n to detect 5% cheaters"] = frame["n to detect 5% cheaters"].astype("Int64")
    frame.attrs.update({"n": n, "level": level, "note": NOTE})
    return frame


# --- per question, beyond its shares -------------------------------------------------------------

def scores(question: Question) -> np.ndarray | None:
    """What a question's mean is the mean of: a number's values, or an ordinal scale's positions 1..k
    (None for other questions)."""
    if isinstance(question.mechanism, LaplaceMechanism):
        return np.array(question.mechanism.answers, dtype=float)
    if question.type == "ordinal":
        return np.arange(1, len(question.options) + 1, dtype=float)
    return None


def mean_unit_variance(question: Question, distribution=None) -> float | None:
    """Variance of the maximum-likelihood mean (of `scores`) with one respondent, at ``distribution``
    (default uniform): the inverse Fisher information of the channel, as the estimates use."""
    values = scores(question)
    if values is None:
        return None
    q = channels.channel_matrix(question.mechanism)
    pi = np.full(q.shape[1], 1 / q.shape[1]) if distribution is None else np.asarray(distribution, dtype=float)
    return channels.fitted_variance(q, pi, values)


#: What planning for cheating detection aims to detect: this share of cheaters, at this power, one-sided at 5%
#: (the likelihood-ratio test `estimate` reports has that size on the boundary γ = 0).
CHEATER_SHARE = 0.05
POWER = 0.80
TEST_LEVEL = 0.05


def _one_sided(level: float) -> float:
    return NormalDist().inv_cdf(1 - level)


def n_to_detect_cheaters(question_or_mechanism, share: float = CHEATER_SHARE, power: float = POWER,
                         level: float = TEST_LEVEL) -> int:
    """Respondents a cheating-detection question needs for its test of "no cheaters" (one-sided, size
    ``level``) to detect a cheater share ``share`` with probability ``power``: n = ((z₁₋α·σ₀ + z_power·σ₁)/share)²,
    σ₀ and σ₁ the per-respondent SD of γ̂ with no cheaters and with ``share`` of them (honest answers split
    evenly between yes and no, as the rest of planning assumes)."""
    mechanism = _mechanism(question_or_mechanism)
    if mechanism.design != "cheating_detection" or not isinstance(mechanism, GroupedMechanism):
        raise AnalysisError(f"only cheating detection estimates a share of cheaters, not {mechanism.design}")
    if not 0 < share < 1 or not 0 < power < 1 or not 0 < level < 1:
        raise AnalysisError("share, power and level must each be between 0 and 1")
    cheater = [label for label, _ in mechanism.latent_classes].index("cheater")

    def sd(gamma):
        honest = (1 - gamma) / 2
        return math.sqrt(float(unit_variance(mechanism, [honest, honest, gamma])[cheater]))

    return int(math.ceil(((_one_sided(level) * sd(0.0) + NormalDist().inv_cdf(power) * sd(share)) / share) ** 2))


def split_ballot_plan(question: Question, n: int, level: float = 0.95) -> dict | None:
    """What a split ballot gives with ``n`` respondents: each arm's n, the SE of the difference of "yes" shares
    (both at 1/2, the widest), and the smallest difference the one-sided test (5%) detects with 80% power."""
    split = question.split_ballot
    if split is None:
        return None
    direct_n = max(1, round(n * float(split.direct)))
    randomized_n = max(1, n - direct_n)
    grouped = isinstance(question.mechanism, GroupedMechanism)  # latent classes: uniform, as planned elsewhere
    yes_variance = float(unit_variance(question, None if grouped else 0.5)[0])
    se = math.sqrt(0.25 / direct_n + yes_variance / randomized_n)
    return {"direct_n": direct_n, "randomized_n": randomized_n, "difference_se": se,
            "detectable": (_one_sided(TEST_LEVEL) + NormalDist().inv_cdf(POWER)) * se}
