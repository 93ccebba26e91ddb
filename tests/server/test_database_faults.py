"""PostgreSQL restarted or down under a running app: no request fails on a stale pooled connection, and
while the database is away every answer is a clear 503 (JSON with Retry-After under /api), never a 500."""

import pytest

from deniable import storage
from deniable.client import Survey
from deniable.server import create_app
from tests.conftest import EXAMPLES
from tests.server.conftest import ADMIN, ANSWERS


@pytest.fixture
def served(postgres):
    url = postgres.fresh_url()
    with storage.Store(url) as store:
        store.add_survey(Survey.from_file(EXAMPLES / "tax.yaml"))
    app = create_app({"DATABASE": url, "ADMIN_TOKEN": ADMIN, "TESTING": True, "RATELIMIT_ENABLED": False})
    return app.test_client()


@pytest.mark.slow
def test_a_restart_fails_no_request_and_a_down_database_is_a_503(served, postgres, monkeypatch):
    for _ in range(3):  # the pool holds live connections
        assert served.get("/api/v1/surveys/tax").status_code == 200
    postgres.halt()
    postgres.resume()
    for _ in range(5):  # each pooled connection is stale now: checked and replaced, never a failed request
        assert served.get("/api/v1/surveys/tax").status_code == 200
    monkeypatch.setattr(storage.postgresql, "GETCONN_SECONDS", 2)
    postgres.halt()
    try:
        api = served.get("/api/v1/surveys/tax")
        assert api.status_code == 503 and api.headers["Retry-After"] == "5"
        assert api.json["error"]["field"] == "db" and "unavailable" in api.json["error"]["message"]
        health = served.get("/healthz")
        assert health.status_code == 503 and health.json == {"ok": False, "error": "the database is unreachable"}
        page = served.get("/s/tax")
        assert page.status_code == 503 and "try again" in page.get_data(as_text=True)
    finally:
        postgres.resume()
    assert served.get("/api/v1/surveys/tax").status_code == 200
    assert served.get("/healthz").status_code == 200


def test_a_response_sent_while_the_database_is_down_is_a_503_with_retry_after(served, postgres, monkeypatch):
    """Answered by the single-response layer beneath Flask (`server.ingest`), as the API routes answer. A test of its
    own: each request that waits on the halted database lengthens the pool's reconnect backoff, which the test above
    needs short to see the first request after the restart served."""
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    monkeypatch.setattr(storage.postgresql, "GETCONN_SECONDS", 2)
    postgres.halt()
    try:
        sent = served.post("/api/v1/surveys/tax/responses", json={
            "spec_hash": survey.hash, "idempotency_key": "k" * 16, "reports": survey.randomize(ANSWERS)})
        assert sent.status_code == 503 and sent.headers["Retry-After"] == "5"
        assert sent.json["error"]["field"] == "db" and "unavailable" in sent.json["error"]["message"]
    finally:
        postgres.resume()


def test_a_down_database_is_a_503_at_once_and_its_return_is_served_at_the_first_good_connection(served, postgres,
                                                                                                 monkeypatch):
    """With the production wait for a busy pool (here 60 s), a down server was a 503 only after that wait (10-20 s for
    every request, /healthz included) and 503s went on 30 s after it was back (the pool's reconnect back-off). Now a
    request that finds no free connection asks the server itself: down, a 503 in about half a second; back, a pool
    with no connection left is replaced. The requests run in a thread given 20 s: three of them could not finish if
    any waited the 60 s."""
    import threading
    import time

    monkeypatch.setattr(storage.postgresql, "GETCONN_SECONDS", 60)
    assert served.get("/healthz").status_code == 200
    postgres.halt()
    statuses = []
    try:
        worker = threading.Thread(target=lambda: statuses.extend(
            served.get(path).status_code for path in ("/healthz", "/api/v1/surveys/tax", "/s/tax")))
        worker.start()
        worker.join(20)
        assert not worker.is_alive() and statuses == [503, 503, 503]
    finally:
        postgres.resume()
    answered = []
    for _ in range(10):  # served once the server takes connections again, not after the pool's back-off
        answered.append(served.get("/healthz").status_code)
        if answered[-1] == 200:
            break
        time.sleep(0.5)
    assert answered[-1] == 200 and len(answered) <= 4, answered


def sqlite_app(tmp_path, limit):
    """A SQLite deployment with the demo survey whose app connection ``limit`` constrains (a PRAGMA standing
    in for a full disk or a read-only file): (database path, survey, test client)."""
    from deniable.server.db import get_store

    db = str(tmp_path / "limited.db")
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    with storage.Store(db) as store:
        store.add_survey(survey)
    app = create_app({"DATABASE": db, "ADMIN_TOKEN": ADMIN, "TESTING": True, "RATELIMIT_ENABLED": False})
    with app.app_context():
        limit(get_store())  # the thread's connection, which the test client's requests share
    return db, survey, app.test_client()


def test_a_full_disk_is_a_507_that_stores_nothing_and_health_says_so(tmp_path):
    """SQLite at its size limit (PRAGMA max_page_count stands in for a full disk): a response is refused with
    507 naming the cause, nothing is stored, and /healthz reports it; a batch item likewise."""
    import secrets

    db, survey, client = sqlite_app(tmp_path, lambda store: store.execute(
        f"PRAGMA max_page_count = {store.execute('PRAGMA page_count').fetchone()[0]}"))
    body = {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(8), "reports": survey.randomize(ANSWERS)}
    responses = [client.post("/api/v1/surveys/tax/responses", json={**body, "idempotency_key": secrets.token_hex(8)})
                 for _ in range(300)]
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {201, 507} and 507 in statuses  # the free pages fill, then every write is refused
    refused = next(r for r in responses if r.status_code == 507)
    assert refused.json["error"]["message"].startswith("the server's disk is full: nothing was stored")
    assert refused.json["error"]["field"] == "db" and refused.headers["Retry-After"] == "5"
    health = client.get("/healthz")
    assert health.status_code == 503 and "disk is full" in health.json["error"]
    with storage.Store(db, read_only=True) as reader:
        assert reader.response_count("tax") == statuses.count(201)  # a refused response left nothing behind


def test_a_read_only_database_is_a_clear_503_not_a_traceback(tmp_path):
    """A database that cannot be written (PRAGMA query_only stands in for a read-only file or mount: the
    tests run as root, who may write any file): a response is a 503 saying so, nothing is stored, and the
    storage's refusal is a DeniableError (the CLI prints it on one line)."""
    import secrets

    db, survey, client = sqlite_app(tmp_path, lambda store: store.execute("PRAGMA query_only = 1"))
    response = client.post("/api/v1/surveys/tax/responses", json={
        "spec_hash": survey.hash, "idempotency_key": secrets.token_hex(8), "reports": survey.randomize(ANSWERS)})
    assert response.status_code == 503 and "read-only" in response.json["error"]["message"]
    with storage.Store(db, read_only=True) as reader:
        assert reader.response_count("tax") == 0
    with storage.Store(db) as store:
        store.execute("PRAGMA query_only = 1")
        with pytest.raises(storage.Unavailable, match="read-only"):
            store.close_survey("tax")

