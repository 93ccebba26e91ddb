import json
import logging

import pytest

from deniable.client import Survey
from tests.server.conftest import ANSWERS, table_columns, table_rows

pytestmark = pytest.mark.both_engines


def body(survey, key="k" * 16, **overrides):
    payload = {"spec_hash": survey.hash, "idempotency_key": key, "reports": survey.randomize(ANSWERS)}
    payload.update(overrides)
    return payload


def stored(store):
    return store.execute("SELECT COUNT(*) FROM responses").fetchone()[0], \
        store.execute("SELECT COUNT(*) FROM reports").fetchone()[0]


def test_get_survey_serves_spec_hash_and_privacy(client, survey):
    response = client.get("/api/v1/surveys/tax")
    assert response.status_code == 200
    payload = response.json
    assert payload["hash"] == survey.hash == Survey.from_dict(payload["spec"]).hash
    assert payload["privacy"]["epsilon_total"] == pytest.approx(survey.epsilon)
    assert payload["privacy"]["questions"]["region"]["public"] is True
    assert any("region" in w for w in payload["privacy"]["warnings"])
    assert any("anonymous" in w for w in payload["privacy"]["warnings"])


def test_unknown_survey_is_404_json(client):
    response = client.get("/api/v1/surveys/nope")
    assert response.status_code == 404
    assert response.json["error"]["field"] == "survey_id"


def test_first_submission_201_retry_200_same_body(client, survey, store):
    payload = body(survey)
    first = client.post("/api/v1/surveys/tax/responses", json=payload)
    assert first.status_code == 201
    again = client.post("/api/v1/surveys/tax/responses", json=payload)
    assert again.status_code == 200
    assert again.json == first.json
    assert stored(store) == (1, 6)
    assert set(first.json) == {"id", "survey_id", "spec_hash", "received_on"}


def test_same_key_different_reports_is_refused(client, survey, store):
    payload = body(survey)
    assert client.post("/api/v1/surveys/tax/responses", json=payload).status_code == 201
    payload["reports"]["dodged"] = "no" if payload["reports"]["dodged"] == "yes" else "yes"
    response = client.post("/api/v1/surveys/tax/responses", json=payload)
    assert response.status_code == 422 and response.json["error"]["field"] == "idempotency_key"
    assert stored(store) == (1, 6)


@pytest.mark.parametrize("qid,report", [
    ("dodged", "maybe"), ("dodged", True), ("dodged", ["yes"]), ("cash", "Bitcoin"), ("fairness", 3),
    ("undeclared", ["Tips", "Tips"]), ("undeclared", "Tips"), ("hours", 41), ("hours", 7), ("hours", "10"),
    ("region", "<script>alert(1)</script>"), ("cash", "'; DROP TABLE responses; --"),
])
def test_report_outside_the_alphabet_is_422_naming_the_field(client, survey, store, qid, report):
    payload = body(survey)
    payload["reports"][qid] = report
    response = client.post("/api/v1/surveys/tax/responses", json=payload)
    assert response.status_code == 422
    assert response.json["error"]["field"] == f"reports.{qid}"
    assert stored(store) == (0, 0)


def test_missing_required_and_unknown_questions_are_422(client, survey, store):
    payload = body(survey)
    del payload["reports"]["dodged"]
    response = client.post("/api/v1/surveys/tax/responses", json=payload)
    assert response.status_code == 422 and response.json["error"]["field"] == "reports.dodged"
    payload = body(survey)
    payload["reports"]["favourite_colour"] = "red"
    response = client.post("/api/v1/surveys/tax/responses", json=payload)
    assert response.status_code == 422 and response.json["error"]["field"] == "reports.favourite_colour"
    assert stored(store) == (0, 0)


@pytest.mark.parametrize("change,field", [
    ({"spec_hash": "0" * 64}, "spec_hash"), ({"spec_hash": None}, "spec_hash"), ({"idempotency_key": "short"}, "idempotency_key"),
    ({"idempotency_key": 12345678}, "idempotency_key"), ({"reports": ["yes"]}, "reports"), ({"token": 5}, "token"),
    ({"answers": {"dodged": "yes"}}, "answers"),
])
def test_malformed_fields_are_422(client, survey, store, change, field):
    response = client.post("/api/v1/surveys/tax/responses", json=body(survey, **change))
    assert response.status_code == 422
    assert response.json["error"]["field"] == field
    assert stored(store) == (0, 0)


@pytest.mark.parametrize("data,content_type,status", [
    ("{not json", "application/json", 400), ("[1, 2]", "application/json", 400), ("", "application/json", 400),
    ("\xff\xfe", "application/json", 400), ("dodged=yes", "application/x-www-form-urlencoded", 415),
])
def test_bodies_that_are_not_a_json_object(client, survey, store, data, content_type, status):
    response = client.post("/api/v1/surveys/tax/responses", data=data, content_type=content_type)
    assert response.status_code == status
    assert response.json["error"]["field"] == "body"
    assert stored(store) == (0, 0)
    assert client.get("/api/v1/surveys/tax").status_code == 200  # still serving


def test_oversized_bodies_are_413(client, survey, store):
    payload = body(survey)
    payload["padding"] = "x" * 70_000
    response = client.post("/api/v1/surveys/tax/responses", json=payload)
    assert response.status_code == 413 and response.json["error"]["field"] == "body"
    huge = client.post("/api/v1/surveys/tax/responses:batch", data="x" * (3 * 1024 * 1024), content_type="application/json")
    assert huge.status_code == 413
    assert stored(store) == (0, 0)


def test_closed_survey_is_410(client, survey, store, admin_headers):
    assert client.post("/api/v1/surveys/tax/close", headers=admin_headers).json["closed"] is True
    response = client.post("/api/v1/surveys/tax/responses", json=body(survey))
    assert response.status_code == 410
    assert stored(store) == (0, 0)


def test_tokens_answer_once(client, survey, store, admin_headers):
    issued = client.post("/api/v1/surveys/tax/tokens", json={"count": 2}, headers=admin_headers)
    assert issued.status_code == 201
    token, other = issued.json["tokens"]
    assert issued.json["links"][0].endswith(f"/s/tax?t={token}")
    no_token = client.post("/api/v1/surveys/tax/responses", json=body(survey))
    assert no_token.status_code == 422 and no_token.json["error"]["field"] == "token"
    wrong = client.post("/api/v1/surveys/tax/responses", json=body(survey, token="made-up"))
    assert wrong.status_code == 422 and wrong.json["error"]["field"] == "token"
    assert client.post("/api/v1/surveys/tax/responses", json=body(survey, token=token)).status_code == 201
    reused = client.post("/api/v1/surveys/tax/responses", json=body(survey, key="other-key-1234", token=token))
    assert reused.status_code == 409 and reused.json["error"]["field"] == "token"
    assert client.post("/api/v1/surveys/tax/responses", json=body(survey, key="third-key-1234", token=other)).status_code == 201
    assert stored(store)[0] == 2
    # tokens are stored hashed and never linked to a response: their use is a bit of a bitmap row; a frame row (shared
    # by several invitations, `test_frame.py`) is all a token and a response can have in common, and here there is none
    assert table_columns(store, "tokens") == {"token_hash", "survey_id", "issued_on", "slot", "frame_cell"}
    assert {row["frame_cell"] for row in table_rows(store, "tokens") + table_rows(store, "responses")} == {None}
    assert table_columns(store, "token_use") == {"survey_id", "block", "used"}
    assert token not in json.dumps(table_rows(store, "tokens"))


def test_batch_judges_each_item(client, survey, store):
    good = body(survey, key="batch-key-0001")
    bad = body(survey, key="batch-key-0002")
    bad["reports"]["dodged"] = "maybe"
    response = client.post("/api/v1/surveys/tax/responses:batch", json={"items": [good, bad, good, "nonsense"]})
    assert response.status_code == 200
    assert [r["status"] for r in response.json["results"]] == [201, 422, 200, 400]
    assert response.json["results"][1]["error"]["field"] == "reports.dodged"
    assert response.json["statuses"] == {"200": 1, "201": 1, "400": 1, "422": 1}
    assert stored(store)[0] == 1
    assert client.post("/api/v1/surveys/tax/responses:batch", json={"items": []}).status_code == 422


def test_admin_endpoints_need_the_token(client, survey):
    for method, url in [("get", "/api/v1/surveys"), ("get", "/api/v1/surveys/tax/counts"), ("get", "/api/v1/surveys/tax/export"),
                        ("post", "/api/v1/surveys/tax/close"), ("post", "/api/v1/surveys")]:
        response = getattr(client, method)(url, headers={"Authorization": "Bearer wrong"})
        assert response.status_code == 401, url
        assert response.json["error"]["field"] == "Authorization"


def test_admin_creates_versions_and_never_changes_a_spec_in_place(client, survey, store, admin_headers, demo):
    assert client.post("/api/v1/surveys/tax/responses", json=body(survey)).status_code == 201
    same = client.post("/api/v1/surveys", json=demo.to_dict(), headers=admin_headers)
    assert same.status_code == 200 and same.json["outcome"] == "unchanged"
    changed_spec = demo.to_dict()
    changed_spec["questions"][0]["privacy"] = {"design": "warner", "p": "2/3"}  # ε ln 2: stronger, no confirmation
    # the question has an answer: a new randomization of it is said before it is published, and confirmed
    refused = client.post("/api/v1/surveys", json=changed_spec, headers=admin_headers)
    assert refused.status_code == 409 and refused.json["error"]["field"] == "confirm"
    assert "dodged: the design changed" in refused.json["error"]["message"] and "?confirm=redesign" in refused.json["error"]["message"]
    changed = client.post("/api/v1/surveys?confirm=redesign", json=changed_spec, headers=admin_headers)
    assert changed.status_code == 201 and changed.json["outcome"] == "new version" and changed.json["version"] == 2
    assert changed.json["hash"] != survey.hash
    # the old version is intact, and its responses keep their hash
    versions = client.get("/api/v1/surveys/tax/versions", headers=admin_headers).json["versions"]
    assert [(v["version"], v["responses"]) for v in versions] == [(1, 1), (2, 0)]
    spec = store.execute("SELECT spec FROM survey_versions WHERE hash = ?", [survey.hash]).fetchone()[0]
    assert Survey.from_json(spec).hash == survey.hash
    # a respondent who loaded version 1 can still send under it; reports are judged by that version
    assert client.post("/api/v1/surveys/tax/responses", json=body(survey, key="late-v1-key-01")).status_code == 201
    invalid = client.post("/api/v1/surveys", json={"id": "x", "title": "t", "questions": []}, headers=admin_headers)
    assert invalid.status_code == 422 and "survey.questions" in invalid.json["error"]["message"]


def test_counts_per_question_and_by_public_question(client, survey, store, admin_headers):
    for i, region in enumerate(["North", "North", "South"]):
        payload = body(survey, key=f"count-key-{i:04d}")
        payload["reports"]["region"] = region
        payload["reports"]["dodged"] = "yes"
        client.post("/api/v1/surveys/tax/responses", json=payload)
    counts = client.get("/api/v1/surveys/tax/counts", headers=admin_headers).json
    assert counts["responses"] == 3
    assert counts["counts"]["dodged"] == [{"report": "yes", "count": 3}, {"report": "no", "count": 0}]
    assert len(counts["counts"]["hours"]) == 25  # the whole clamped alphabet, zeros included
    grouped = client.get("/api/v1/surveys/tax/counts?by=region", headers=admin_headers).json
    assert [(g["value"], g["counts"]["dodged"][0]["count"]) for g in grouped["groups"]] == [("North", 2), ("South", 1)]
    private = client.get("/api/v1/surveys/tax/counts?by=dodged", headers=admin_headers)
    assert private.status_code == 422 and private.json["error"]["field"] == "by"


def test_export_csv_and_jsonl(client, survey, admin_headers):
    payload = body(survey)
    client.post("/api/v1/surveys/tax/responses", json=payload)
    lines = client.get("/api/v1/surveys/tax/export?format=jsonl", headers=admin_headers).data.decode().splitlines()
    row = json.loads(lines[0])
    assert row["reports"] == payload["reports"] and set(row) == {"id", "spec_hash", "received_on", "reports"}
    csv_text = client.get("/api/v1/surveys/tax/export?format=csv", headers=admin_headers).data.decode()
    assert csv_text.splitlines()[0] == ("id,spec_hash,received_on,dodged,region,cash,fairness,undeclared.Tips,"
                                        "undeclared.Rental income,undeclared.Side jobs,undeclared.Foreign accounts,hours")
    bad = client.get("/api/v1/surveys/tax/export?format=xlsx", headers=admin_headers)
    assert bad.status_code == 422 and bad.json["error"]["field"] == "format"


def test_only_reports_are_stored_and_bodies_are_not_logged(client, survey, store, caplog):
    caplog.set_level(logging.DEBUG)
    payload = body(survey, key="secret-key-value-123")
    client.post("/api/v1/surveys/tax/responses", json=payload, headers={"User-Agent": "Telltale/1.0"},
                environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert table_columns(store, "responses") == {"id", "survey_id", "spec_hash", "received_on", "idempotency_key",
                                                 "fingerprint", "wave", "frame_cell", "seconds", "paradata"}
    row = table_rows(store, "responses")[0]
    assert (row["seconds"], row["paradata"]) == (None, None)  # kept only where the spec asks for section times
    assert row["wave"] is None  # a survey asked once has no waves
    assert len(row["received_on"]) == 10  # a date, no time of day
    dump = json.dumps([table_rows(store, t) for t in store.engine.table_names()])
    assert "203.0.113.9" not in dump and "Telltale" not in dump
    assert "secret-key-value-123" not in caplog.text and json.dumps(payload["reports"]) not in caplog.text


def test_pages_and_api_send_security_headers(client, survey):
    for url in ("/s/tax", "/api/v1/surveys/tax", "/js/deniable.js"):
        response = client.get(url)
        assert "script-src 'self'" in response.headers["Content-Security-Policy"]
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_unknown_api_routes_and_methods_answer_in_json(client, survey):
    missing = client.get("/api/v1/nothing/here")
    assert missing.status_code == 404 and missing.json["error"]["status"] == 404
    wrong_method = client.delete("/api/v1/surveys/tax")
    assert wrong_method.status_code == 405 and wrong_method.json["error"]["status"] == 405
    page = client.get("/no/such/page")
    assert page.status_code == 404 and page.mimetype == "text/html"


def test_a_batch_judges_each_item_as_if_alone_retries_and_duplicates_included(client, survey, store):
    def item(key, **changes):
        return body(survey, key=key, **changes)

    stored_before = item("stored-before-1")
    first = client.post("/api/v1/surveys/tax/responses", json=stored_before).json
    twin = item("twin-key-0001")
    bad = item("bad-item-0001")
    bad["reports"]["hours"] = 999
    items = [item("fresh-key-0001"), twin, dict(twin), {**item("twin-key-0001")}, stored_before, bad,
             {**stored_before, "reports": survey.randomize(ANSWERS) | {"dodged": "no" if stored_before["reports"]["dodged"] == "yes" else "yes"}}]
    results = client.post("/api/v1/surveys/tax/responses:batch", json={"items": items}).json["results"]
    assert [r["status"] for r in results] == [201, 201, 200, 422, 200, 422, 422]
    assert results[2]["response"]["id"] == results[1]["response"]["id"]  # a retry inside the batch
    assert results[4]["response"] == first  # a retry of an earlier request
    assert results[3]["error"]["field"] == results[6]["error"]["field"] == "idempotency_key"
    assert results[5]["error"]["field"] == "reports.hours"
    assert stored(store)[0] == 3
    totals = [(q, v, int(n)) for q, v, n in store.execute(
        "SELECT question_id, value, SUM(count) FROM report_counts GROUP BY question_id, value ORDER BY question_id, value")]
    scanned = [(q, v, int(n)) for q, v, n in store.execute(
        "SELECT question_id, value, COUNT(*) FROM reports GROUP BY question_id, value ORDER BY question_id, value")]
    assert totals == scanned
    assert store.get_survey("tax").responses == 3
    # once closed, a retry still hears its acknowledgement; a new response hears 410
    store.close_survey("tax")
    after = client.post("/api/v1/surveys/tax/responses:batch", json={"items": [items[0], item("late-key-0001")]}).json
    assert [r["status"] for r in after["results"]] == [200, 410]
    assert client.post("/api/v1/surveys/tax/responses", json=items[0]).status_code == 200


def test_a_spec_over_its_budget_is_refused_naming_the_field_and_nothing_is_stored(client, store, admin_headers, runner, tmp_path):
    spec = {"id": "budget", "title": "Budget", "max_epsilon": 2, "questions": [
        {"id": qid, "type": "yes_no", "text": "?", "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}
        for qid in ("a", "b")]}
    refused = client.post("/api/v1/surveys", json=spec, headers=admin_headers)
    assert refused.status_code == 422 and refused.json["error"]["field"] == "spec"
    assert refused.json["error"]["message"].startswith("survey.max_epsilon:")
    assert "spend ε = 2.197 per respondent, over the budget of 2" in refused.json["error"]["message"]
    assert client.get("/api/v1/surveys/budget").status_code == 404
    path = tmp_path / "budget.json"
    path.write_text(json.dumps({**spec, "max_epsilon": "ln(9)"}))
    from deniable.server import cli

    checked = runner.invoke(cli.main, ["survey", "check", str(path), "--no-plan"])
    assert checked.exit_code == 0 and "Budget (max_epsilon): ε = 2.197 of 2.197 (100%)" in checked.output
