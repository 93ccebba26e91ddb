"""CPU of a design-based estimate (weights, strata, clusters) as the sample grows: 10⁵ and 10⁶ responses.

    python benchmarks/weighted.py [--sizes 100000,1000000] [--kinds yes_no,k_ary,ordinal]

Each sample is laid out as an export file would be (a row per response: its report, weight, stratum and cluster; 20
strata of 500 clusters), loaded with `load(frame, spec=…)` and estimated with
`SampleDesign(weights=…, strata=…, clusters=…)`: the first estimate (the design resolved, the reports counted) and the
same again, CPU seconds, with the peak memory of the process so far. The reports are randomized through the question's
own channel from uniform answers.
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


def sample(kind: str, n: int, rng: np.random.Generator) -> tuple:
    survey = survey_of(kind)
    mechanism = survey.questions["q"].mechanism
    cumulative = np.cumsum(channels.channel_matrix(mechanism), axis=0)
    strata = rng.integers(0, 20, n)
    answers = rng.integers(0, cumulative.shape[1], n)
    positions = (rng.random(n)[None, :] > cumulative[:, answers]).sum(axis=0)
    frame = pd.DataFrame({"stratum": strata.astype(str), "cluster": (strata * 1000 + rng.integers(0, 500, n)).astype(str),
                          "weight": rng.uniform(10, 40, n), "q": np.array(mechanism.reports, dtype=object)[positions]})
    return survey, frame


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--kinds", default="yes_no,k_ary,ordinal", help=f"of {', '.join(QUESTIONS)}")
    args = parser.parse_args()
    design = SampleDesign(weights="weight", strata="stratum", clusters="cluster")
    print(f"{'question':<20}{'responses':>11}{'first s':>9}{'again s':>9}{'peak MB':>9}")
    for kind in args.kinds.split(","):
        for n in (int(size) for size in args.sizes.split(",")):
            survey, frame = sample(kind, n, np.random.default_rng(n))
            data = load(frame, spec=survey)
            times = []
            for _ in range(2):
                started = time.process_time()
                estimate(data, "q", design=design)
                times.append(time.process_time() - started)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{kind:<20}{n:>11,}{times[0]:>9.2f}{times[1]:>9.2f}{peak:>9.0f}", flush=True)


if __name__ == "__main__":
    main()
