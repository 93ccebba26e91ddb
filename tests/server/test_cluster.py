"""Several server processes against one database: nothing lost, nothing counted twice, every
single-use token accepted exactly once, a worker killed with SIGKILL mid-load and restarted."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from deniable import storage
from deniable.client import Survey
from tests.conftest import EXAMPLES
from tests.server.conftest import ANSWERS, free_port

DENIABLE = str(Path(sys.executable).with_name("deniable"))


def start(db_url: str, port: int, workers: int = 1) -> subprocess.Popen:
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"deniable-serve-{port}.log"
    with open(log, "wb") as stderr:
        process = subprocess.Popen([DENIABLE, "serve", "--db", db_url, "--port", str(port), "--threads", "8",
                                    "--workers", str(workers), "--no-rate-limits"], stdout=subprocess.DEVNULL, stderr=stderr,
                                   env={**os.environ, "DENIABLE_ADMIN_TOKEN": "t"}, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:
                if response.status == 200:
                    return process
        except (OSError, http.client.HTTPException):
            time.sleep(0.1)
    stop(process, signal.SIGKILL)
    raise RuntimeError(f"deniable serve did not start: {log.read_text()[-2000:]}")


def stop(process: subprocess.Popen, sig=signal.SIGTERM):
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
    process.wait(timeout=20)


def post(port: int, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/surveys/tax/responses",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def pg_url(postgres):
    return postgres.fresh_url()


def test_four_processes_on_postgresql_race_tokens_and_survive_a_kill(pg_url):
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    with storage.Store(pg_url) as store:
        store.add_survey(survey)
        tokens = store.issue_tokens("tax", 150)
    ports = [free_port() for _ in range(4)]
    servers = [start(pg_url, port) for port in ports]
    statuses: Counter = Counter()
    acknowledged: dict[str, str] = {}  # idempotency key -> response id, from 201s and 200s
    lock = threading.Lock()

    def attempt(body: dict, port: int):
        key = body["idempotency_key"]
        try:
            status, payload = post(port, body)
        except (OSError, http.client.HTTPException):
            return  # that process was killed mid-request: not acknowledged
        with lock:
            statuses[status] += 1
            if status in (200, 201):
                acknowledged[key] = payload["id"]

    # Every token is sent three times at once to three different processes: twice under two
    # different keys (only one may win) and once more as a retry of the first key.
    jobs = []
    for n, token in enumerate(tokens):
        first, second = ({"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(12), "token": token,
                          "reports": survey.randomize(ANSWERS)} for _ in range(2))
        jobs += [(first, ports[n % 4]), (second, ports[(n + 1) % 4]), (first, ports[(n + 2) % 4])]
    try:
        with ThreadPoolExecutor(max_workers=32) as pool:
            futures = [pool.submit(attempt, *job) for job in jobs]
            deadline = time.monotonic() + 60
            while sum(statuses.values()) < len(jobs) // 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            stop(servers[1], signal.SIGKILL)  # one worker dies mid-load
            servers[1] = start(pg_url, ports[1])  # and comes back
            for future in futures:
                future.result()
    finally:
        for server in servers:
            stop(server)

    with storage.Store(pg_url) as store:
        rows = store.execute("SELECT id, idempotency_key FROM responses").fetchall()
        ids = [r[0] for r in rows]
        assert len(ids) == len(set(ids))
        stored_keys = {key: rid for rid, key in rows}
        # every acknowledged response is stored, under the id it was acknowledged with
        for key, rid in acknowledged.items():
            assert stored_keys.get(key) == rid
        # one response per token at most, and each used token stands for exactly one response
        used = store.token_counts("tax")["used"]
        assert used == len(rows) <= len(tokens)
        # acknowledged = stored = counted
        assert store.get_survey("tax").responses == len(rows)
        totals = sorted((q, v, int(c)) for q, v, c in store.execute(
            "SELECT question_id, value, SUM(count) FROM report_counts GROUP BY question_id, value").fetchall())
        scanned = sorted(store.execute("SELECT question_id, value, COUNT(*) FROM reports GROUP BY question_id, value").fetchall())
        assert totals == scanned
    assert statuses[201] <= len(rows)  # a 201 lost with a killed process is still stored, never twice
    assert statuses[201] >= 100 and statuses[409] >= 50 and statuses[200] >= 20, statuses
    assert set(statuses) <= {200, 201, 409}, statuses


def test_serve_with_several_workers_on_sqlite(tmp_path):
    db = str(tmp_path / "workers.db")
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    with storage.Store(db) as store:
        store.add_survey(survey)
    port = free_port()
    server = start(db, port, workers=3)
    try:
        bodies = [{"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(12), "reports": survey.randomize(ANSWERS)}
                  for _ in range(120)]
        with ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(lambda b: post(port, b), bodies))
        assert Counter(status for status, _ in results) == {201: 120}
        pids = set()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz") as response:
            health = json.loads(response.read())
        assert health == {"database": "sqlite", "schema_version": storage.SCHEMA_VERSION,
                          "expected_schema_version": storage.SCHEMA_VERSION, "ok": True}
        workers = subprocess.run(["pgrep", "-g", str(server.pid)], capture_output=True, text=True).stdout.split()
        pids.update(workers)
        assert len(pids) >= 4  # the gunicorn master and its three workers
    finally:
        stop(server)
    with storage.Store(db) as store:
        assert store.get_survey("tax").responses == 120
