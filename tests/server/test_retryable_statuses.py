"""Every failure whose message says "send it again" is a 503 with Retry-After, which both clients keep and send
again (client/statuses.py); it was a 400, which both outboxes took as final and so dropped the response."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from deniable import storage
from deniable.storage import group_commit, transactions
from deniable.storage.writes import Writes
from tests.server.conftest import ANSWERS

pytestmark = pytest.mark.both_engines


class Busy(Exception):
    """Stands for PostgreSQL's deadlock or serialization failure."""


def test_a_write_still_busy_after_its_retries_is_a_503_with_retry_after(client, survey, monkeypatch):
    monkeypatch.setattr(transactions, "_transient", lambda: (Busy,))
    tries = []

    def busy(self, *args):
        tries.append(1)
        raise Busy("deadlock detected")

    for method in ("_store_response", "store_batch", "store_in_one_statement"):  # alone, in a group or batch, in one
        monkeypatch.setattr(Writes, method, busy)
    body = {"spec_hash": survey.hash, "idempotency_key": "k" * 16, "reports": survey.randomize(ANSWERS)}
    response = client.post("/api/v1/surveys/tax/responses", json=body)
    assert response.status_code == 503 and response.headers["Retry-After"]
    assert "send it again" in response.json["error"]["message"] and len(tries) >= transactions.RETRIES
    batch = client.post("/api/v1/surveys/tax/responses:batch", json={"items": [body]})
    assert batch.status_code == 503 and batch.headers["Retry-After"]


def test_the_followers_of_a_failed_group_commit_each_get_a_503_of_their_own(db_path, survey, monkeypatch):
    committer = storage.GroupCommit()
    release = threading.Event()
    original = group_commit._write

    def failing(store, entries):
        release.wait(30)
        if len(entries) > 1:
            raise RuntimeError("the server failed mid-write")
        return original(store, entries)

    monkeypatch.setattr(group_commit, "_write", failing)
    stores = [storage.Store(db_path, migrate=False, group_commit=committer) for _ in range(4)]

    def send(store):
        try:
            return store.submit("tax", survey.hash, f"key-{id(store)}", survey.randomize(ANSWERS))
        except Exception as error:  # noqa: BLE001 - the outcome under test
            return error

    try:
        with ThreadPoolExecutor(4) as pool:
            first = pool.submit(send, stores[0])
            deadline = time.monotonic() + 30
            while not committer._leading and time.monotonic() < deadline:
                time.sleep(0.005)
            rest = [pool.submit(send, s) for s in stores[1:]]
            while len(committer._queue) < 3 and time.monotonic() < deadline:
                time.sleep(0.005)
            release.set()
            outcomes = [f.result(30) for f in [first, *rest]]
    finally:
        for store in stores:
            store.close()
    followers = [o for o in outcomes if isinstance(o, storage.StorageError)]
    assert isinstance(outcomes[0], (RuntimeError, tuple))  # the leader's own failure, or stored alone after it
    assert followers and all(isinstance(o, storage.Unavailable) and o.status == 503 for o in followers)
    assert len({id(o) for o in followers}) == len(followers)  # one instance each, never one shared by threads
