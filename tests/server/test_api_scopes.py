"""API tokens have scopes (read, export, write, manage), read-only by default; the one made for a nightly export can
no longer publish a version, close or reopen a survey, issue invitations or open waves (403, named and audited), and
a version that lowers a question's privacy is published only when confirmed, on every surface."""

import re

import pytest

from deniable import storage
from deniable.server import cli
from tests.server.conftest import ADMIN, sign_in

pytestmark = pytest.mark.both_engines


def _token(runner, db_path, *scopes):
    args = ["admin", "token", "a script", "--db", db_path] + [part for scope in scopes for part in ("--scope", scope)]
    result = runner.invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    return {"Authorization": f"Bearer {result.output.split('shown once: ')[1].split()[0]}"}


def _lowered(demo) -> dict:
    spec = demo.to_dict()
    for question in spec["questions"]:
        if question["id"] == "dodged":
            question["privacy"] = "none"
    return spec


def test_a_token_does_what_its_scopes_allow_and_nothing_else(client, survey, store, runner, db_path, demo):
    export = _token(runner, db_path, "read", "export")
    assert client.get("/api/v1/surveys", headers=export).status_code == 200
    assert client.get("/api/v1/surveys/tax/export", headers=export).status_code == 200
    refused = {
        "publish": client.post("/api/v1/surveys?confirm=lower-privacy", json=_lowered(demo), headers=export),
        "close": client.post("/api/v1/surveys/tax/close", headers=export),
        "reopen": client.post("/api/v1/surveys/tax/reopen", headers=export),
        "invitations": client.post("/api/v1/surveys/tax/tokens", json={"count": 3}, headers=export),
    }
    for what, answer in refused.items():
        assert answer.status_code == 403, what
        error = answer.get_json()["error"]
        assert error["field"] == "scope" and "may read, export" in error["message"], error
    assert store.get_survey("tax").version == 1 and not store.get_survey("tax").closed
    assert store.token_counts("tax")["issued"] == 0
    refusals = [e for e in store.audit_log() if e["action"] == "refused: out of scope"]
    assert len(refusals) == 4 and all(e["actor"].endswith("(a script)") for e in refusals)
    reader = _token(runner, db_path)  # read-only by default
    assert client.get("/api/v1/surveys/tax/versions", headers=reader).status_code == 200
    assert client.get("/api/v1/surveys/tax/export", headers=reader).status_code == 403
    manager = _token(runner, db_path, "manage")
    assert client.post("/api/v1/surveys/tax/tokens", json={"count": 2}, headers=manager).status_code == 201
    assert "may manage" in runner.invoke(cli.main, ["admin", "list", "--db", db_path]).output
    assert runner.invoke(cli.main, ["admin", "token", "x", "--scope", "all", "--db", db_path]).exit_code == 2


def test_lowering_a_question_s_privacy_needs_a_confirmation_on_every_surface(client, survey, store, runner, db_path,
                                                                             demo, tmp_path, admin_headers):
    lowered = _lowered(demo)
    refused = client.post("/api/v1/surveys", json=lowered, headers=admin_headers)
    assert refused.status_code == 409 and refused.get_json()["error"]["field"] == "confirm"
    assert "dodged: randomized (forced_response" in refused.get_json()["error"]["message"]
    assert store.get_survey("tax").version == 1
    spec_file = tmp_path / "lowered.yaml"
    spec_file.write_text(__import__("json").dumps(lowered), encoding="utf-8")
    cli_refused = runner.invoke(cli.main, ["survey", "add", str(spec_file), "--db", db_path])
    assert cli_refused.exit_code == 1 and "--confirm-lower-privacy" in cli_refused.output
    sign_in(client, ADMIN)
    page = client.get("/admin/").get_data(as_text=True)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    text = spec_file.read_text(encoding="utf-8")
    shown = client.post("/admin/surveys", data={"csrf": csrf, "spec": text})
    assert shown.status_code == 409 and 'name="confirm_lower_privacy"' in shown.get_data(as_text=True)
    assert store.get_survey("tax").version == 1
    confirmed = client.post("/admin/surveys", data={"csrf": csrf, "spec": text, "confirm_lower_privacy": "1"})
    assert confirmed.status_code == 303 and store.get_survey("tax").version == 2
    logged = [e for e in store.audit_log() if e["action"] == "survey new version"]
    assert logged and "privacy lowered, confirmed: dodged" in logged[0]["detail"]


def test_tokens_made_before_scopes_keep_every_power(db_path, monkeypatch):
    from deniable.storage import store as store_module

    with monkeypatch.context() as schema_10:
        schema_10.setattr(store_module, "SCHEMA_VERSION", 10)
        with storage.Store(db_path) as old:
            old.execute("INSERT INTO api_tokens (id, name, admin, token_hash, created_on) VALUES ('t1', 'old', NULL, ?, "
                        "'2026-11-01')", [storage.common.digest("dnb_old-token")])
    with storage.Store(db_path) as new:
        assert new.api_token_caller("dnb_old-token")[1] == storage.SCOPES


def test_grouped_counts_give_a_read_token_no_group_of_fewer_than_five(client, store, runner, db_path, admin_headers):
    """Grouped by a public question of many values (an exact age), each group of one was that respondent's reports:
    a read token gets only groups of 5 or more, told how many were left out; the export scope gets every group,
    audited; the admin token too. The counts of the groups kept are the same for both."""
    from deniable.client import Survey
    from deniable.server.api import SMALLEST_GROUP
    from tests.conftest import SeededSource

    survey = Survey.from_dict({"id": "ages", "title": "Ages", "questions": [
        {"id": "age", "type": "number", "text": "Age?", "min": 18, "max": 99, "privacy": "none"},
        {"id": "dodged", "type": "yes_no", "text": "Dodged?", "privacy": {"design": "warner", "p": "3/4"}}]})
    store.add_survey(survey)
    ages = [30] * 8 + [41, 52, 63, 74]
    for i, age in enumerate(ages):
        store.submit("ages", survey.hash, f"key-{i:04d}", survey.randomize({"age": age, "dodged": "no"},
                                                                         rng=SeededSource(i)))
    reader, exporter = _token(runner, db_path), _token(runner, db_path, "read", "export")
    read = client.get("/api/v1/surveys/ages/counts?by=age", headers=reader).get_json()
    assert [group["value"] for group in read["groups"]] == [30]
    assert read["suppressed"] == {"groups": 4, "responses": 4, "smallest_group": SMALLEST_GROUP,
                                  "why": read["suppressed"]["why"]} and "export scope" in read["suppressed"]["why"]
    for headers in (exporter, admin_headers):
        full = client.get("/api/v1/surveys/ages/counts?by=age", headers=headers).get_json()
        assert [group["value"] for group in full["groups"]] == [30, 41, 52, 63, 74] and "suppressed" not in full
        assert full["groups"][0] == read["groups"][0]
    audited = [entry for entry in store.audit_log() if entry["action"] == "grouped counts read"]
    assert len(audited) == 2 and audited[0]["detail"].startswith("by age")
    plain = client.get("/api/v1/surveys/ages/counts", headers=reader).get_json()  # ungrouped: as before
    assert "suppressed" not in plain and sum(c["count"] for c in plain["counts"]["age"]) == 12


def test_a_randomized_question_renamed_and_asked_directly_needs_the_confirmation(client, survey, store, admin_headers,
                                                                                 demo):
    """The red team's bypass: version 2 drops `dodged` and asks it directly as `dodged_v2`; it was published with 201,
    unconfirmed, the audit log saying only "survey new version"."""
    spec = demo.to_dict()
    for question in spec["questions"]:
        if question["id"] == "dodged":
            question.update(id="dodged_v2", privacy="none")
    refused = client.post("/api/v1/surveys", json=spec, headers=admin_headers)
    assert refused.status_code == 409 and refused.get_json()["error"]["field"] == "confirm"
    assert "dodged → dodged_v2 (the same question under a new id)" in refused.get_json()["error"]["message"]
    assert store.get_survey("tax").version == 1
    published = client.post("/api/v1/surveys?confirm=lower-privacy,redesign", json=spec, headers=admin_headers)
    assert published.status_code == 201 and store.get_survey("tax").version == 2
    logged = [e for e in store.audit_log() if e["action"] == "survey new version"]
    assert "privacy lowered, confirmed: dodged → dodged_v2" in logged[0]["detail"]


def test_no_endpoint_gives_a_read_token_per_response_data(app, client, store, runner, db_path):
    """Every GET endpoint of the API, walked with a read token on a survey with an exact public age (every query
    parameter that groups or formats tried): no body holds a response's id or a group of fewer than 5 responses. The
    export scope does get the rows (the walk can see them)."""
    from deniable.client import Survey
    from tests.conftest import SeededSource

    survey = Survey.from_dict({"id": "ages", "title": "Ages", "questions": [
        {"id": "age", "type": "number", "text": "Age?", "min": 18, "max": 99, "privacy": "none"},
        {"id": "dodged", "type": "yes_no", "text": "Dodged?"}]})
    store.add_survey(survey)
    for i, age in enumerate([30] * 6 + list(range(40, 52))):
        store.submit("ages", survey.hash, f"key-{i:04d}", survey.randomize({"age": age, "dodged": "no"},
                                                                         rng=SeededSource(i)))
    ids = [row["id"] for row in store.export("ages")]
    reader, exporter = _token(runner, db_path), _token(runner, db_path, "read", "export")
    queries = ["", "?by=age", "?by=dodged", "?format=csv", "?format=jsonl", "?format=codebook", "?version=1",
               "?all_versions=1"]
    walked = 0
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1") or "GET" not in rule.methods:
            continue
        path = rule.rule.replace("<survey_id>", "ages")
        assert "<" not in path, path  # a parameter this walk does not fill: add it
        for query in queries:
            response = client.get(path + query, headers=reader)
            walked += 1
            body = response.get_data(as_text=True)
            assert not any(response_id in body for response_id in ids), (path, query, response.status_code)
            if response.status_code == 200 and response.is_json:
                for group in (response.get_json() or {}).get("groups", []) if isinstance(response.get_json(), dict) \
                        else []:
                    assert sum(c["count"] for c in next(iter(group["counts"].values()))) >= 5, (path, query, group)
    assert walked >= 7 * len(queries)
    exported = client.get("/api/v1/surveys/ages/export?format=csv", headers=exporter).get_data(as_text=True)
    assert all(response_id in exported for response_id in ids)
