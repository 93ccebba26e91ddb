"""Time of a weighted, stratified, clustered estimate (a yes/no question by forced response) at n = 10⁴, 10⁵ and
10⁶ responses: CPU seconds of `estimate(data, question, design=SampleDesign(...))` once the data are loaded, beside
the same estimate without a design (a simple random sample), as a ratio. Prints a table; asserts nothing.

    python benchmarks/design.py [largest n, default 1000000]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.grids import cpu  # noqa: E402 - the best CPU time of a few runs, as every benchmark here
from deniable.analysis import SampleDesign, estimate, load  # noqa: E402
from deniable.client import Survey  # noqa: E402

SURVEY = Survey.from_dict({"id": "s", "title": "t", "questions": [
    {"id": "q", "text": "?", "type": "yes_no",
     "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]})
DESIGN = SampleDesign(weights="w", strata="s", clusters="c")


def data(n: int, rng) -> "LoadedSurvey":  # noqa: F821
    strata = rng.integers(0, 50, n)
    clusters = strata * 1000 + rng.integers(0, 40, n)  # 2,000 PSUs in 50 strata
    frame = pd.DataFrame({"q": np.where(rng.random(n) < 0.4, "yes", "no"), "w": rng.uniform(0.5, 3.0, n),
                          "s": strata.astype(str), "c": clusters.astype(str)})
    return load(frame, spec=SURVEY)


def main():
    largest = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rng = np.random.default_rng(1)
    print(f"{'n':>10} {'design (s CPU)':>15} {'SRS (s CPU)':>12} {'ratio':>7}")
    n = 10_000
    while n <= largest:
        loaded = data(n, rng)
        estimate(loaded, "q", design=DESIGN)  # the first call reads the frame (kept by the loaded survey)
        designed = cpu(lambda: estimate(loaded, "q", design=DESIGN), 3)
        plain = cpu(lambda: estimate(loaded, "q"), 3)
        print(f"{n:>10,} {designed:>15.3f} {plain:>12.4f} {designed / plain:>7.0f}")
        n *= 10


if __name__ == "__main__":
    main()
