"""Hostile input and faults: NUL characters, malformed specs, ids with a newline,
formula injection in CSV. On both engines where it concerns storage; cost bounded by CPU time."""

import json
import secrets
import time
from pathlib import Path

import pytest

from deniable.analysis import estimate, load
from deniable.client import Survey
from deniable.server.cli import main
from tests.server.conftest import ANSWERS, form_key, sign_in

pytestmark = pytest.mark.both_engines


def test_a_nul_character_is_refused_where_text_enters_and_nothing_is_stored(client, survey, store):
    body = {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(8), "reports": {"dodged": "yes"}}
    for field, changed in (("spec_hash", {"spec_hash": survey.hash + "\u0000"}),
                           ("idempotency_key", {"idempotency_key": "abc\u0000defgh"}),
                           ("reports.dodged", {"reports": {"dodged": "y\u0000es"}})):
        response = client.post("/api/v1/surveys/tax/responses", json={**body, **changed})
        assert response.status_code == 422 and response.json["error"]["field"] == field, response.json
    for path, field in (("/api/v1/surveys/%00", "path.survey_id"), ("/api/v1/surveys/tax?x=%00", "query.x")):
        response = client.get(path)
        assert response.status_code == 400 and response.json["error"]["field"] == field
    assert client.get("/s/%00").status_code == 400 and client.get("/s/tax?lang=%00").status_code == 400
    page = client.get("/admin/login").get_data(as_text=True)
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    assert client.post("/admin/login", data={"csrf": csrf, "name": "ana\u0000", "password": "x" * 12}).status_code == 400
    key = form_key(client, "tax")
    assert client.post("/s/tax/submit", data={"form_key": key, "spec_hash": survey.hash, "idempotency_key": "k" * 16,
                                              "dodged": "yes\u0000"}).status_code == 400
    assert store.response_count("tax") == 0


@pytest.mark.serial  # a CPU-time bound: measured alone (scripts/test.sh runs these after the rest)
@pytest.mark.sqlite_only
@pytest.mark.parametrize("text", ["{" * 5000, "id: t\ntitle: t\nquestions: []\nbig: " + "9" * 5000])
def test_a_malformed_spec_is_a_fast_422_and_a_one_line_message(client, survey, text, tmp_path, runner):
    sign_in(client)
    page = client.get("/admin/").get_data(as_text=True)
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    start = time.process_time()
    response = client.post("/admin/surveys", data={"csrf": csrf, "spec": text})
    assert response.status_code == 422 and time.process_time() - start < 1.0
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = runner.invoke(main, ["survey", "check", str(path)])
    assert result.exit_code == 1 and "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.sqlite_only
def test_an_id_ending_in_a_newline_is_not_an_id(client, admin_headers):
    spec = {"id": "tax\n", "title": "T", "questions": [{"id": "q", "type": "yes_no", "text": "?"}]}
    response = client.post("/api/v1/surveys", json=spec, headers=admin_headers)
    assert response.status_code == 422 and "survey.id" in response.json["error"]["message"]
    spec = {"id": "tax", "title": "T", "questions": [{"id": "q\n", "type": "yes_no", "text": "?"}]}
    assert client.post("/api/v1/surveys", json=spec, headers=admin_headers).status_code == 422


def test_csv_cells_never_run_as_formulas_and_read_back_exactly(store, db_path, runner, tmp_path):
    formula = '=HYPERLINK("http://example.invalid","click")'
    survey = Survey.from_dict({"id": "inject", "title": "T", "questions": [
        {"id": "pick", "type": "choice", "text": "Which?", "options": [formula, "+1 plus", "plain"], "privacy": "none"},
        {"id": "n", "type": "number", "text": "How many?", "min": -3, "max": 3, "privacy": "none"}]})
    store.add_survey(survey)
    for pick, n in ((formula, -3), ("+1 plus", 2), ("plain", -1)):
        store.submit("inject", survey.hash, secrets.token_hex(8), {"pick": pick, "n": n})
    output = tmp_path / "inject.csv"
    assert runner.invoke(main, ["export", "inject", "--db", db_path, "--output", str(output)]).exit_code == 0
    cells = [cell for line in output.read_text().splitlines()[1:] for cell in line.split(",")]
    assert not any(cell.startswith(("=", "+", "@", '"=')) for cell in cells)
    assert "-3" in cells and "-1" in cells  # numbers stay numbers
    again = estimate(load(str(output), spec=survey), "pick")
    assert again.estimate.to_dict() == estimate(load(db=db_path, survey_id="inject"), "pick").estimate.to_dict()
    estimates = runner.invoke(main, ["estimate", "inject", "--db", db_path, "--format", "csv"]).output
    assert not any(cell.startswith(("=", "+", "@", '"=')) for line in estimates.splitlines() for cell in line.split(","))
    assert json.loads(runner.invoke(main, ["estimate", "inject", "--db", db_path, "--format", "json"]).output)[0]["answer"] == formula


def test_a_carriage_return_in_a_cell_cannot_start_a_row_with_a_formula(store, db_path, runner, tmp_path):
    """Python's csv quotes a line feed but not a lone carriage return, which spreadsheets and csv readers take for the
    end of a row: an option "a\r=2+5*cmd|calc!A0" was written unquoted, and its second half began a row whose first cell
    was a formula. A row with CR or LF in a cell is written fully quoted, in exports and the estimates CSV."""
    import csv
    import io

    option = "a\r=2+5*cmd|calc!A0"  # no quote or comma of its own, which would have had it quoted anyway
    survey = Survey.from_dict({"id": "crlf", "title": "T", "questions": [
        {"id": "pick", "type": "choice", "text": "Which?", "options": [option, "b\nc", "plain"], "privacy": "none"}]})
    store.add_survey(survey)
    for pick in (option, "b\nc", "plain"):
        store.submit("crlf", survey.hash, secrets.token_hex(8), {"pick": pick})
    output = tmp_path / "crlf.csv"
    assert runner.invoke(main, ["export", "crlf", "--db", db_path, "--output", str(output)]).exit_code == 0
    estimates = runner.invoke(main, ["estimate", "crlf", "--db", db_path, "--format", "csv"]).output
    for text in (output.read_bytes().decode("utf-8"), estimates):
        # a reader ends a row at a bare CR outside quotes (csv.reader does, as spreadsheets do): no row may begin
        # with a formula, and the cell with the CR comes back whole
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert not any(row and row[0].startswith(("=", "+", "@")) for row in rows), rows
        assert any(option in row for row in rows) and any("b\nc" in row for row in rows)  # read back exactly
    again = estimate(load(str(output), spec=survey), "pick")
    assert again.estimate.to_dict() == estimate(load(db=db_path, survey_id="crlf"), "pick").estimate.to_dict()


@pytest.mark.sqlite_only
def test_outputs_are_never_written_through_a_link_or_onto_a_device(db_path, survey, store, runner, tmp_path):
    store.submit("tax", survey.hash, secrets.token_hex(8), survey.randomize(ANSWERS))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    planted = tmp_path / "out.csv.partial"
    planted.symlink_to(victim)  # the predictable name an older version wrote through
    result = runner.invoke(main, ["export", "tax", "--db", db_path, "--output", str(tmp_path / "out.csv")])
    assert result.exit_code == 0 and victim.read_text() == "keep me"
    assert (tmp_path / "out.csv").read_text().startswith("id,spec_hash")
    assert not any(p.name.endswith(".partial") and p != planted for p in tmp_path.iterdir())
    link = tmp_path / "link.csv"
    link.symlink_to(victim)
    refused = runner.invoke(main, ["export", "tax", "--db", db_path, "--output", str(link)])
    assert refused.exit_code == 1 and "not a regular file" in refused.output and victim.read_text() == "keep me"
    device = runner.invoke(main, ["export", "tax", "--db", db_path, "--output", "/dev/null"])
    assert device.exit_code == 1 and "not a regular file" in device.output
    dangling = tmp_path / "backup.db"
    dangling.symlink_to(tmp_path / "elsewhere.db")
    backup = runner.invoke(main, ["backup", "--db", db_path, "--output", str(dangling)])
    assert backup.exit_code == 1 and not (tmp_path / "elsewhere.db").exists()


@pytest.mark.sqlite_only
def test_gunicorn_writes_no_client_address_and_no_invitation_token(tmp_path):
    """A malformed request and a failing invitation link against `deniable serve --workers 2`: the error
    log says what happened without the client's address or the token (docs/privacy.md's promise)."""
    import os
    import socket

    from tests.server.conftest import free_port
    from tests.server.test_cluster import start, stop

    port = free_port()
    server = start(str(tmp_path / "served.db"), port, workers=2)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(b"G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n")  # not an HTTP method
            connection.recv(1024)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(b"GET /s/none?t=SECRET-INVITATION HTTP/1.1\r\nHost: x\r\n" + b"X: " + b"y" * 9000 + b"\r\n\r\n")
            connection.recv(1024)
    finally:
        stop(server)
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"deniable-serve-{port}.log"  # where start() writes stderr
    text = log.read_text(errors="replace")
    assert "Invalid request from ip=[hidden]" in text, text[-2000:]
    assert "ip=127.0.0.1" not in text and "SECRET-INVITATION" not in text
