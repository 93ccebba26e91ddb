"""PostgreSQL restarted or down under a running app: no request fails on a stale pooled connection, and
while the database is away every answer is a clear 503 (JSON with Retry-After under /api), never a 500."""

import pytest

from deniable import storage
from deniable.client import Survey
from deniable.server import create_app
from tests.conftest import EXAMPLES
from tests.server.conftest import ADMIN


@pytest.fixture
def served(postgres):
    url = postgres.fresh_url()
    with storage.Store(url) as store:
        store.add_survey(Survey.from_file(EXAMPLES / "tax.yaml"))
    app = create_app({"DATABASE": url, "ADMIN_TOKEN": ADMIN, "TESTING": True, "RATELIMIT_ENABLED": False})
    return app.test_client()


def test_a_restart_fails_no_request_and_a_down_database_is_a_503(served, postgres, monkeypatch):
    for _ in range(3):  # the pool holds live connections
        assert served.get("/api/v1/surveys/tax").status_code == 200
    postgres.halt()
    postgres.resume()
    for _ in range(5):  # each pooled connection is stale now: checked and replaced, never a failed request
        assert served.get("/api/v1/surveys/tax").status_code == 200
    monkeypatch.setattr(storage.engines, "GETCONN_SECONDS", 2)
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
