"""Moving a deployment between engines (deniable copy) and online SQLite backups (deniable backup)."""

from __future__ import annotations

import threading

from deniable import storage
from deniable.client import Survey
from deniable.server import cli
from deniable.server.auth import ensure_admin_token
from tests.conftest import EXAMPLES
from tests.server.conftest import ANSWERS


def _deployment(url: str) -> Survey:
    """Two versions, an open and a token survey, responses, spent and unspent tokens, an admin token."""
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    with storage.Store(url) as store:
        store.add_survey(survey)
        for i in range(30):
            store.submit("tax", survey.hash, f"first-{i:04d}", survey.randomize(ANSWERS))
        spec = survey.to_dict()
        spec["title"] = "Retitled"
        second = Survey.from_dict(spec)
        store.add_survey(second)
        for i in range(12):
            store.submit("tax", second.hash, f"second-{i:04d}", second.randomize(ANSWERS))
        other = Survey.from_dict({**survey.to_dict(), "id": "invited"})
        store.add_survey(other)
        tokens = store.issue_tokens("invited", 5)
        store.submit("invited", other.hash, "invited-0001", other.randomize(ANSWERS), tokens[0])
        ensure_admin_token(store)
    return survey


def _snapshot(url: str) -> dict:
    with storage.Store(url) as store:
        return {
            "surveys": [(r.id, r.hash, r.version, r.access, r.closed) for r in store.list_surveys()],
            "versions": store.versions("tax"),
            "counts": [store.counts("tax", v["hash"]) for v in store.versions("tax")],
            "grouped": store.counts("tax", by="region"),
            "export": sorted(map(repr, store.export("tax"))),
            "tokens": store.token_counts("invited"),
            "admin": store.get_setting("admin_token_hash"),
            "tables": {t: store.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in storage.TABLES},
        }


def test_copy_sqlite_to_postgresql_and_back_keeps_everything(tmp_path, postgres, runner):
    source = str(tmp_path / "source.db")
    _deployment(source)
    before = _snapshot(source)
    target = postgres.fresh_url()
    result = runner.invoke(cli.main, ["copy", "--from", source, "--to", target])
    assert result.exit_code == 0, result.output
    assert "responses: 43 rows" in result.output
    assert _snapshot(target) == before
    # the target works as a deployment: the analysis reads it, a token survey still refuses a spent token
    from deniable.analysis import load

    assert load(db=target, survey_id="tax").n == load(db=source, survey_id="tax").n == 12
    back = f"sqlite:///{tmp_path / 'back.db'}"
    assert runner.invoke(cli.main, ["copy", "--from", target, "--to", back]).exit_code == 0
    assert _snapshot(back) == before
    # a second copy into a database that already holds surveys is refused, and writes nothing
    again = runner.invoke(cli.main, ["copy", "--from", source, "--to", target])
    assert again.exit_code == 1 and "already holds surveys" in again.output
    assert _snapshot(target) == before


def test_copy_of_a_missing_source_is_a_message(tmp_path, runner):
    result = runner.invoke(cli.main, ["copy", "--from", "postgresql://nobody@127.0.0.1:1/none",
                                      "--to", str(tmp_path / "x.db")])
    assert result.exit_code == 1 and "Error" in result.output and "Traceback" not in result.output


def test_online_backup_while_responses_arrive(tmp_path, runner):
    db = str(tmp_path / "live.db")
    survey = _deployment(db)
    stop = threading.Event()

    def writer():
        with storage.Store(db) as store:
            i = 0
            while not stop.is_set():
                store.submit("tax", survey.hash, f"during-{i:06d}", survey.randomize(ANSWERS))
                i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for name, flags in (("pages.db", []), ("compact.db", ["--compact"])):
            result = runner.invoke(cli.main, ["backup", "--db", db, "--output", str(tmp_path / name), *flags])
            assert result.exit_code == 0, result.output
    finally:
        stop.set()
        thread.join()
    for name in ("pages.db", "compact.db"):
        with storage.Store(str(tmp_path / name)) as copy:
            # consistent: the running totals equal the rows, whatever arrived mid-backup
            assert copy.get_survey("tax", survey.hash).responses == copy.execute(
                "SELECT COUNT(*) FROM responses WHERE spec_hash = ?", [survey.hash]).fetchone()[0] >= 30
    assert runner.invoke(cli.main, ["backup", "--db", db, "--output", str(tmp_path / "pages.db")]).exit_code == 1


def test_backup_of_postgresql_points_to_pg_dump(runner, tmp_path):
    result = runner.invoke(cli.main, ["backup", "--db", "postgresql://u@127.0.0.1:1/x", "--output", str(tmp_path / "b")])
    assert result.exit_code == 1 and "pg_dump" in result.output
