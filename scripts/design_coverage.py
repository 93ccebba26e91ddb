"""Coverage of design-based intervals over simulated two-stage stratified cluster samples (strata, clusters whose
people answer alike, unequal weights): for a yes/no, a k-ary, an ordinal and a cheating-detection question, how
often each answer's 95% interval holds the population's share, with the sample design and without it (as if a
simple random sample), and the mean design effect. The samples: tests/analysis/simulated_samples.py.

    python scripts/design_coverage.py [surveys per design, default 500]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.analysis import SampleDesign, estimate, load  # noqa: E402
from deniable.client.compliance import GroupedMechanism  # noqa: E402
from tests.analysis import simulated_samples as simulated  # noqa: E402

DESIGN = SampleDesign(weights="weight", strata="stratum", clusters="cluster")


def coverage(kind: str, surveys: int, seed: int = 11) -> dict:
    survey = simulated.survey_of(kind)
    mechanism = survey.questions["q"].mechanism
    size = len(mechanism.latent_classes) if isinstance(mechanism, GroupedMechanism) else len(mechanism.answers)
    answers = simulated.population(kind)
    truth = simulated.truth(answers, size)
    rng = np.random.default_rng(seed)
    designed, naive, effects = [], [], []
    for _ in range(surveys):
        data = load(simulated.sample(kind, answers, rng), spec=survey)
        for results, result in ((designed, estimate(data, "q", design=DESIGN)), (naive, estimate(data, "q"))):
            table = result.table.iloc[:size]
            results.append((table["ci_low"].to_numpy() <= truth) & (truth <= table["ci_high"].to_numpy()))
            if results is designed:
                effects.append(result.design_effect)
    return {"truth": truth, "design": np.mean(designed, axis=0), "naive": np.mean(naive, axis=0),
            "deff": float(np.mean(effects))}


def main():
    surveys = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    print(f"{surveys} simulated samples per design; 95% intervals; coverage per answer (or latent class)")
    print(f"{'design':<20} {'truth':<28} {'with the design':<28} {'as if SRS':<28} mean deff")
    for kind in simulated.QUESTIONS:
        started = time.process_time()
        found = coverage(kind, surveys)
        shown = [" ".join(f"{v:.3f}" for v in found[key]) for key in ("truth", "design", "naive")]
        print(f"{kind:<20} {shown[0]:<28} {shown[1]:<28} {shown[2]:<28} {found['deff']:.2f}"
              f"   ({time.process_time() - started:.0f} s)")


if __name__ == "__main__":
    main()
