"""What ε means for a person: the most an observer's belief can move after seeing a report."""

from __future__ import annotations

import math

#: Below this ε a randomized question is refused: its reports say next to nothing about the answer
#: (e^ε < 1.01), and no survey could afford the respondents an estimate would need.
MIN_EPSILON = 0.01
#: Above this ε a question is flagged as giving little protection: someone 2% sure of an answer
#: beforehand can be more than 50% sure after one report (e^ε > 49). The coin-flip design has ln 3.
WEAK_EPSILON = math.log(49)


def posterior_bound(prior: float, epsilon: float) -> float:
    """The largest posterior P(answer | report) an observer can reach from ``prior``.

    For any report r, P(r | a) ≤ e^ε · P(r | a'), so by Bayes' rule the posterior odds are
    at most e^ε times the prior odds: q·e^ε / (q·e^ε + 1 − q). At ε = ln 3 a prior of 0.02
    becomes about 0.058 (the tax-dodging example of the coin-flip design).
    """
    if not 0 <= prior <= 1:
        raise ValueError(f"prior must be between 0 and 1, got {prior!r}")
    if math.isinf(epsilon):
        return 1.0 if prior > 0 else 0.0
    scaled = prior * math.exp(epsilon)
    return scaled / (scaled + 1 - prior)
