"""Recovery of a known coefficient of a randomized answer used as a predictor: bias, the real spread against the
stated SE, and the coverage of 95% intervals, over simulated surveys (tests/analysis/simulated_predictor.py), for
``linear`` and ``logistic``; and, with clusters whose respondents share an effect, the design-based interval beside
the one that ignores the clusters.

    python scripts/predictor_coverage.py [surveys per row, default 300]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.analysis import SampleDesign, linear, logistic  # noqa: E402
from tests.analysis import simulated_predictor as simulated  # noqa: E402

ROWS = {
    "linear, n = 600": (lambda data: linear("trust ~ dodged + age", data), "linear", {}),
    "logistic, n = 600": (lambda data: logistic("voted ~ dodged + I(age - 50)", data), "logistic", {}),
    "linear, 40 clusters, design": (lambda data: linear("trust ~ dodged + age", data,
                                                        design=SampleDesign(clusters="psu", weights="w")),
                                    "linear", {"clusters": 40}),
    "linear, 40 clusters, as if SRS": (lambda data: linear("trust ~ dodged + age", data), "linear", {"clusters": 40}),
}


def main(surveys: int):
    print(f"{'model':<32} {'truth':>6} {'mean':>8} {'bias/SE':>8} {'real SD':>8} {'mean SE':>8} {'coverage':>9}")
    for label, (fit, family, options) in ROWS.items():
        rng = np.random.default_rng(20261126)
        truth = simulated.TRUE[family][1]
        estimates, errors, covered, started = [], [], 0, time.process_time()
        for _ in range(surveys):
            result = fit(simulated.loaded(simulated.survey(rng, **options)))
            low, high = result.conf_int().loc["dodged[yes]"]
            estimates.append(result.params["dodged[yes]"])
            errors.append(result.bse["dodged[yes]"])
            covered += low <= truth <= high
        mean, spread = float(np.mean(estimates)), float(np.std(estimates, ddof=1))
        print(f"{label:<32} {truth:>6.2f} {mean:>8.3f} {(mean - truth) / (spread / np.sqrt(surveys)):>8.2f} "
              f"{spread:>8.3f} {np.mean(errors):>8.3f} {covered / surveys:>9.3f}   "
              f"({(time.process_time() - started) / surveys:.2f} s CPU a fit)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
