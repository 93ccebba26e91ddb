"""CPU per estimate of ordinal scales and numeric grids, and where it goes.

    python benchmarks/grids.py [--repeats 3] [--n 10000] [--only ordinal-31 ...]

The estimate of an ordinal or numeric question is the certified maximum-likelihood distribution on its grid,
with a parametric-bootstrap standard error (analysis/bootstrap.py: 1,000 refits up to 24 values, 200 beyond) and a
profile-likelihood interval for every row up to 101 values and for the mean (analysis/likelihood.py). No peer
library estimates these channels under the simplex constraint, so there is no ratio here: the figures are
deniable's own, the minimum CPU time of ``--repeats`` estimates of the same counts (a fresh result each time),
split into

* fit: `likelihood.certified_maximum` (the estimate and its certificate);
* bootstrap: `bootstrap.bootstrap` (the surveys behind the standard errors);
* rows: the per-row profile intervals; mean: the mean's;
* the whole `estimate`, which also builds the unbiased estimate, the fit test and the table: cold (as the first
  estimate in a fresh process: the remembered channel, its left inverse, the surveys at the estimate and at the point
  masses forgotten first) and again (the same counts a second time, as a second dashboard view). A number wider than
  `ranges.WIDE_GRID` publishes its mean, quartiles and bins by default; "values" is its per-value table
  (``values=True``), cold;
* peak: the resident memory of a fresh process that makes one cold estimate (the default publication), in MB.

The truth is a Dirichlet(½) draw (seeded): lumpy, with shares near 0, as survey answers are.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from deniable.analysis import calibration, channels, likelihood, ranges
from deniable.analysis.from_counts import estimate_counts
from deniable.analysis.precision import scores
from deniable.client import Survey

CASES = {
    "ordinal-5": ("ordinal", 5, 1), "ordinal-11": ("ordinal", 11, 1), "ordinal-31": ("ordinal", 31, 1),
    "ordinal-101": ("ordinal", 101, 1), "number-0..10": ("number", 11, 1), "number-0..100": ("number", 101, 1),
    "number-0..1000": ("number", 1001, 1), "number-0..10000": ("number", 10_001, 1),
}
#: Cases left out of the default run for their cost (about 20 s): run them with --only.
ONLY_WHEN_ASKED = {"number-0..10000"}


def question(kind: str, k: int, epsilon: float):
    if kind == "ordinal":
        spec = {"type": "ordinal", "options": [f"o{i}" for i in range(k)], "privacy": {"design": "ordinal", "epsilon": epsilon}}
    else:
        spec = {"type": "number", "min": 0, "max": k - 1, "step": 1, "privacy": {"design": "laplace", "epsilon": epsilon}}
    return Survey.from_dict({"id": "bench", "title": "bench", "questions": [{"id": "q", "text": "?", **spec}]}).questions["q"]


def cpu(function, repeats: int, before=None) -> float:
    best = float("inf")
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def forget():
    """What an estimate remembers for the next one, forgotten: the next runs as a fresh process's first."""
    channels._number_channel.cache_clear()
    channels._LEFT_INVERSES.clear()
    calibration._RECENT.clear()
    calibration._ENDS.clear()
    calibration.VertexSurveys._KEPT.clear()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--only", action="append", choices=sorted(CASES),
                        help="run these cases only (repeatable; default: all but the 0..10,000 number, about 20 s)")
    args = parser.parse_args()
    print(f"CPU seconds per estimate, n = {args.n:,}, the minimum of {args.repeats} (one BLAS thread, as `estimate` runs)")
    print(f"{'question':<16}{'answers':>8}{'reports':>8}{'fit':>8}{'bootstrap':>10}{'rows':>8}{'mean':>8}{'estimate':>10}"
          f"{'again':>8}{'values':>8}{'peak MB':>9}")
    from threadpoolctl import threadpool_limits

    for name in args.only or [name for name in CASES if name not in ONLY_WHEN_ASKED]:
        kind, k, epsilon = CASES[name]
        asked = question(kind, k, epsilon)
        mechanism, averaged = asked.mechanism, scores(asked) if kind == "ordinal" else None
        q = channels.channel_matrix(mechanism)
        rng = np.random.default_rng(k)
        counts = rng.multinomial(args.n, channels.apply(q, rng.dirichlet(np.full(k, 0.5))))
        grid = np.arange(k, dtype=float)
        with threadpool_limits(1, user_api="blas"):
            pi, _ = likelihood.certified_maximum(q, counts)
            cut = likelihood.likelihood_cut(0.95)
            fit = cpu(lambda: likelihood.certified_maximum(q, counts), args.repeats)
            bootstrap = cpu(lambda: bootstrap.bootstrap(q, pi, args.n, counts=counts), args.repeats)
            rows = cpu(lambda: [likelihood.profile_interval(q, counts, pi, unit, cut) for unit in np.eye(k)], args.repeats) \
                if k <= 101 else float("nan")
            mean = cpu(lambda: likelihood.profile_interval(q, counts, pi, grid, cut), args.repeats)
        def whole(values=False):
            return estimate_counts(mechanism, counts, 0.95, None, "q", scores=averaged, values=values)

        cold = cpu(whole, args.repeats, before=forget)
        again = cpu(whole, args.repeats)
        per_value = cpu(lambda: whole(values=True), 1, before=forget) if ranges.is_wide(mechanism) else float("nan")
        peak = _peak_megabytes(name, args.n)
        print(f"{name:<16}{k:>8}{q.shape[0]:>8}{fit:>8.3f}{bootstrap:>10.3f}{rows:>8.3f}{mean:>8.3f}{cold:>10.3f}"
              f"{again:>8.3f}{per_value:>8.3f}{peak:>9.0f}")


def _peak_megabytes(name: str, n: int) -> float:
    """The resident peak of a fresh process that imports deniable and makes one cold estimate of the case."""
    import json
    import subprocess
    import sys

    # VmHWM, not getrusage's maxrss: Linux keeps a process's maxrss across exec, so a child started by a process that
    # had grown reported the parent's peak.
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import grids; "
            f"grids.one_estimate({name!r}, {n}); "
            "print([line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')][0])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.split()[-1]) / 1024


def one_estimate(name: str, n: int):
    kind, k, epsilon = CASES[name]
    asked = question(kind, k, epsilon)
    q = channels.channel_matrix(asked.mechanism)
    rng = np.random.default_rng(k)
    counts = rng.multinomial(n, channels.apply(q, rng.dirichlet(np.full(k, 0.5))))
    return estimate_counts(asked.mechanism, counts, 0.95, None, "q", scores=scores(asked) if kind == "ordinal" else None)


if __name__ == "__main__":
    main()
