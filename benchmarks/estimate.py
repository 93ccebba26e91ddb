"""Estimation from memory and from storage, beside the peer libraries.

    pip install 'deniable[bench]'          # pure-ldp and multi-freq-ldpy, benchmark only
    python benchmarks/estimate.py [--memory 1000000] [--sizes 1000000,10000000] [--options 4,100] [--seed 1]

One categorical question with k options, k-ary randomized response at ε = ln 3 (so every library uses
exactly the same channel, p = e^ε/(e^ε + k − 1)).

* In memory: `estimate(mechanism, reports)` (count, validate, certified maximum likelihood, unbiased
  estimate, profile-likelihood intervals: the whole result) on 10^6 reports held as a Python list of
  strings, a numpy string array, a pandas Series and a pandas categorical, beside multi-freq-ldpy's
  `GRR_Aggregator_MI` on the same reports as it takes them (integer codes, as a list and as an array).
* Stored: the same reports in a deniable SQLite database, `load` + `estimate` (a lookup of the running
  totals, then the same certified estimation), beside pure-ldp (DEServer) and multi-freq-ldpy (GRR with
  MI and IBU post-processing). Prints wall time and MSE against the true shares.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from deniable import storage
from deniable.analysis import channels, estimate, load
from deniable.analysis.from_counts import estimate_counts
from deniable.client import Survey


def options(k: int) -> list[str]:
    return ["a", "b", "c", "d"] if k == 4 else [f"option {i}" for i in range(k)]


def truth(k: int) -> np.ndarray:
    """Skewed, with one share 0 (the case where the estimate sits on the boundary)."""
    shares = np.concatenate([0.6 ** np.arange(k - 1), [0.0]])
    return shares / shares.sum()


def spec(k: int) -> dict:
    return {"id": "bench", "title": "bench", "questions": [
        {"id": "q", "type": "choice", "text": "?", "options": options(k), "privacy": {"design": "k_rr", "epsilon": "ln 3"}}]}


def simulate(n: int, k: int, rng) -> tuple[np.ndarray, np.ndarray]:
    survey = Survey.from_dict(spec(k))
    q = channels.channel_matrix(survey.questions["q"].mechanism)
    answers = rng.choice(k, size=n, p=truth(k))
    cumulative = np.cumsum(q, axis=0)  # column a: CDF over reports
    draws = rng.random(n)
    reports = (draws[:, None] > cumulative[:, answers].T).sum(axis=1)
    return answers, reports


def store(path: str, k: int, reports: np.ndarray) -> float:
    survey = Survey.from_dict(spec(k))
    start = time.perf_counter()
    with storage.Store(path) as db:
        db.add_survey(survey)
        values = [f'"{o}"' for o in options(k)]
        for chunk in range(0, len(reports), 200_000):  # a transaction per chunk keeps the WAL small
            with db.transaction():
                part = reports[chunk:chunk + 200_000]
                # sequential ids: the server draws random ones, but random keys only slow this set-up
                ids = [f"{chunk + i:032x}" for i in range(len(part))]
                db.connection.executemany(
                    "INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, fingerprint) "
                    "VALUES (?, 'bench', ?, '2026-01-01', ?, '')", [(i, survey.hash, i) for i in ids])
                db.connection.executemany("INSERT INTO reports (response_id, spec_hash, question_id, value) VALUES (?, ?, 'q', ?)",
                                       [(i, survey.hash, values[r]) for i, r in zip(ids, part)])
        db.rebuild_counts()  # the rows went in around `submit`, so bring its running totals up to date
    return time.perf_counter() - start


def mse(estimate_vector, truth) -> float:
    return float(np.mean((np.asarray(estimate_vector, dtype=float) - truth) ** 2))


def best_of(repeats: int, function) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return min(timings)


def in_memory(n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    _, codes = simulate(n, k, rng)
    labels = np.array(options(k))
    mechanism = Survey.from_dict(spec(k)).questions["q"].mechanism
    containers = {"Python list of str": labels[codes].tolist(), "numpy str array": labels[codes],
                  "pandas Series (object)": pd.Series(labels[codes].tolist()),
                  "pandas categorical": pd.Series(pd.Categorical.from_codes(codes, categories=options(k)))}
    epsilon = float(np.log(3))
    rows = []
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI

        as_list = codes.tolist()
        peer = best_of(3, lambda: GRR_Aggregator_MI(as_list, k, epsilon))
        rows.append(("multi-freq-ldpy GRR_Aggregator_MI, list of int codes", peer, ""))
        rows.append(("multi-freq-ldpy GRR_Aggregator_MI, numpy int codes",
                     best_of(3, lambda: GRR_Aggregator_MI(codes, k, epsilon)), ""))
    except ImportError:
        peer = float("nan")
        rows.append(("multi-freq-ldpy: not installed (pip install 'deniable[bench]')", peer, ""))
    for name, reports in containers.items():
        seconds = best_of(3, lambda: estimate(mechanism, reports))
        rows.append((f"deniable estimate(), {name}", seconds, f"{peer / seconds:.1f}x faster"))
    counts = estimate(mechanism, containers["pandas categorical"]).counts
    rows.append(("deniable: the estimation alone (from counts)",
                 best_of(3, lambda: estimate_counts(mechanism, counts, 0.95, None, "q")), ""))
    print(f"\nIn memory: n = {n:,} reports, k = {k} options (best of 3; ratios against MI on a list of int codes)")
    print(f"{'estimator':<62} {'seconds':>9}  ratio")
    for name, seconds, ratio in rows:
        print(f"{name:<62} {seconds:>9.4f}  {ratio}")


def run(n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    answers, reports = simulate(n, k, rng)
    true_shares = np.bincount(answers, minlength=k) / n  # the sample's true shares
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "bench.db")
        insert_seconds = store(path, k, reports)
        start = time.perf_counter()
        data = load(db=path, survey_id="bench")
        result = estimate(data, "q")
        ours = time.perf_counter() - start
        assert result.converged
        rows.append((f"deniable: load from SQLite + estimate (certified, gap {result.optimality_gap:.0e})", ours,
                     mse(result.table["estimate"], true_shares)))
        rows.append(("deniable: … the unbiased column of the same result", ours, mse(result.table["unbiased"], true_shares)))
    epsilon = float(np.log(3))
    try:
        from pure_ldp.frequency_oracles.direct_encoding import DEServer

        start = time.perf_counter()
        server = DEServer(epsilon, k, index_mapper=lambda x: x)
        for report in reports.tolist():
            server.aggregate(report)
        pure = [server.estimate(i, suppress_warnings=True) / n for i in range(k)]
        rows.append(("pure-ldp DEServer (in memory)", time.perf_counter() - start, mse(pure, true_shares)))
    except ImportError:
        rows.append(("pure-ldp: not installed (pip install 'deniable[bench]')", float("nan"), float("nan")))
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_IBU, GRR_Aggregator_MI

        as_list = reports.tolist()
        start = time.perf_counter()
        mi = GRR_Aggregator_MI(as_list, k, epsilon)
        rows.append(("multi-freq-ldpy GRR MI (in memory)", time.perf_counter() - start, mse(mi, true_shares)))
        start = time.perf_counter()
        ibu = GRR_Aggregator_IBU(as_list, k, epsilon)
        rows.append(("multi-freq-ldpy GRR IBU (in memory)", time.perf_counter() - start, mse(ibu, true_shares)))
    except ImportError:
        rows.append(("multi-freq-ldpy: not installed (pip install 'deniable[bench]')", float("nan"), float("nan")))
    print(f"\nStored: n = {n:,} reports, k = {k} (insert took {insert_seconds:.1f} s, not counted)")
    print(f"{'estimator':<62} {'seconds':>9} {'MSE vs truth':>14}")
    for name, seconds, error in rows:
        print(f"{name:<62} {seconds:>9.3f} {error:>14.3e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", type=int, default=1_000_000, help="in-memory reports (0: skip)")
    parser.add_argument("--sizes", default="1000000,10000000", help="stored reports, comma-separated (empty: skip)")
    parser.add_argument("--options", default="4,100", help="numbers of options k, comma-separated")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    ks = [int(k) for k in args.options.split(",")]
    for k in ks:
        if args.memory:
            in_memory(args.memory, k, args.seed)
    for n in (int(float(s)) for s in args.sizes.split(",") if s):
        for k in ks:
            run(n, k, args.seed)


if __name__ == "__main__":
    main()
