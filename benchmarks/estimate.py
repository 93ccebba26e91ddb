"""Estimation from storage at 10^6 and 10^7 stored reports, beside the peer libraries.

    pip install 'deniable[bench]'          # pure-ldp and multi-freq-ldpy, benchmark only
    python benchmarks/estimate.py [--sizes 1000000,10000000] [--seed 1]

One categorical question, k = 4 options, k-ary randomized response at ε = ln 3 (so every library
uses exactly the same channel, p = e^ε/(e^ε + k − 1) = 1/2). The same reports are
(1) stored in a deniable SQLite database and estimated with `load` + `estimate` (load, count in SQL,
invert the channel, EM), and (2) given to pure-ldp (DEServer, direct encoding) and multi-freq-ldpy
(GRR with MI and IBU post-processing). Prints wall time and MSE against the true shares.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from deniable.analysis import estimate, load
from deniable.analysis import estimators as est
from deniable.client import Survey
from deniable.server import storage

OPTIONS = ["a", "b", "c", "d"]
TRUTH = np.array([0.5, 0.3, 0.15, 0.05])
SPEC = {"id": "bench", "title": "bench", "questions": [
    {"id": "q", "type": "choice", "text": "?", "options": OPTIONS, "privacy": {"design": "k_rr", "epsilon": "ln 3"}}]}


def simulate(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    survey = Survey.from_dict(SPEC)
    q = est.channel_matrix(survey.questions["q"].mechanism)
    answers = rng.choice(len(OPTIONS), size=n, p=TRUTH)
    cumulative = np.cumsum(q, axis=0)  # column a: CDF over reports
    draws = rng.random(n)
    reports = (draws[:, None] > cumulative[:, answers].T).sum(axis=1)
    return answers, reports


def store(path: str, reports: np.ndarray) -> float:
    survey = Survey.from_dict(SPEC)
    start = time.perf_counter()
    with storage.Store(path) as db:
        db.add_survey(survey)
        values = [f'"{o}"' for o in OPTIONS]
        for chunk in range(0, len(reports), 200_000):  # a transaction per chunk keeps the WAL small
            with db.transaction():
                part = reports[chunk:chunk + 200_000]
                # sequential ids: the server draws random ones, but random keys only slow this set-up
                ids = [f"{chunk + i:032x}" for i in range(len(part))]
                db.db.conn.executemany(
                    "INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, fingerprint) "
                    "VALUES (?, 'bench', ?, '2026-01-01', ?, '')", [(i, survey.hash, i) for i in ids])
                db.db.conn.executemany("INSERT INTO reports (response_id, spec_hash, question_id, value) VALUES (?, ?, 'q', ?)",
                                       [(i, survey.hash, values[r]) for i, r in zip(ids, part)])
        db.rebuild_counts()  # the rows went in around `submit`, so bring its running totals up to date
    return time.perf_counter() - start


def mse(estimate_vector, truth) -> float:
    return float(np.mean((np.asarray(estimate_vector, dtype=float) - truth) ** 2))


def run(n: int, seed: int):
    rng = np.random.default_rng(seed)
    answers, reports = simulate(n, rng)
    truth = np.bincount(answers, minlength=len(OPTIONS)) / n  # the sample's true shares
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "bench.db")
        insert_seconds = store(path, reports)
        start = time.perf_counter()
        data = load(db=path, survey_id="bench")
        result = estimate(data, "q")
        ours = time.perf_counter() - start
        rows.append(("deniable: load from SQLite + estimate (unbiased)", ours, mse(result.table["estimate"], truth)))
        rows.append(("deniable: … constrained (EM on the simplex)", ours, mse(result.table["constrained"], truth)))
    epsilon = float(np.log(3))
    try:
        from pure_ldp.frequency_oracles.direct_encoding import DEServer

        start = time.perf_counter()
        server = DEServer(epsilon, len(OPTIONS), index_mapper=lambda x: x)
        for report in reports.tolist():
            server.aggregate(report)
        pure = [server.estimate(i, suppress_warnings=True) / n for i in range(len(OPTIONS))]
        rows.append(("pure-ldp DEServer (in memory)", time.perf_counter() - start, mse(pure, truth)))
    except ImportError:
        rows.append(("pure-ldp: not installed (pip install 'deniable[bench]')", float("nan"), float("nan")))
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_IBU, GRR_Aggregator_MI

        as_list = reports.tolist()
        start = time.perf_counter()
        mi = GRR_Aggregator_MI(as_list, len(OPTIONS), epsilon)
        rows.append(("multi-freq-ldpy GRR MI (in memory)", time.perf_counter() - start, mse(mi, truth)))
        start = time.perf_counter()
        ibu = GRR_Aggregator_IBU(as_list, len(OPTIONS), epsilon)
        rows.append(("multi-freq-ldpy GRR IBU (in memory)", time.perf_counter() - start, mse(ibu, truth)))
    except ImportError:
        rows.append(("multi-freq-ldpy: not installed (pip install 'deniable[bench]')", float("nan"), float("nan")))
    print(f"\nn = {n:,} stored reports (insert took {insert_seconds:.1f} s, not counted); true shares {np.round(truth, 4)}")
    print(f"{'estimator':<58} {'seconds':>9} {'MSE vs truth':>14}")
    for name, seconds, error in rows:
        print(f"{name:<58} {seconds:>9.3f} {error:>14.3e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for n in (int(float(s)) for s in args.sizes.split(",")):
        run(n, args.seed)


if __name__ == "__main__":
    main()
