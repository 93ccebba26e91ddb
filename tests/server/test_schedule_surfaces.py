"""A survey's window (`opens`, `closes` in its spec) on every surface, both engines: before it opens the page says
when and every write path refuses (409 naming survey_id, nothing stored); from its close on the page says closed and
every write path answers 410 as for a survey an admin closed; a retry of a response stored before the close still
gets its acknowledgement."""

import datetime as dt
import json

import pytest

from deniable import storage
from deniable.client import Survey
from tests.conftest import EXAMPLES
from tests.server.conftest import ANSWERS

pytestmark = pytest.mark.both_engines


def _windowed(**window) -> Survey:
    spec = json.loads(Survey.from_file(EXAMPLES / "tax.yaml").canonical_json())
    return Survey.from_dict({**spec, **window})


def _instant(days: float) -> str:
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _body(survey: Survey, key: str) -> dict:
    return {"spec_hash": survey.hash, "idempotency_key": key, "reports": survey.randomize(ANSWERS)}


def test_before_it_opens_the_page_says_when_and_nothing_is_stored(client, store, admin_headers):
    survey = _windowed(opens=_instant(2))
    store.add_survey(survey)
    page = client.get("/s/tax")
    assert page.status_code == 409 and "not open yet" in page.get_data(as_text=True)
    assert survey.schedule.opens.strftime("%Y-%m-%d %H:%M") in page.get_data(as_text=True)
    single = client.post("/api/v1/surveys/tax/responses", json=_body(survey, "early-key-0001"))
    assert single.status_code == 409 and single.json["error"]["field"] == "survey_id"
    assert "opens at" in single.json["error"]["message"]
    batch = client.post("/api/v1/surveys/tax/responses:batch", json={"items": [_body(survey, "early-key-0002")]})
    assert batch.status_code in (200, 207) and batch.json["results"][0]["status"] == 409
    assert store.response_count("tax") == 0
    assert client.get("/api/v1/surveys/tax", headers=admin_headers).json["state"] == "not open"


def test_from_its_close_on_it_is_closed_and_a_retry_of_an_earlier_response_is_still_answered(client, store,
                                                                                               admin_headers, demo):
    store.add_survey(demo)
    early = _body(demo, "stored-before-close")
    assert client.post("/api/v1/surveys/tax/responses", json=early).status_code == 201
    closed = _windowed(closes=_instant(-1))
    store.add_survey(closed)
    page = client.get("/s/tax")
    assert page.status_code == 410
    late = client.post("/api/v1/surveys/tax/responses", json=_body(closed, "sent-after-close"))
    assert late.status_code == 410 and "closed at" in late.json["error"]["message"]
    batch = client.post("/api/v1/surveys/tax/responses:batch", json={"items": [_body(closed, "batch-after-close")]})
    assert batch.json["results"][0]["status"] == 410
    retry = client.post("/api/v1/surveys/tax/responses", json=early)
    assert retry.status_code == 200
    assert store.response_count("tax") == 1
    payload = client.get("/api/v1/surveys/tax", headers=admin_headers).json
    assert payload["state"] == "closed" and payload["closed"] is True


def test_a_token_survey_s_batch_is_refused_outside_its_window_too(db_path, demo):
    survey = _windowed(closes=_instant(-0.5))
    with storage.Store(db_path) as store:
        store.add_survey(survey, access="token")
        tokens = store.issue_tokens("tax", 2)
        outcomes = store.submit_many("tax", [(survey.hash, f"token-key-{i:04d}", survey.randomize(ANSWERS), token)
                                             for i, token in enumerate(tokens)])
        assert all(isinstance(o, storage.Gone) for o in outcomes)
        assert store.response_count("tax") == 0 and store.token_counts("tax")["used"] == 0
