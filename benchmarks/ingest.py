"""Ingest throughput on loopback against a real `deniable serve`, beside raw sqlite-utils floors.

    python benchmarks/ingest.py [--seconds 5] [--clients 8] [--batch 500]

Prints responses/s through the single endpoint and reports/s through the batch endpoint, and,
in the same run, the same rows inserted with sqlite-utils directly (per-row commits for the single
case, one transaction per batch for the batch case). Bounded in time and count; talks only to
127.0.0.1; stops the server it started.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import sqlite_utils

from deniable.client import Survey
from deniable.server import storage
from deniable.server.demo import demo_survey, simulated_answers

MAX_SINGLE = 20_000
MAX_BATCH_REPORTS = 500_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


def response_body(survey: Survey) -> dict:
    return {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(16),
            "reports": survey.randomize(simulated_answers())}


def single_endpoint(base: str, survey: Survey, seconds: float, clients: int) -> tuple[int, float]:
    bodies = [response_body(survey) for _ in range(MAX_SINGLE)]
    url = f"{base}/api/v1/surveys/{survey.id}/responses"
    lock, position, done = threading.Lock(), [0], [0]
    deadline = time.perf_counter() + seconds

    def worker():
        while time.perf_counter() < deadline:
            with lock:
                if position[0] >= len(bodies):
                    return
                body = bodies[position[0]]
                position[0] += 1
            status, _ = post(url, body)
            assert status == 201, status
            with lock:
                done[0] += 1

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0], time.perf_counter() - start


def batch_endpoint(base: str, survey: Survey, seconds: float, batch: int) -> tuple[int, float]:
    url = f"{base}/api/v1/surveys/{survey.id}/responses:batch"
    sent, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds and sent * len(survey.questions) < MAX_BATCH_REPORTS:
        items = [response_body(survey) for _ in range(batch)]
        status, result = post(url, {"items": items})
        assert status == 200 and result["statuses"] == {"201": batch}, result["statuses"]
        sent += batch
    return sent * len(survey.questions), time.perf_counter() - start


def raw_floor(survey: Survey, count: int, per_row_commit: bool) -> float:
    """Seconds to insert `count` responses (and their report rows) with sqlite-utils directly."""
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "floor.db")
        with storage.Store(path):
            pass  # the same schema
        db = sqlite_utils.Database(path)
        db.enable_wal()
        db.execute("PRAGMA synchronous=FULL")
        rows = [response_body(survey) for _ in range(count)]
        start = time.perf_counter()
        if per_row_commit:
            for body in rows:
                response_id = secrets.token_hex(16)
                with db.conn:
                    db["responses"].insert({"id": response_id, "survey_id": survey.id, "spec_hash": body["spec_hash"],
                                            "received_on": "2026-01-01", "idempotency_key": body["idempotency_key"],
                                            "fingerprint": "x"})
                    db["reports"].insert_all({"response_id": response_id, "spec_hash": body["spec_hash"], "question_id": q,
                                              "value": json.dumps(v)} for q, v in body["reports"].items())
        else:
            with db.conn:
                responses, reports = [], []
                for body in rows:
                    response_id = secrets.token_hex(16)
                    responses.append({"id": response_id, "survey_id": survey.id, "spec_hash": body["spec_hash"],
                                      "received_on": "2026-01-01", "idempotency_key": body["idempotency_key"], "fingerprint": "x"})
                    reports += [{"response_id": response_id, "spec_hash": body["spec_hash"], "question_id": q,
                                 "value": json.dumps(v)} for q, v in body["reports"].items()]
                db["responses"].insert_all(responses)
                db["reports"].insert_all(reports)
        elapsed = time.perf_counter() - start
        db.close()
        return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    survey = demo_survey()
    with tempfile.TemporaryDirectory() as folder:
        db_path = str(Path(folder) / "bench.db")
        with storage.Store(db_path) as store:
            store.add_survey(survey)
        port = free_port()
        deniable = str(Path(sys.executable).with_name("deniable"))
        server = subprocess.Popen([deniable, "serve", "--db", db_path, "--port", str(port), "--threads", str(args.clients)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env={**os.environ, "DENIABLE_ADMIN_TOKEN": "bench"})
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"{base}/api/v1/surveys/{survey.id}", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            singles, single_time = single_endpoint(base, survey, args.seconds, args.clients)
            reports, batch_time = batch_endpoint(base, survey, args.seconds, args.batch)
        finally:
            server.terminate()
            server.wait(timeout=10)
    single_rate = singles / single_time
    batch_rate = reports / batch_time
    floor_single = singles / raw_floor(survey, singles, per_row_commit=True)
    floor_batch = reports / raw_floor(survey, reports // len(survey.questions), per_row_commit=False)
    q = len(survey.questions)
    print(f"demo survey: {q} questions per response; server: deniable serve (waitress, {args.clients} threads), "
          f"{args.clients} client threads on 127.0.0.1")
    print(f"{'path':<44} {'rate':>14} {'raw sqlite-utils floor':>24} {'ratio':>7}")
    print(f"{'single POST /responses (responses/s)':<44} {single_rate:>14,.0f} {floor_single:>24,.0f} {single_rate / floor_single:>7.2f}")
    print(f"{'batch POST /responses:batch (reports/s)':<44} {batch_rate:>14,.0f} {floor_batch:>24,.0f} {batch_rate / floor_batch:>7.2f}")
    print(f"(single: {singles} responses in {single_time:.1f}s; batch: {reports} reports in {batch_time:.1f}s, {args.batch} responses per batch)")


if __name__ == "__main__":
    main()
