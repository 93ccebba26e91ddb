"""Planning: the variance each design costs, sample sizes for a margin of error, power.

Per-respondent variance of the unbiased estimator of one answer's share π (n = 1):

* binary designs: λ(1 − λ)/(p − q)², λ = q + (p − q)π;
* any channel Q: the diagonal of Q⁻¹(diag λ − λλᵀ)Q⁻ᵀ, λ = Qπ;
* unary (multi-select): each option is a binary channel with (keep_one, flip_zero).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from deniable.client import Question, Survey
from deniable.client.mechanisms import Mechanism, UnaryMechanism

from . import estimators as est


def _mechanism(question_or_mechanism) -> Mechanism:
    if isinstance(question_or_mechanism, Question):
        return question_or_mechanism.mechanism
    if isinstance(question_or_mechanism, Mechanism):
        return question_or_mechanism
    raise TypeError("expected a Question or a Mechanism")


def unit_variance(question_or_mechanism, distribution=None) -> np.ndarray:
    """Variance of each answer's (option's) estimated share with one respondent.

    ``distribution``: the assumed true shares (default: uniform; for a yes/no question a number
    is read as the share of "yes"; for multi-select, a share per option)."""
    mechanism = _mechanism(question_or_mechanism)
    if isinstance(mechanism, UnaryMechanism):
        shares = np.full(len(mechanism.options), 0.5) if distribution is None else np.broadcast_to(
            np.asarray(distribution, dtype=float), (len(mechanism.options),))
        channel = est.binary_channel(mechanism)
        return channel.unit_variance(channel.rate(shares))
    answers = mechanism.answers
    if distribution is None:
        pi = np.full(len(answers), 1 / len(answers))
    elif np.isscalar(distribution) and answers == ["yes", "no"]:
        pi = np.array([distribution, 1 - distribution], dtype=float)
    else:
        pi = np.asarray(distribution, dtype=float)
    q = est.channel_matrix(mechanism)
    rates = q @ pi
    inverse = est.left_inverse(q)
    return np.diag(inverse @ (np.diag(rates) - np.outer(rates, rates)) @ inverse.T)


def sample_size(question_or_mechanism, margin: float, level: float = 0.95, distribution=None) -> int:
    """Respondents needed so that every answer's share has a Wald half-width ≤ ``margin``."""
    if not 0 < margin < 1:
        raise ValueError("margin must be between 0 and 1 (a share, e.g. 0.03)")
    z = stats.norm.isf((1 - level) / 2)
    return int(math.ceil(z * z * float(np.max(unit_variance(question_or_mechanism, distribution))) / margin**2))


def margin_of_error(question_or_mechanism, n: int, level: float = 0.95, distribution=None) -> float:
    z = stats.norm.isf((1 - level) / 2)
    return float(z * math.sqrt(float(np.max(unit_variance(question_or_mechanism, distribution))) / n))


def power(question_or_mechanism, share_a: float, share_b: float, n_a: int, n_b: int, level: float = 0.95) -> float:
    """Power of the two-sided Wald test (`compare`) to detect shares ``share_a`` ≠ ``share_b`` of
    "yes" (or of an option) between two independent groups."""
    variance_a = float(np.max(unit_variance(question_or_mechanism, share_a))) / n_a
    variance_b = float(np.max(unit_variance(question_or_mechanism, share_b))) / n_b
    se = math.sqrt(variance_a + variance_b)
    z = stats.norm.isf((1 - level) / 2)
    shift = abs(share_a - share_b) / se
    return float(stats.norm.sf(z - shift) + stats.norm.cdf(-z - shift))


def _design(question_type: str, design: str, options: int, epsilon: float) -> Question:
    names = [f"option {i + 1}" for i in range(options)]
    privacy = {"design": design, "epsilon": epsilon}
    spec = {"id": "q", "text": "?", "type": question_type, "privacy": privacy}
    if question_type != "yes_no":
        spec["options"] = names
    return Survey.from_dict({"id": "plan", "title": "plan", "questions": [spec]}).questions["q"]


def compare_designs(options: int, epsilon: float, distribution=None) -> pd.DataFrame:
    """Worst per-respondent variance of a share, for every design that fits ``options`` categories
    at budget ``epsilon`` (exactly as built, so ε is met from below). Lower is better."""
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
