"""CPU of a design-based estimate (weights, strata, clusters) as the sample grows: 10⁵ and 10⁶ responses.

    python benchmarks/weighted.py [--sizes 100000,1000000] [--kinds yes_no,k_ary,ordinal] [--clusters 500]
                                  [--variance linearization|jk1|jkn|bootstrap] [--rake]

Each sample is laid out as an export file would be (a row per response: its report, weight, stratum and cluster; 20
strata of ``--clusters`` clusters each), loaded with `load(frame, spec=…)` and estimated with
`SampleDesign(weights=…, strata=…, clusters=…, variance=…)`: the first estimate (the design resolved, the reports
counted) and the same again, CPU seconds, with the peak memory of the process once the data were loaded and after the estimates (run
one size and variance per process for peaks of its own). The reports are randomized through the question's own channel from uniform answers.
Replicate variances (JKn: one replicate per PSU; the bootstrap: 200) are read from the PSUs' totals:
`--clusters 100 --variance jkn` is 2,000 PSUs. ``--rake``: raked to the strata's and a two-level column's totals
(replicates raked each, on the totals of the raking cells).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.simulated_samples: the questions

from deniable.analysis import SampleDesign, channels, estimate, load  # noqa: E402
from tests.analysis.simulated_samples import QUESTIONS, survey_of  # noqa: E402


def sample(kind: str, n: int, rng: np.random.Generator, clusters: int = 500) -> tuple:
    survey = survey_of(kind)
    mechanism = survey.questions["q"].mechanism
    cumulative = np.cumsum(channels.channel_matrix(mechanism), axis=0)
    strata = rng.integers(0, 20, n)
    answers = rng.integers(0, cumulative.shape[1], n)
    positions = (rng.random(n)[None, :] > cumulative[:, answers]).sum(axis=0)
    frame = pd.DataFrame({"stratum": strata.astype(str), "cluster": (strata * 100_000 + rng.integers(0, clusters, n)).astype(str),
                          "weight": rng.uniform(10, 40, n), "q": np.array(mechanism.reports, dtype=object)[positions],
                          "region": np.where(rng.random(n) < 0.4, "north", "south")})
    return survey, frame


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--kinds", default="yes_no,k_ary,ordinal", help=f"of {', '.join(QUESTIONS)}")
    parser.add_argument("--clusters", type=int, default=500, help="clusters in each of the 20 strata")
    parser.add_argument("--variance", default="linearization")
    parser.add_argument("--rake", action="store_true")
    args = parser.parse_args()
    print(f"{'question':<20}{'responses':>11}{'first s':>9}{'again s':>9}{'loaded MB':>10}{'peak MB':>9}")
    for kind in args.kinds.split(","):
        for n in (int(size) for size in args.sizes.split(",")):
            survey, frame = sample(kind, n, np.random.default_rng(n), args.clusters)
            margins = None
            if args.rake:  # totals 5% above the sample's weights in each stratum, and 45:55 by region
                total = frame["weight"].sum() * 1.05
                margins = {"stratum": (frame.groupby("stratum")["weight"].sum() * 1.05).to_dict(),
                           "region": {"north": 0.45 * total, "south": 0.55 * total}}
            design = SampleDesign(weights="weight", strata="stratum", clusters="cluster", variance=args.variance,
                                  rake=margins)
            data = load(frame, spec=survey)
            loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            times = []
            for _ in range(2):
                started = time.process_time()
                estimate(data, "q", design=design)
                times.append(time.process_time() - started)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{kind:<20}{n:>11,}{times[0]:>9.2f}{times[1]:>9.2f}{loaded:>10.0f}{peak:>9.0f}", flush=True)


if __name__ == "__main__":
    main()
