"""Coverage of design-based intervals over simulated two-stage stratified cluster samples (strata, clusters whose
people answer alike, unequal weights): for a yes/no, a k-ary, an ordinal, a number (0..6) and a cheating-detection
question, how often each answer's 95% interval holds the population's share, and a number's mean interval its mean,
with the sample design and without it (as if a simple random sample); and the difference between two strata's yes
shares (`compare`). Each at two strengths of clustering (the population's intraclass correlation of the first
answer, or of the number, is printed). The samples: tests/analysis/simulated_samples.py.

    python scripts/design_coverage.py [surveys per cell, default 500]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.analysis import SampleDesign, compare, estimate, load  # noqa: E402
from deniable.client.compliance import GroupedMechanism  # noqa: E402
from tests.analysis import simulated_samples as simulated  # noqa: E402

DESIGN = SampleDesign(weights="weight", strata="stratum", clusters="cluster")
#: The cluster effects' SD on the log-odds of the two strengths of clustering.
CLUSTERING = (0.5, 1.0)


def coverage(kind: str, surveys: int, cluster_sd: float, seed: int = 11) -> dict:
    survey = simulated.survey_of(kind)
    mechanism = survey.questions["q"].mechanism
    size = len(mechanism.latent_classes) if isinstance(mechanism, GroupedMechanism) else len(mechanism.answers)
    answers = simulated.population(kind, cluster_sd=cluster_sd)
    truth = simulated.truth(answers, size)
    numeric = kind == "number"
    icc = simulated.intraclass_correlation(answers.astype(float) if numeric else (answers == 0).astype(float))
    mean = float(answers.mean()) if numeric else None
    rng = np.random.default_rng(seed)
    designed, naive, effects, means = [], [], [], {"design": 0, "naive": 0}
    for _ in range(surveys):
        data = load(simulated.sample(kind, answers, rng), spec=survey)
        for results, result, name in ((designed, estimate(data, "q", design=DESIGN), "design"),
                                      (naive, estimate(data, "q"), "naive")):
            table = result.table.iloc[:size]
            results.append((table["ci_low"].to_numpy() <= truth) & (truth <= table["ci_high"].to_numpy()))
            if numeric:
                means[name] += result.mean.ci.low <= mean <= result.mean.ci.high
            if results is designed:
                effects.append(result.design_effect)
    return {"truth": truth, "design": np.mean(designed, axis=0), "naive": np.mean(naive, axis=0),
            "deff": float(np.mean(effects)), "icc": icc,
            **({"mean design": means["design"] / surveys, "mean naive": means["naive"] / surveys} if numeric else {})}


def difference_coverage(surveys: int, cluster_sd: float, seed: int = 12) -> dict:
    """The yes/no question's difference between strata 1 and 3 (domains sharing nothing but the design)."""
    survey = simulated.survey_of("yes_no")
    answers = simulated.population("yes_no", cluster_sd=cluster_sd)
    truth = float((answers[1] == 0).mean() - (answers[3] == 0).mean())
    rng = np.random.default_rng(seed)
    covered = {"design": 0, "naive": 0}
    for _ in range(surveys):
        data = load(simulated.sample("yes_no", answers, rng), spec=survey)
        for name, design in (("design", DESIGN), ("naive", None)):
            result = compare(data, "q", "stratum", "1", "3", answer="yes", design=design)
            covered[name] += result.ci.low <= truth <= result.ci.high
    return {"truth": truth, **{name: count / surveys for name, count in covered.items()},
            "icc": simulated.intraclass_correlation((answers == 0).astype(float))}


def main():
    surveys = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    error = math.sqrt(0.95 * 0.05 / surveys)
    print(f"{surveys} simulated samples per cell; 95% intervals (a coverage's Monte Carlo error ±{error:.3f}); "
          "coverage per answer (or latent class)")
    print("| design | ICC | with the design | as if a simple random sample | mean design effect |\n|---|---|---|---|---|")
    for cluster_sd in CLUSTERING:
        for kind in simulated.QUESTIONS:
            started = time.process_time()
            found = coverage(kind, surveys, cluster_sd)
            design, naive = (", ".join(f"{v:.3f}" for v in found[key]) for key in ("design", "naive"))
            if "mean design" in found:
                design += f"; mean {found['mean design']:.3f}"
                naive += f"; mean {found['mean naive']:.3f}"
            print(f"| {kind} | {found['icc']:.2f} | {design} | {naive} | {found['deff']:.2f} |"
                  f"   ({time.process_time() - started:.0f} s)", flush=True)
        found = difference_coverage(surveys, cluster_sd)
        print(f"| yes/no, difference of two strata | {found['icc']:.2f} | {found['design']:.3f} | {found['naive']:.3f} "
              f"| – |", flush=True)


if __name__ == "__main__":
    main()
