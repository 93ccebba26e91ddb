import pytest

from deniable.client import Survey
from deniable.server import storage
from tests.server.conftest import ANSWERS


def test_schema_is_created_in_wal_mode_and_migrations_are_idempotent(db_path):
    with storage.Store(db_path) as store:
        assert store.schema_version() == storage.SCHEMA_VERSION
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = set(store.db.table_names())
    with storage.Store(db_path) as again:
        assert set(again.db.table_names()) == tables
        assert again.schema_version() == storage.SCHEMA_VERSION


def test_a_failed_submission_writes_nothing(store, survey):
    record = store.get_survey("tax")
    reports = survey.randomize(ANSWERS)
    reports["hours"] = 1000
    with pytest.raises(storage.Invalid):
        store.submit("tax", record.hash, "k" * 16, reports)
    assert store.response_count("tax") == 0
    assert store.db.execute("SELECT COUNT(*) FROM reports").fetchone()[0] == 0


def test_a_spent_token_is_rolled_back_when_the_response_fails(store, survey):
    import sqlite3

    record = store.get_survey("tax")
    [token] = store.issue_tokens("tax", 1)
    store.db.execute("CREATE TRIGGER fail BEFORE INSERT ON reports BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    with pytest.raises(sqlite3.DatabaseError, match="disk full"):
        store.submit("tax", record.hash, "k" * 16, survey.randomize(ANSWERS), token)
    store.db.execute("DROP TRIGGER fail")
    assert store.token_counts("tax") == {"issued": 1, "used": 0}
    assert store.response_count("tax") == 0
    store.submit("tax", record.hash, "k" * 16, survey.randomize(ANSWERS), token)
    assert store.token_counts("tax") == {"issued": 1, "used": 1}


def test_versions_are_never_edited(store, demo):
    _, first = store.add_survey(demo)
    assert first == "created"
    assert store.add_survey(demo)[1] == "unchanged"
    spec = demo.to_dict()
    spec["title"] = "Retitled"
    record, outcome = store.add_survey(Survey.from_dict(spec))
    assert outcome == "new version" and record.version == 2
    assert store.get_survey("tax", demo.hash).survey.title == demo.title
    # going back to version 1's spec makes it current again, without a third version
    record, outcome = store.add_survey(demo)
    assert outcome == "new version" and record.version == 1
    assert [v["version"] for v in store.versions("tax")] == [1, 2]


def test_open_surveys_accept_anonymous_responses(store, survey):
    record = store.get_survey("tax")
    assert record.access == "open"
    for i in range(3):
        store.submit("tax", record.hash, f"key-{i:08d}", survey.randomize(ANSWERS))
    assert store.response_count("tax") == 3
