"""Single responses are answered beneath Flask (`server.ingest`): the same judgements, bodies and headers as every
other API route, on both engines. Every other test that posts a response goes through this layer too (Flask's test
client calls the WSGI app); these pin what only a layer of its own can get wrong."""

from __future__ import annotations

import io
import json
import logging
import secrets
import sys

import pytest

from deniable.server import CONTENT_SECURITY_POLICY, create_app, ingest
from tests.server.conftest import ADMIN, ANSWERS

pytestmark = pytest.mark.both_engines

PATH = "/api/v1/surveys/tax/responses"


def _body(survey) -> dict:
    return {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(8), "reports": survey.randomize(ANSWERS)}


def _call(app, body: bytes, **environ):
    """The app as a WSGI server calls it, with an environ we control (no Content-Length, a chunked body)."""
    answered = {}

    def start_response(status, headers, exc_info=None):
        answered["status"], answered["headers"] = status, dict(headers)

    base = {"REQUEST_METHOD": "POST", "PATH_INFO": PATH, "SCRIPT_NAME": "", "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
            "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr, "wsgi.multithread": True,
            "wsgi.multiprocess": False, "wsgi.run_once": False, "wsgi.version": (1, 0), "REMOTE_ADDR": "127.0.0.1"}
    base.update(environ)
    data = b"".join(app(base, start_response))
    return answered["status"], answered["headers"], json.loads(data)


def test_a_stored_response_carries_every_api_header_and_flask_s_json(client, survey):
    answer = client.post(PATH, json=_body(survey))
    assert answer.status_code == 201 and answer.status == "201 CREATED"
    assert answer.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert (answer.headers["X-Content-Type-Options"], answer.headers["Referrer-Policy"], answer.headers["X-Frame-Options"],
            answer.headers["Cache-Control"]) == ("nosniff", "no-referrer", "DENY", "no-store")
    assert answer.mimetype == "application/json" and answer.get_data(as_text=True).endswith("}\n")
    assert answer.get_json()["survey_id"] == "tax" and int(answer.headers["Content-Length"]) == len(answer.get_data())
    other = client.get("/api/v1/surveys/tax")  # a Flask route: the same headers
    assert {k: other.headers[k] for k, _ in answer.headers if k.startswith(("Content-Security", "X-", "Referrer"))} == \
        {k: answer.headers[k] for k, _ in answer.headers if k.startswith(("Content-Security", "X-", "Referrer"))}


def test_refusals_are_json_naming_the_field(client, survey):
    cases = [
        (client.post(PATH, data="{}", content_type="text/plain"), 415, "body"),
        (client.post(PATH, data="{", content_type="application/json"), 400, "body"),
        (client.post(PATH, data="[]", content_type="application/json"), 400, "body"),
        (client.post(PATH, data=b"x" * (64 * 1024 + 1), content_type="application/json"), 413, "body"),
        (client.post(PATH, json={**_body(survey), "extra": 1}), 422, "extra"),
        (client.post(PATH, json={**_body(survey), "spec_hash": "nope"}), 422, "spec_hash"),
        (client.post("/api/v1/surveys/nosuch/responses", json=_body(survey)), 404, "survey_id"),
        (client.post("/api/v1/surveys/ta%00x/responses", json=_body(survey)), 400, "path.survey_id"),
        (client.post(PATH + "?a=%00", json=_body(survey)), 400, "query.a"),
        (client.get(PATH), 405, None),
    ]
    for answer, status, field in cases:
        error = answer.get_json()["error"]
        assert (answer.status_code, error["status"], error["field"]) == (status, status, field), error
    assert client.get(PATH).headers["Allow"] == "POST"


def test_a_body_sent_without_a_length_is_read_no_further_than_the_limit(app, survey):
    huge = b'{"pad": "' + b"x" * (1 << 20) + b'"}'
    stream = io.BytesIO(huge)
    status, _, body = _call(app.wsgi_app, b"", CONTENT_LENGTH="", **{"wsgi.input": stream})
    assert status.startswith("413") and body["error"]["field"] == "body"
    assert stream.tell() == 64 * 1024 + 1
    good = json.dumps(_body(survey)).encode()
    status, _, body = _call(app.wsgi_app, good, CONTENT_LENGTH="", **{"wsgi.input": io.BytesIO(good)})
    assert status.startswith("201") and body["survey_id"] == "tax"


def test_other_paths_and_methods_go_to_flask(client, survey):
    assert client.post("/api/v1/surveys/tax/responses/", json=_body(survey)).status_code == 404
    assert client.post("/api/v1/surveys/tax/responses:batch", json={"items": [_body(survey)]}).status_code == 200
    assert client.get("/api/v1/surveys/tax").status_code == 200


def test_an_unexpected_error_is_logged_and_answered_500_in_json(db_path, survey, monkeypatch, caplog):
    app = create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN, "RATELIMIT_ENABLED": False})

    def broken(survey_id, item):
        raise RuntimeError("a bug")

    monkeypatch.setattr(ingest.api, "submit_item", broken)
    with caplog.at_level(logging.ERROR):
        answer = app.test_client().post(PATH, json=_body(survey))
    assert answer.status_code == 500 and answer.get_json()["error"]["status"] == 500
    assert "Exception on /api/v1/surveys/tax/responses [POST]" in caplog.text and "a bug" in caplog.text
    testing = create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN, "RATELIMIT_ENABLED": False, "TESTING": True})
    with pytest.raises(RuntimeError):  # as Flask does under TESTING: the test sees the exception itself
        testing.test_client().post(PATH, json=_body(survey))


def test_the_rate_limit_counts_per_address_with_flask_limiter_s_headers(db_path, survey):
    app = create_app({"DATABASE": db_path, "ADMIN_TOKEN": ADMIN, "RATE_LIMITS": {ingest.ENDPOINT: "2 per minute"}})
    client = app.test_client()
    answers = [client.post(PATH, json=_body(survey), environ_base={"REMOTE_ADDR": "198.51.100.7"}) for _ in range(3)]
    assert [a.status_code for a in answers] == [201, 201, 429]
    assert [a.headers["X-RateLimit-Remaining"] for a in answers] == ["1", "0", "0"]
    assert {a.headers["X-RateLimit-Limit"] for a in answers} == {"2"}
    assert 0 < int(answers[2].headers["Retry-After"]) <= 60
    assert answers[2].get_json()["error"]["message"] == "2 per 1 minute"
    other = client.post(PATH, json=_body(survey), environ_base={"REMOTE_ADDR": "198.51.100.8"})
    assert other.status_code == 201
