"""Rate limits on public endpoints: a 429 with a JSON body, counted per address in memory only."""

from __future__ import annotations

import logging
import secrets

import pytest

from deniable.server import create_app
from tests.server.conftest import ADMIN, ANSWERS, form_key, table_rows

ADDRESS = "198.51.100.23"


@pytest.fixture
def limited(db_path, survey):
    app = create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN,
                      "RATE_LIMITS": {"api.post_response": "5 per minute", "respond.survey_page": "3 per minute",
                                      "respond.submit_form": "3 per minute", "admin.sign_in": "2 per minute"}})
    return app


def _post(client, survey, address=ADDRESS, **environ):
    body = {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(8), "reports": survey.randomize(ANSWERS)}
    return client.post("/api/v1/surveys/tax/responses", json=body, environ_base={"REMOTE_ADDR": address, **environ})


def test_a_limited_request_gets_429_with_a_json_body_and_no_address_is_kept(limited, survey, store, caplog, db_path):
    caplog.set_level(logging.DEBUG)
    client = limited.test_client()
    statuses = [_post(client, survey).status_code for _ in range(7)]
    assert statuses == [201] * 5 + [429] * 2
    refused = _post(client, survey)
    assert refused.status_code == 429 and refused.is_json
    assert refused.get_json()["error"]["status"] == 429 and "5 per 1 minute" in refused.get_json()["error"]["message"]
    assert _post(client, survey, address="198.51.100.24").status_code == 201  # another address has its own count
    assert ADDRESS not in caplog.text
    dump = repr([table_rows(store, t) for t in store.engine.table_names()])
    assert ADDRESS not in dump


def test_pages_and_sign_in_are_limited_too(limited, survey):
    client = limited.test_client()
    environ = {"REMOTE_ADDR": ADDRESS}
    assert [client.get("/s/tax", environ_base=environ).status_code for _ in range(4)] == [200, 200, 200, 429]
    page = client.get("/s/tax", environ_base=environ, headers={"Accept-Language": "es"}).get_data(as_text=True)
    assert "Demasiadas solicitudes" in page and "No se envió nada" in page  # said in the respondent's words
    assert [client.post("/admin/login", data={"token": "x"}, environ_base=environ).status_code
            for _ in range(3)] == [403, 403, 429]
    assert client.get("/s/tax", environ_base={"REMOTE_ADDR": "198.51.100.99"}).status_code == 200


def test_behind_a_proxy_the_forwarded_address_is_counted(db_path, survey):
    app = create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN, "PROXY_HOPS": 1,
                      "RATE_LIMITS": {"api.post_response": "2 per minute"}})
    client = app.test_client()
    first = [_post(client, survey, address="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.1").status_code for _ in range(3)]
    second = [_post(client, survey, address="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.2").status_code for _ in range(2)]
    assert first == [201, 201, 429] and second == [201, 201]


def test_the_default_limits_let_an_office_behind_one_address_answer(db_path, survey):
    """500 people behind one NAT address open the page and answer within a minute or two."""
    from deniable.server import RATE_LIMITS

    assert RATE_LIMITS["respond.survey_page"] == "600 per minute" and RATE_LIMITS["api.post_response"] == "600 per minute"
    app = create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN})
    client = app.test_client()
    opened = [client.get("/s/tax", environ_base={"REMOTE_ADDR": ADDRESS}).status_code for _ in range(500)]
    assert set(opened) == {200}


def test_limits_can_be_turned_off(db_path, survey):
    app = create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN, "RATELIMIT_ENABLED": False,
                      "RATE_LIMITS": {"api.post_response": "1 per minute"}})
    client = app.test_client()
    assert {_post(client, survey).status_code for _ in range(5)} == {201}
    assert form_key(client, "tax")
