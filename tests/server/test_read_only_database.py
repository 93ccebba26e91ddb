"""A database that cannot be written: serving says so at start, commands that only read still read it,
a running server answers 503 naming the cause while it lasts and writes again once it is over, never a traceback.

The processes run without the capabilities that let root ignore file modes (setpriv), so the test means the same as
root in CI as for any other user."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from deniable import storage
from deniable.server.demo import demo_survey, simulated_answers

DENIABLE = str(Path(sys.executable).with_name("deniable"))


def unprivileged(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to run as root without the file-mode override"
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]


def freeze(folder: Path):
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)


def thaw(folder: Path):
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)


@pytest.fixture
def database(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "survey.db"
    survey = demo_survey()
    with storage.Store(str(path)) as store:
        store.add_survey(survey)
        for i in range(20):
            store.submit(survey.id, survey.hash, f"key-{i:04d}-abcdef", survey.randomize(simulated_answers()))
    yield path
    thaw(folder)


def test_serving_a_read_only_database_says_so_and_reading_commands_still_read(database):
    freeze(database.parent)
    served = subprocess.run(unprivileged([DENIABLE, "serve", "--db", str(database), "--port", "0"]),
                            capture_output=True, text=True, timeout=60)
    assert served.returncode != 0 and "Traceback" not in served.stderr + served.stdout
    assert "read-only" in served.stderr or "cannot be written" in served.stderr, served.stderr
    listed = subprocess.run(unprivileged([DENIABLE, "survey", "list", "--db", str(database)]), capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0 and "tax" in listed.stdout, listed.stderr
    estimated = subprocess.run(unprivileged([DENIABLE, "estimate", "tax", "--db", str(database), "--format", "json"]),
                               capture_output=True, text=True, timeout=120)
    assert estimated.returncode == 0 and "Traceback" not in estimated.stderr, estimated.stderr
    assert sorted(os.listdir(database.parent)) == ["survey.db", "survey.db-writer"]  # nothing created beside it


SERVER = textwrap.dedent("""
    import json, os, sys, threading
    from pathlib import Path
    from deniable.server import create_app
    from deniable.server.demo import demo_survey, simulated_answers

    path = Path(sys.argv[1])
    app = create_app({"DATABASE": str(path), "RATELIMIT_ENABLED": False, "ADMIN_TOKEN": "a" * 32})
    survey = demo_survey()
    client = app.test_client()
    outcomes = []

    def post(label, key):
        body = {"spec_hash": survey.hash, "idempotency_key": key, "reports": survey.randomize(simulated_answers())}
        answer = client.post(f"/api/v1/surveys/{survey.id}/responses", json=body)
        outcomes.append((label, answer.status_code, answer.get_json()))

    refused, thawed = threading.Event(), threading.Event()

    def worker():  # a thread that opens its connection while the file cannot be written, and serves on after
        post("frozen", "frozen-0001")
        refused.set()
        thawed.wait()
        post("thawed", "thawed-0001")
        post("frozen again", "frozen-0001")  # the refused one, sent again

    post("before", "before-0001")
    for item in list(path.parent.iterdir()):
        item.chmod(0o444)
    path.parent.chmod(0o555)
    thread = threading.Thread(target=worker)
    thread.start()
    refused.wait()
    health = client.get("/healthz")
    outcomes.append(("health", health.status_code, health.get_json()))
    path.parent.chmod(0o755)
    for item in list(path.parent.iterdir()):
        item.chmod(0o644)
    thawed.set()
    thread.join()
    print(json.dumps(outcomes))
""")


def test_a_running_server_refuses_while_the_file_cannot_be_written_and_writes_again_after(database, tmp_path):
    script = tmp_path / "serve.py"
    script.write_text(SERVER)
    ran = subprocess.run(unprivileged([sys.executable, str(script), str(database)]), capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr
    outcomes = {label: (status, body) for label, status, body in json.loads(ran.stdout.splitlines()[-1])}
    assert outcomes["before"][0] == 201
    status, body = outcomes["frozen"]
    assert status == 503 and body["error"]["field"] == "db" and "read-only" in body["error"]["message"]
    assert outcomes["health"][0] == 503 and "read-only" in outcomes["health"][1]["error"]
    assert outcomes["thawed"][0] == 201 and outcomes["frozen again"][0] == 201  # nothing kept read-only
    with storage.Store(str(database), read_only=True) as store:
        assert store.response_count("tax") == 20 + 3  # the refused response was not stored until sent again


@pytest.mark.both_engines
def test_a_read_only_store_cannot_write_on_either_engine_and_its_connection_writes_again_after(db_path, store, survey):
    """Store(url, read_only=True) could write on PostgreSQL; its pooled connection must not stay read-only for the
    writer the pool lends it to next."""
    from deniable import storage

    with storage.Store(db_path, read_only=True) as reader:
        with pytest.raises(Exception, match="(?i)read-only|readonly|attempt to write"):
            reader.execute("INSERT INTO settings (key, value) VALUES ('x', 'y')")
        assert reader.get_survey("tax").id == "tax"
    with storage.Store(db_path) as writer:
        writer.set_setting("after", "reader")
        assert writer.get_setting("after") == "reader"


@pytest.mark.both_engines
def test_a_full_disk_while_tokens_are_issued_is_a_507_saying_nothing_was_stored(store, survey, engine, monkeypatch):
    """PostgresEngine.executemany skipped the refusal mapping: a full disk during token issue was a 500. On SQLite (a
    real full database) the 507 was hidden too: SQLite had rolled the transaction back, and our ROLLBACK failed."""
    from deniable import storage

    class DiskFull(Exception):  # the name psycopg gives SQLSTATE 53100, and SQLite's words
        def __str__(self):
            return "could not extend file: No space left on device"

    def full(*args, **kwargs):
        raise DiskFull()

    if engine == "postgresql":
        class Cursor(store.engine.cursor):
            executemany = full

        monkeypatch.setattr(store.engine, "cursor", Cursor)
    else:  # a real full database: no page beyond those it has
        pages = store.execute("PRAGMA page_count").fetchone()[0]
        store.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(storage.errors.DiskFull) as refused:
            store.issue_tokens("tax", 5000)
    assert refused.value.status == 507 and "nothing was stored" in refused.value.message
    storage.errors.LAST_FAILURE.clear()  # the process's health says so for a minute: not the next test's
    monkeypatch.undo()
    if engine == "sqlite":
        store.execute("PRAGMA max_page_count = 1073741823")
    assert store.token_counts("tax") == {"issued": 0, "used": 0, "credentials": 0}
