"""One reader: every command, the dashboard, the API and `load()` resolve the database the same way
and read it through deniable.storage, on both engines and on every older schema.

The scenario a researcher met: ``$DENIABLE_DATABASE_URL`` names the real database (30 responses)
while a stale ``deniable.db`` (10 responses) sits in the working folder. Every reader must read the
real one; none may fall back to the decoy.
"""

import contextlib
import json
import re
import secrets
import sqlite3
from pathlib import Path

import pytest

from deniable import storage
from deniable.analysis import LoadError, load
from deniable.server import create_app
from deniable.server.cli import main
from tests.server.conftest import ADMIN, ANSWERS, sign_in

pytestmark = pytest.mark.both_engines

REAL, DECOY = 30, 10


def _fill(url: str, survey, count: int):
    with storage.Store(url) as store:
        store.add_survey(survey)
        for _ in range(count):
            store.submit(survey.id, survey.hash, secrets.token_hex(16), survey.randomize(ANSWERS))


@pytest.fixture
def decoyed(db_path, engine, demo, tmp_path, monkeypatch):
    """The real database named by $DENIABLE_DATABASE_URL, a decoy deniable.db in the working folder."""
    real_url = db_path if engine == "postgresql" else f"sqlite:///{db_path}"
    _fill(real_url, demo, REAL)
    folder = tmp_path / "work"
    folder.mkdir()
    _fill(str(folder / "deniable.db"), demo, DECOY)
    monkeypatch.chdir(folder)
    monkeypatch.delenv("DENIABLE_DB", raising=False)
    monkeypatch.setenv("DENIABLE_DATABASE_URL", real_url)
    return real_url


def _run(runner, *args) -> str:
    result = runner.invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout  # what a pipe gets: notes such as the export's go to the error stream


def test_every_reader_reads_the_database_the_variable_names(decoyed, runner, demo):
    estimated = json.loads(_run(runner, "estimate", "tax", "--format", "json", "--question", "dodged"))
    assert {row["n"] for row in estimated} == {REAL}

    exported = [line for line in _run(runner, "export", "tax", "--format", "jsonl").splitlines() if line.strip()]
    assert len(exported) == REAL

    listed = _run(runner, "survey", "list")
    assert re.search(rf"^tax\s+1\s+{REAL}\s+{REAL}\s", listed, re.MULTILINE), listed
    shown = _run(runner, "survey", "show", "tax")
    assert f": {REAL} responses (current)" in shown
    spec = json.loads(_run(runner, "survey", "export", "tax", "--format", "json"))
    assert spec["id"] == "tax"

    loaded = load(survey_id="tax")  # no db=: the variable, never the decoy
    assert loaded.n == REAL and loaded.question_counts("dodged").sum() == REAL

    app = create_app({"ADMIN_TOKEN": ADMIN, "TESTING": True, "RATELIMIT_ENABLED": False})
    client = app.test_client()
    counts = client.get("/api/v1/surveys/tax/counts", headers={"Authorization": f"Bearer {ADMIN}"})
    assert counts.json["responses"] == REAL
    sign_in(client)
    page = client.get("/admin/surveys/tax").get_data(as_text=True)
    assert f"{REAL} responses" in page
    csv = client.get("/admin/surveys/tax/versions/1/estimates.csv").get_data(as_text=True)
    assert csv == _run(runner, "estimate", "tax", "--format", "csv", "--version", "1")

    # The decoy is still there and still readable when named, so the figures above are not a fluke.
    with storage.Store("deniable.db", read_only=True) as decoy:
        assert decoy.response_count("tax") == DECOY
    assert load(db="deniable.db", survey_id="tax").n == DECOY


def test_an_explicit_db_wins_over_the_variable(decoyed, runner):
    estimated = json.loads(_run(runner, "estimate", "tax", "--db", "deniable.db", "--format", "json",
                                "--question", "dodged"))
    assert {row["n"] for row in estimated} == {DECOY}
    assert len(_run(runner, "export", "tax", "--db", "deniable.db").splitlines()) == DECOY + 1  # CSV header


@pytest.mark.sqlite_only
def test_load_without_a_database_says_what_it_needs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DENIABLE_DATABASE_URL", raising=False)
    monkeypatch.delenv("DENIABLE_DB", raising=False)
    (tmp_path / "deniable.db").write_bytes(b"")  # a file in the folder is no reason to guess
    with pytest.raises(LoadError, match=r"needs db=.*DENIABLE_DATABASE_URL"):
        load(survey_id="tax")


@pytest.mark.sqlite_only
def test_older_schemas_are_read_as_they_are(tmp_path, demo):
    """A database of every schema from 1 on, read by load() through storage: the same counts as
    the migrated copy, and the file keeps its schema (nothing migrated, nothing written)."""
    import sqlite_utils

    from deniable.storage.engines import SQLiteEngine

    reports = [demo.randomize(ANSWERS) for _ in range(25)]
    expected = None
    for schema in range(1, storage.SCHEMA_VERSION + 1):
        path = str(tmp_path / f"schema{schema}.db")
        engine = SQLiteEngine(path)
        for step in range(1, schema + 1):
            storage.schema.MIGRATIONS[step](engine)
        engine.set_schema_version(schema)
        old = sqlite_utils.Database(engine.connection)  # rows written as each old schema held them
        old["survey_versions"].insert({"hash": demo.hash, "survey_id": "tax", "version": 1,
                                       "spec": demo.canonical_json(), "added_on": "2026-01-01"})
        old["surveys"].insert({"id": "tax", "current_hash": demo.hash, "access": "open", "closed_on": None,
                               "added_on": "2026-01-01"})
        for i, answer in enumerate(reports):
            old["responses"].insert({"id": f"r{i:02d}", "survey_id": "tax", "spec_hash": demo.hash,
                                     "received_on": "2026-01-01", "idempotency_key": f"k{i:010d}", "fingerprint": "x"})
            old["reports"].insert_all({"response_id": f"r{i:02d}", "spec_hash": demo.hash, "question_id": q,
                                       "value": storage.canonical(v)} for q, v in answer.items())
        if schema >= 2:
            storage.rebuild_counts(old) if schema >= 4 else _totals_before_shards(old)
        engine.close()
        before = Path(path).read_bytes()
        loaded = load(db=path, survey_id="tax")
        figures = {qid: loaded.question_counts(qid).tolist() for qid in demo.questions}
        frame = loaded.frame(["dodged"])
        assert loaded.n == 25 and len(frame) == 25, schema
        with contextlib.closing(sqlite3.connect(path)) as check:
            assert check.execute("PRAGMA user_version").fetchone()[0] == schema
        assert Path(path).read_bytes() == before, f"schema {schema}: the file changed on reading"
        if expected is None:
            expected = figures
        assert figures == expected, f"schema {schema} counts differ"
        assert sum(figures["dodged"]) == 25


def _totals_before_shards(db):
    """Schema 2 and 3 kept one running total per value and the responses on the version row."""
    db.execute("INSERT INTO report_counts (spec_hash, question_id, value, count) SELECT spec_hash, question_id, "
               "value, COUNT(*) FROM reports GROUP BY spec_hash, question_id, value")
    db.execute("UPDATE survey_versions SET responses = (SELECT COUNT(*) FROM responses r "
               "WHERE r.spec_hash = survey_versions.hash)")


def test_a_newer_schema_is_refused_by_readers(db_path, engine, demo, runner):
    with storage.Store(db_path) as store:
        store.add_survey(demo)
        store.engine.set_schema_version(storage.SCHEMA_VERSION + 1)
    with pytest.raises(LoadError, match="newer deniable"):
        load(db=db_path, survey_id="tax")
    result = runner.invoke(main, ["survey", "list", "--db", db_path])
    assert result.exit_code == 1 and "newer deniable" in result.output and "Traceback" not in result.output
