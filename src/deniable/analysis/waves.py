"""A repeated survey wave by wave, and the change between two waves.

Each wave is estimated from its own reports through the composite channel (instantaneous ∘ permanent), the
same for every wave. The change between two waves is their difference, with the standard error of two
independent samples, √(se₁² + se₂²). Under memoization that is an upper bound, not an approximation: a person
answering the same in both waves sends two reports that are independent given their permanent report, so for
the estimator's linear score g of a report Cov(g(r₁), g(r₂)) = Var(E[g(r) | permanent]) ≥ 0, a person whose
answer changed draws independent permanent reports, and different people are independent. The positive
covariance can only shrink the variance of the difference; the interval is conservative (tests simulate
panels and find coverage at or above the nominal level).
"""

from __future__ import annotations

from deniable.client.reports import WAVES

from .errors import AnalysisError
from .groups import Comparison, compare, subgroups

CONSERVATIVE = ("the standard error treats the waves as independent samples; when the same people answer both, "
                "memoization makes their reports positively correlated, so the true error is smaller and this "
                "interval is conservative")


def by_wave(loaded, question_id: str, level: float = 0.95, method: str | None = None, design=None) -> dict:
    """{wave label: EstimateResult}, in the order the waves opened. ``design``: a `SampleDesign`; each wave is a
    domain of the sample (every PSU kept), with its design-based standard error."""
    _require_waves(loaded)
    return subgroups(loaded, question_id, WAVES, level, method, design=design)


def compare_waves(loaded, question_id: str, first: str, second: str, answer=None, level: float = 0.95,
                  design=None) -> Comparison:
    """second − first: the change of ``answer``'s share (a number's or an ordinal's mean with ``answer="mean"``)
    from wave ``first`` to wave ``second``, with a two-sided test of no change. With a ``design`` the two waves are
    domains of one sample and the difference's SE their joint linearization within PSUs: a panel's respondents are
    nested in its PSUs, so the correlation memoization gives their two reports is counted, not bounded."""
    _require_waves(loaded)
    for wave in (first, second):
        if wave not in loaded.waves:
            raise AnalysisError(f"wave {wave!r}: no responses in it (waves: {', '.join(loaded.waves) or 'none'})")
    result = compare(loaded, question_id, WAVES, second, first, answer, level, design=design)
    if design is None:
        result.note = CONSERVATIVE
    return result


def _require_waves(loaded):
    if not loaded.repeated:
        raise AnalysisError(f"survey {loaded.survey.id!r} is not repeated (repeated: true): its responses have no waves")
