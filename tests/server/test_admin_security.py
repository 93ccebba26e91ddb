"""Admin accounts, sessions, CSRF, API tokens and the audit log."""

from __future__ import annotations

import json
import logging
import re

import pytest

from deniable import storage
from deniable.server import cli
from tests.server.conftest import ADMIN, ANSWERS, sign_in, table_rows

pytestmark = pytest.mark.both_engines

PASSWORD = "a long enough passphrase"


@pytest.fixture
def ana(store):
    store.add_admin("ana", PASSWORD)
    return "ana"


def _csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def test_an_account_signs_in_and_out_and_its_password_is_stored_hashed(client, survey, store, ana, caplog):
    caplog.set_level(logging.DEBUG)
    response = sign_in(client, name="ana", password=PASSWORD)
    assert response.status_code == 303 and response.headers["Location"].endswith("/admin/")
    cookie = response.headers["Set-Cookie"]
    assert PASSWORD not in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/admin" in cookie
    page = client.get("/admin/").get_data(as_text=True)
    assert "Signed in as ana" in page
    rows = table_rows(store, "admins")
    assert PASSWORD not in json.dumps(rows) and rows[0]["password_hash"].startswith("scrypt:")
    assert PASSWORD not in caplog.text
    # signing out ends the session on the server: the old cookie opens nothing any more
    session_cookie = client.get_cookie("deniable_session", path="/admin").value
    assert client.post("/admin/logout", data={"csrf": _csrf(page)}).status_code == 303
    client.set_cookie("deniable_session", session_cookie, path="/admin")
    assert client.get("/admin/").status_code == 303
    actions = [(e["actor"], e["action"]) for e in store.audit_log()]
    assert ("ana", "signed in") in actions and ("ana", "signed out") in actions


def test_the_session_cookie_is_secure_over_https(app, survey):
    client = app.test_client()
    page = client.get("/admin/login", base_url="https://survey.example").get_data(as_text=True)
    response = client.post("/admin/login", data={"csrf": _csrf(page), "token": ADMIN}, base_url="https://survey.example")
    assert response.status_code == 303 and "Secure" in response.headers["Set-Cookie"]


def test_wrong_passwords_lock_the_account_for_every_process(client, survey, store, ana):
    for _ in range(storage.SIGN_IN_FAILURES):
        assert sign_in(client, name="ana", password="not the password").status_code == 401
    # locked: even the right password is refused now, by any server process (the lock is stored)
    assert sign_in(client, name="ana", password=PASSWORD).status_code == 401
    assert store.admins()[0]["locked_until"] is not None
    assert ("ana", "account locked") in [(e["actor"], e["action"]) for e in store.audit_log()]
    assert sign_in(client, name="nobody", password=PASSWORD).status_code == 401


def test_no_session_fixation_and_no_made_up_sessions(client, survey):
    client.set_cookie("deniable_session", "chosen-by-an-attacker", path="/admin")
    assert client.get("/admin/").status_code == 303
    response = sign_in(client)
    assert "chosen-by-an-attacker" not in response.headers["Set-Cookie"]
    assert client.get_cookie("deniable_session", path="/admin").value != "chosen-by-an-attacker"


def test_a_cross_site_form_cannot_close_a_survey_or_mint_tokens(client, survey, store):
    sign_in(client)
    page = client.get("/admin/surveys/tax").get_data(as_text=True)
    # the browser sends the session cookie only on same-site requests (SameSite=Strict); even when
    # it does, a form made elsewhere cannot know the session's CSRF secret
    for path, data in (("/admin/surveys/tax/close", {}), ("/admin/surveys/tax/tokens", {"count": "5"})):
        assert client.post(path, data=data).status_code == 403
        assert client.post(path, data={**data, "csrf": "guessed"}).status_code == 403
    assert not store.get_survey("tax").closed and store.token_counts("tax")["issued"] == 0
    # with the page's own secret both work, and the links are shown once
    links = client.post("/admin/surveys/tax/tokens", data={"count": "3", "csrf": _csrf(page)}).get_data(as_text=True)
    assert links.count("/s/tax?t=") == 3 and store.token_counts("tax")["issued"] == 3
    assert client.post("/admin/surveys/tax/close", data={"csrf": _csrf(page)}).status_code == 303
    assert store.get_survey("tax").closed
    # the sign-in form has its own double-submit token
    assert client.post("/admin/login", data={"token": ADMIN}).status_code == 403


def test_api_tokens_are_named_revocable_and_shown_once(client, survey, store, runner, db_path, admin_headers):
    result = runner.invoke(cli.main, ["admin", "token", "nightly export", "--scope", "read", "--scope", "export",
                                      "--db", db_path])
    assert result.exit_code == 0 and "may read, export" in result.output
    token = result.output.split("shown once: ")[1].split()[0]
    token_id = result.output.split("API token ")[1].split()[0]
    assert token not in json.dumps(table_rows(store, "api_tokens"))
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/v1/surveys", headers=headers).status_code == 200
    assert client.get("/api/v1/surveys/tax/export", headers=headers).status_code == 200
    assert client.get("/api/v1/surveys", headers=admin_headers).status_code == 200  # the admin token still works
    listed = runner.invoke(cli.main, ["admin", "list", "--db", db_path]).output
    assert "nightly export" in listed and token not in listed and "may read, export" in listed
    assert runner.invoke(cli.main, ["admin", "revoke", token_id, "--db", db_path]).exit_code == 0
    assert client.get("/api/v1/surveys", headers=headers).status_code == 401
    again = runner.invoke(cli.main, ["admin", "revoke", token_id, "--db", db_path])
    assert again.exit_code == 1 and "no live API token" in again.output
    actors = {e["actor"] for e in store.audit_log() if e["action"] == "responses exported"}
    assert actors == {f"token {token_id} (nightly export)"}


def test_the_audit_log_says_who_did_what_and_never_what_was_answered(client, survey, store, admin_headers, runner, db_path):
    body = {"spec_hash": survey.hash, "idempotency_key": "k" * 16, "reports": survey.randomize(ANSWERS)}
    assert client.post("/api/v1/surveys/tax/responses", json=body).status_code == 201
    spec = {**survey.to_dict(), "id": "second"}
    assert client.post("/api/v1/surveys", json=spec, headers=admin_headers).status_code == 201
    client.post("/api/v1/surveys/second/tokens", json={"count": 2}, headers=admin_headers)
    client.get("/api/v1/surveys/tax/export?format=csv", headers=admin_headers)
    client.post("/api/v1/surveys/second/close", headers=admin_headers)
    entries = store.audit_log()
    assert [(e["action"], e["survey_id"]) for e in reversed(entries)] == [
        ("survey created", "second"), ("invitation tokens issued", "second"), ("responses exported", "tax"),
        ("survey closed", "second")]
    assert {e["actor"] for e in entries} == {"admin token"}
    dump = json.dumps(entries)
    assert all(json.dumps(value) not in dump for value in body["reports"].values() if isinstance(value, str) and len(value) > 3)
    printed = runner.invoke(cli.main, ["admin", "audit", "--db", db_path]).output
    assert "admin token: responses exported tax (version 1, csv)" in printed


def test_admin_add_from_the_command_line(runner, db_path, store):
    ok = runner.invoke(cli.main, ["admin", "add", "ben", "--password-stdin", "--db", db_path], input=PASSWORD + "\n")
    assert ok.exit_code == 0 and store.check_password("ben", PASSWORD)
    short = runner.invoke(cli.main, ["admin", "add", "cy", "--password-stdin", "--db", db_path], input="short\n")
    assert short.exit_code == 1 and "at least 12 characters" in short.output
    twice = runner.invoke(cli.main, ["admin", "add", "ben", "--password-stdin", "--db", db_path], input=PASSWORD + "\n")
    assert twice.exit_code == 1 and "exists already" in twice.output


def test_a_survey_is_added_from_the_dashboard_with_its_csrf(client, demo):
    import json as _json

    from tests.server.conftest import sign_in

    sign_in(client)
    page = client.get("/admin/").get_data(as_text=True)
    assert 'id="new-survey"' in page
    spec = _json.dumps(demo.to_dict())
    assert client.post("/admin/surveys", data={"spec": spec}).status_code == 403  # no CSRF field
    added = client.post("/admin/surveys", data={"spec": spec, "csrf": _csrf(page), "access": "token"})
    assert added.status_code == 303 and added.headers["Location"].endswith("/admin/surveys/tax?added=created")
    assert "Spec stored: a new survey" in client.get(added.headers["Location"]).get_data(as_text=True)
    wrong = client.post("/admin/surveys", data={"spec": spec.replace('"forced_response"', '"coin"'), "csrf": _csrf(page)})
    body = wrong.get_data(as_text=True)
    assert wrong.status_code == 422 and "unknown design" in body and "coin" in body  # the text is kept to fix
    from io import BytesIO

    uploaded = client.post("/admin/surveys", data={"csrf": _csrf(page), "spec_file": (BytesIO(spec.encode()), "tax.json")},
                           content_type="multipart/form-data")
    assert uploaded.headers["Location"].endswith("added=unchanged")
    audit = client.get("/admin/audit").get_data(as_text=True)
    assert "survey created" in audit


def test_a_flood_of_concurrent_guesses_checks_at_most_five_and_locks(db_path, store, survey, monkeypatch):
    """30 wrong passwords at once (a PostgreSQL pool holds 32 connections), each on its own connection: the
    count is an atomic increment made
    before any password is checked, so no more than SIGN_IN_FAILURES are ever checked, the account ends
    locked, and the right password is refused afterwards."""
    import threading

    import werkzeug.security

    from deniable.storage.accounts import _DUMMY_HASH

    store.add_admin("ana", PASSWORD)
    checked = []
    real = werkzeug.security.check_password_hash

    def counting(stored_hash, password):
        if stored_hash != _DUMMY_HASH:
            checked.append(password)
        return real(stored_hash, password)

    monkeypatch.setattr(werkzeug.security, "check_password_hash", counting)
    guesses = 30
    barrier = threading.Barrier(guesses, timeout=60)
    results = []

    def guess(i):
        with storage.Store(db_path, migrate=False) as own:
            barrier.wait()
            results.append(own.check_password("ana", f"wrong guess {i}"))

    threads = [threading.Thread(target=guess, args=(i,)) for i in range(guesses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert results == [False] * guesses
    assert len(checked) <= storage.SIGN_IN_FAILURES, len(checked)
    assert store.admins()[0]["locked_until"] is not None
    assert store.check_password("ana", PASSWORD) is False  # locked: not even checked
    assert len(checked) <= storage.SIGN_IN_FAILURES


@pytest.mark.serial  # a CPU-time bound: measured alone (scripts/test.sh runs these after the rest)
def test_every_name_costs_the_same_work(store, survey):
    """Unknown, locked and existing names each cost one password hash: CPU time of each within a factor of 2."""
    import time

    store.add_admin("ana", PASSWORD)
    store.add_admin("bob", PASSWORD)
    for _ in range(storage.SIGN_IN_FAILURES):
        store.check_password("bob", "wrong")

    def cost(name):
        start = time.process_time()
        for _ in range(3):
            store.check_password(name, "wrong password")
        return time.process_time() - start

    unknown, locked, existing = cost("nobody"), cost("bob"), cost("ana")
    assert 0.5 < unknown / existing < 2 and 0.5 < locked / existing < 2, (unknown, locked, existing)


@pytest.mark.serial  # a CPU-time bound: measured alone (scripts/test.sh runs these after the rest)
def test_a_sign_in_flood_gets_429_at_once_and_never_holds_a_respondent(client, survey, store):
    """While the process's password checks are all busy, a further sign-in is refused at once (429, no
    hash computed) and a respondent's page is served as usual."""
    import time

    from deniable.server import auth

    store.add_admin("ana", PASSWORD)
    held = [auth.PASSWORD_CHECKS.acquire(blocking=False) for _ in range(2)]
    try:
        assert held == [True, True]
        start = time.process_time()
        refused = sign_in(client, name="ana", password=PASSWORD)
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
        assert time.process_time() - start < 0.05  # no scrypt hash was computed for it
        assert client.get("/s/tax").status_code == 200
        assert store.admins()[0]["locked_until"] is None  # a refused flood does not lock the account either
    finally:
        for _ in held:
            auth.PASSWORD_CHECKS.release()
    assert sign_in(client, name="ana", password=PASSWORD).status_code == 303


def test_refused_sign_ins_can_neither_forge_nor_flush_the_audit_log(client, survey, store, runner, db_path):
    """A refused sign-in is kept as its own kind, one line per name and hour: 520 refusals of an admin's name are
    one line counting 520. Names that are no admin's share one line an hour, "(no such admin)": 3,175 fresh names
    made as many lines in 20 s, and whatever was typed (a newline, a right-to-left override U+202E) was shown as an
    actor; now neither is stored, and every admin action stays on the default view."""
    store.add_admin("mallory", "correct horse battery staple")
    store.close_survey("tax", actor="ana")
    for _ in range(520):
        store.refused_sign_in("mallory")
    for i in range(150):
        store.refused_sign_in(f"name{i}")
    forged = "x\n2026-11-23 10:00:00  ana: survey closed tax"
    store.refused_sign_in(forged)
    store.refused_sign_in("\u202eevil")
    refusals = store.audit_log(1000, kind="refusals")
    assert {e["actor"]: e["detail"] for e in refusals} == {"mallory": "520", "(no such admin)": "152"}
    actions = store.audit_log(100, kind="actions")
    assert {(e["actor"], e["action"]) for e in actions} == {("mallory", "admin added"), ("ana", "survey closed")}
    sign_in(client)
    page = client.get("/admin/audit").get_data(as_text=True)
    assert "survey closed" in page and "sign-in refused" not in page
    shown = client.get("/admin/audit?kind=refusals").get_data(as_text=True)
    assert "mallory" in shown and "(no such admin)" in shown and "\u202e" not in shown and "ana: survey" not in shown
    printed = runner.invoke(cli.main, ["admin", "audit", "--db", db_path, "--kind", "refusals", "--limit", "1000"]).output
    assert "2026-11-23 10:00:00  ana" not in printed and "\u202e" not in printed
