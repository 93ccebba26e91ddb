"""Invariant 6: a response acknowledged to the client survives kill -9 of the server process."""

import http.client
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from deniable import storage
from deniable.client import Survey
from tests.conftest import EXAMPLES
from tests.server.conftest import ANSWERS, free_port

DENIABLE = str(Path(sys.executable).with_name("deniable"))


def start_server(db_path, port):
    process = subprocess.Popen([DENIABLE, "serve", "--db", db_path, "--port", str(port), "--threads", "8", "--no-rate-limits"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "DENIABLE_ADMIN_TOKEN": "t"})
    deadline = time.monotonic() + 90  # a loaded machine starts it slowly: a start is not what is under test
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"deniable serve exited with {process.returncode} before it answered")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/surveys/tax", timeout=1)
            return process
        except (OSError, http.client.HTTPException):  # IncompleteRead when killed mid-answer
            time.sleep(0.1)
    process.kill()
    process.wait(timeout=30)  # reaped, its port and database released, before the next test starts
    raise RuntimeError("deniable serve did not start")


def post(port, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/surveys/tax/responses", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


@pytest.mark.both_engines
def test_acknowledged_responses_survive_kill_9_exactly_once(db_path):
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    with storage.Store(db_path) as store:
        store.add_survey(survey)
    port = free_port()
    server = start_server(db_path, port)
    bodies = [{"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(16), "reports": survey.randomize(ANSWERS)}
              for _ in range(300)]
    acknowledged = {}

    def send(body):
        try:
            status, ack = post(port, body)
        except (OSError, http.client.HTTPException):
            return  # not acknowledged: the server was killed first (or mid-answer: IncompleteRead)
        if status == 201:
            acknowledged[body["idempotency_key"]] = ack["id"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(send, body) for body in bodies]
        deadline = time.monotonic() + 60
        while len(acknowledged) < 150 and time.monotonic() < deadline:  # kill in the middle of the stream
            time.sleep(0.005)
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
        for future in futures:
            future.result()

    server = start_server(db_path, port)
    try:
        with storage.Store(db_path) as store:
            stored_ids = [row["id"] for row in store.export("tax")]
            assert len(stored_ids) == len(set(stored_ids))
            assert set(acknowledged.values()) <= set(stored_ids)
            before = len(stored_ids)
        # retrying bodies (as clients whose answer was lost would) stores nothing twice
        for body in bodies[:50]:
            status, ack = post(port, body)
            if body["idempotency_key"] in acknowledged:
                assert status == 200 and ack["id"] == acknowledged[body["idempotency_key"]]
        with storage.Store(db_path) as store:
            keys = [row[0] for row in store.execute("SELECT idempotency_key FROM responses")]
            assert len(keys) == len(set(keys))
            assert {b["idempotency_key"] for b in bodies[:50]} <= set(keys)
            assert len(keys) >= before
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert len(acknowledged) >= 150

