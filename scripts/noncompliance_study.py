"""What each compliance model measures under each kind of non-compliance (docs/validation.md): cheating detection
(Clark and Desharnais) and the stochastic lie detector (Moshagen et al.), each fielded to a population with 40% true
"yes" that (a) complies, (b) has 10% of everyone saying "no" whatever they are told, (c) has 20% of the true "yes"
denying it, (d) has 10% saying "yes" whatever they are told. Per cell: what the model estimates in the limit of many
respondents (its estimate at the expected counts), and over seeded surveys of 2,000 how often its compliance test
(γ = 0, or t = 1) rejects at 5% and its fit test flags.

    python scripts/noncompliance_study.py [surveys per cell, default 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.analysis.from_counts import estimate_counts  # noqa: E402  (the estimator of counts, as estimate() runs it)
from deniable.client import Survey  # noqa: E402

CDM = Survey.from_file(ROOT / "examples" / "respondent.yaml").questions["cheated"].mechanism
SLD = Survey.from_dict({"id": "s", "title": "S", "questions": [{
    "id": "lied", "type": "yes_no", "text": "?", "privacy": {"design": "stochastic_lie_detector", "groups": {
        "a": {"p": "2/12", "randomizer": "…"}, "b": {"p": "10/12", "randomizer": "…"}}}}]}).questions["lied"].mechanism
TRUTH = 0.4
BEHAVIOURS = {
    "everyone complies": {},
    "10% say no regardless": {"always_no": 0.10},
    "20% of the true yes deny": {"deny": 0.20},
    "10% say yes regardless": {"always_yes": 0.10},
}


def _yes_rate(mechanism, group: str, truthful_yes: bool) -> float:
    """P(report yes | group, true answer) for a complier, from the design's channel (every respondent honest)."""
    column = 0 if truthful_yes else 1
    index = mechanism.reports.index({"group": group, "report": "yes"})
    return float(mechanism.channel()[index][column]) * len(mechanism.groups)


def expected_counts(mechanism, behaviour: dict, n: float) -> np.ndarray:
    """Expected counts per report (group-major) for ``n`` respondents, groups equally likely."""
    always_no, always_yes, deny = (behaviour.get(k, 0.0) for k in ("always_no", "always_yes", "deny"))
    counts = []
    for group in mechanism.groups:
        compliers = 1 - always_no - always_yes
        yes_truth = TRUTH * (1 - deny)
        # deniers (a share of the true yes) say "no" whatever they are told: they add nothing to "yes"
        rate = always_yes + compliers * (yes_truth * _yes_rate(mechanism, group, True)
                                         + (1 - TRUTH) * _yes_rate(mechanism, group, False))
        counts += [n / len(mechanism.groups) * rate, n / len(mechanism.groups) * (1 - rate)]
    return np.array(counts)


def main(surveys: int):
    rng = np.random.default_rng(20261126)
    print("| model | behaviour | π̂ (truth 0.40) | non-compliance estimated | compliance test rejects | fit flags |")
    print("|---|---|---|---|---|---|")
    for name, mechanism in (("cheating detection", CDM), ("lie detector", SLD)):
        other = "cheater" if name == "cheating detection" else "truthful"
        for label, behaviour in BEHAVIOURS.items():
            limit = estimate_counts(mechanism, np.round(expected_counts(mechanism, behaviour, 1e7)).astype(np.int64), 0.95,
                              None, "q")
            expected = expected_counts(mechanism, behaviour, 2000)
            rejects = flags = 0
            for _ in range(surveys):
                per_group = [rng.multinomial(1000, expected[2 * g:2 * g + 2] / expected[2 * g:2 * g + 2].sum())
                             for g in range(len(mechanism.groups))]
                result = estimate_counts(mechanism, np.concatenate(per_group), 0.95, None, "q")
                rejects += result.compliance_test.p_value < 0.05
                flags += result.fit.flagged
            print(f"| {name} | {label} | {limit.table.loc['yes', 'estimate']:.3f} | "
                  f"{other} {limit.table.loc[other, 'estimate']:.3f} | {rejects / surveys:.2f} | {flags / surveys:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
