import pytest

from deniable import storage
from deniable.client import Survey
from deniable.client.memo import Memo
from deniable.client.reports import WAVES
from tests.conftest import EXAMPLES
from tests.databases import ANSWERS, PANEL_ANSWERS

pytestmark = pytest.mark.both_engines


def test_schema_is_created_and_migrations_are_idempotent(db_path, engine):
    with storage.Store(db_path) as store:
        assert store.schema_version() == storage.SCHEMA_VERSION
        if engine == "sqlite":
            assert store.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = set(store.engine.table_names())
        assert {"surveys", "survey_versions", "responses", "reports", "report_counts", "version_counts", "tokens",
                "settings"} <= tables
    with storage.Store(db_path) as again:
        assert set(again.engine.table_names()) == tables
        assert again.schema_version() == storage.SCHEMA_VERSION


def test_a_failed_submission_writes_nothing(store, survey):
    record = store.get_survey("tax")
    reports = survey.randomize(ANSWERS)
    reports["hours"] = 1000
    with pytest.raises(storage.Invalid):
        store.submit("tax", record.hash, "k" * 16, reports)
    assert store.response_count("tax") == 0
    assert store.execute("SELECT COUNT(*) FROM reports").fetchone()[0] == 0


@pytest.mark.sqlite_only
def test_a_spent_token_is_rolled_back_when_the_response_fails(store, survey):
    import sqlite3

    record = store.get_survey("tax")
    [token] = store.issue_tokens("tax", 1)
    store.connection.execute("CREATE TRIGGER fail BEFORE INSERT ON reports BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    with pytest.raises(sqlite3.DatabaseError, match="disk full"):
        store.submit("tax", record.hash, "k" * 16, survey.randomize(ANSWERS), token)
    store.connection.execute("DROP TRIGGER fail")
    assert store.token_counts("tax") == {"issued": 1, "used": 0, "credentials": 0}
    assert store.response_count("tax") == 0
    store.submit("tax", record.hash, "k" * 16, survey.randomize(ANSWERS), token)
    assert store.token_counts("tax") == {"issued": 1, "used": 1, "credentials": 0}


def test_token_status_is_what_the_survey_page_tells_before_answering(store, survey, demo):
    record = store.get_survey("tax")
    [token] = store.issue_tokens("tax", 1)
    store.add_survey(Survey.from_dict({**demo.to_dict(), "id": "other"}))
    assert store.token_status("tax", token) == "unused"
    assert store.token_status("other", token) is None  # a token is for its own survey only
    assert store.token_status("tax", "made-up") is None
    store.submit("tax", record.hash, "k" * 16, survey.randomize(ANSWERS), token)
    assert store.token_status("tax", token) == "used"


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


def _scanned_counts(store, spec_hash):
    return sorted(store.execute("SELECT question_id, value, COUNT(*) FROM reports WHERE spec_hash = ? "
                                   "GROUP BY question_id, value", [spec_hash]).fetchall())


def test_schema_7_keys_responses_and_reports_by_version_and_keeps_every_figure(db_path, engine, demo, monkeypatch):
    """Migration 7 keyed `responses` by (spec hash, id) and `reports` by (spec hash, response id, question) and
    dropped their indexes on the spec hash and on (spec hash, question, value): a schema-6 database keeps every row,
    count (whole, by a public question, by wave) and exported response, and every read of them searches a range of
    a key (a join that forgot the spec hash would scan the table once per row)."""
    from deniable.storage import store as store_module

    panel = Survey.from_file(EXAMPLES / "panel.yaml")
    with monkeypatch.context() as schema_6:
        schema_6.setattr(store_module, "SCHEMA_VERSION", 6)
        with storage.Store(db_path) as old:
            assert old.schema_version() == 6
            old.add_survey(demo)
            old.add_survey(panel)
            for i in range(40):
                old.submit("tax", demo.hash, f"tax-{i:06d}", demo.randomize(ANSWERS))
            memos = [Memo.from_secret(bytes([i]) * 32) for i in range(15)]
            for wave in ("w1", "w2"):
                old.open_wave("pulse", wave)
                for i, memo in enumerate(memos):
                    old.submit("pulse", panel.hash, f"{wave}-{i:06d}", panel.randomize(PANEL_ANSWERS, memo=memo), wave=wave)
            before = _figures(old), _rows(old)
    with storage.Store(db_path) as new:
        assert new.schema_version() == storage.SCHEMA_VERSION
        assert _indexes(new, engine) == {"responses": {("spec_hash", "id"), ("survey_id", "idempotency_key"),
                                                       ("survey_id", "received_on")},
                                         "reports": {("spec_hash", "response_id", "question_id")}}
        assert _rows(new) == before[1]
        statements = []
        for method in ("execute", "stream"):
            original = getattr(new.engine, method)
            monkeypatch.setattr(new.engine, method, lambda sql, params=(), run=original: statements.append((sql, params))
                                or run(sql, params))
        assert _figures(new) == before[0]
        if engine == "sqlite":
            plans = {sql: " | ".join(row[-1] for row in new.connection.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall())
                     for sql, params in statements if " responses" in sql or " reports" in sql}
            # by a public question, by wave, the export (and its frame cells' answers), the rows of some questions,
            # per day, per wave
            assert len(plans) == 7, plans
            for sql, plan in plans.items():
                assert "SCAN" not in plan and "SEARCH" in plan, (sql, plan)
        # `deniable compact` rewrites both tables by their new keys (PostgreSQL: CLUSTER … USING <table>_pkey)
        monkeypatch.undo()
        new.compact()
        assert (_figures(new), _rows(new)) == before




def _figures(store) -> tuple:
    return (store.counts("tax"), store.counts("tax", by="region"), store.counts("pulse", by=WAVES),
            list(store.export("tax")), list(store.export("pulse")), store.responses_per_day("tax"), store.waves("pulse"),
            sorted(store.report_rows(store.get_survey("tax").hash, ["dodged", "region"])))


def _rows(store) -> tuple:
    """Every response and report row, in the columns schema 6 had (later ones add columns, empty for old rows)."""
    columns = {"responses": [c for c in storage.schema.TABLES["responses"]
                             if c not in ("frame_cell", "seconds", "paradata")]}
    return tuple(sorted(store.execute(f"SELECT {', '.join(columns.get(table, storage.schema.TABLES[table]))} "
                                      f"FROM {table}").fetchall())
                 for table in ("responses", "reports"))


def _indexes(store, engine) -> dict:
    """Each table's key and indexes, as their columns."""
    found = {}
    for table in ("responses", "reports"):
        if engine == "sqlite":
            names = [row[1] for row in store.execute(f"PRAGMA index_list({table})").fetchall()]
            found[table] = {tuple(row[2] for row in store.execute(f"PRAGMA index_info({name})").fetchall()
                                  if row[2] is not None) for name in names}
        else:
            definitions = store.execute("SELECT indexdef FROM pg_indexes WHERE tablename = ? "
                                        "AND schemaname = current_schema()", [table]).fetchall()
            found[table] = {tuple(definition.split("(", 1)[1].rstrip(")").split(", ")) for (definition,) in definitions}
    return found


@pytest.mark.sqlite_only
def test_a_stored_response_writes_few_pages(db_path, demo):
    """What a commit costs is mostly the pages it writes to the log (and syncs). Schema 7 keeps a response's rows
    together: about 11 pages of SQLite's log per response stored alone, where schema 6's indexes on the spec hash and
    on (spec hash, question, value) made it 22 (measured at 1,000 to 10,000 stored responses). An index that scatters
    a response's rows again fails this."""
    import os
    import secrets

    with storage.Store(db_path) as store:
        store.add_survey(demo)
        for _ in range(2):  # a table of 1,000 responses: their pages are no longer all hot
            store.submit_many("tax", [(demo.hash, secrets.token_hex(16), demo.randomize(ANSWERS), None) for _ in range(500)])
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        frame = store.connection.execute("PRAGMA page_size").fetchone()[0] + 24
        for _ in range(100):
            store.submit("tax", demo.hash, secrets.token_hex(16), demo.randomize(ANSWERS))
        assert store.response_count("tax") == 1100
        pages = os.path.getsize(f"{db_path}-wal") / frame / 100
    assert 5 < pages < 14, pages


@pytest.mark.sqlite_only
def test_migration_from_schema_1_backfills_the_totals(tmp_path, demo):
    import sqlite3

    import sqlite_utils

    path = str(tmp_path / "old.db")
    old = sqlite_utils.Database(path)
    storage.schema.migrate_to_1(old)
    old.execute("PRAGMA user_version=1")
    old["survey_versions"].insert({"hash": demo.hash, "survey_id": "tax", "version": 1, "spec": demo.canonical_json(),
                                   "added_on": "2026-01-01"})
    old["surveys"].insert({"id": "tax", "current_hash": demo.hash, "access": "open", "closed_on": None, "added_on": "2026-01-01"})
    for i in range(25):
        reports = demo.randomize(ANSWERS)
        old["responses"].insert({"id": f"r{i}", "survey_id": "tax", "spec_hash": demo.hash, "received_on": "2026-01-01",
                                 "idempotency_key": f"k{i:010d}", "fingerprint": "x"})
        old["reports"].insert_all({"response_id": f"r{i}", "spec_hash": demo.hash, "question_id": q,
                                   "value": storage.canonical(v)} for q, v in reports.items())
    old.conn.commit()
    old.close()
    with storage.Store(path) as store:
        assert store.schema_version() == storage.SCHEMA_VERSION == 16
        assert store.get_survey("tax").responses == 25
        # schema 3 moved every response and report into tables clustered by the random id (schema 7: by version, then id)
        assert [row[0] for row in store.connection.execute("SELECT id FROM responses WHERE spec_hash = ?", [demo.hash])] == sorted(f"r{i}" for i in range(25))
        assert store.connection.execute("SELECT COUNT(*) FROM reports").fetchone()[0] == 25 * len(ANSWERS)
        for table in ("responses", "reports"):
            assert "WITHOUT ROWID" in store.connection.execute("SELECT sql FROM sqlite_master WHERE name = ?", [table]).fetchone()[0]
        totals = sorted(store.connection.execute("SELECT question_id, value, SUM(count) FROM report_counts "
                                         "GROUP BY question_id, value").fetchall())
        assert totals == _scanned_counts(store, demo.hash)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == storage.SCHEMA_VERSION


def test_postgresql_statements_number_their_placeholders_as_the_server_does():
    # psycopg's `%s` queries are re-parsed in Python past 50 parameters (60% of a batch request): deniable sends
    # `$n` through raw cursors instead; each `?` becomes the next number, the text around it untouched.
    convert = storage.postgresql.PostgresEngine._sql
    assert convert("SELECT 1") == "SELECT 1"
    assert convert("INSERT INTO t (a, b) VALUES (?, ?), (?, ?)") == "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"
    assert convert("UPDATE t SET a = ? WHERE b = ? AND c = 'x'") == "UPDATE t SET a = $1 WHERE b = $2 AND c = 'x'"


def test_a_statement_with_thousands_of_parameters_round_trips(store):
    values = [f"v{i}'%s?" for i in range(3000)]  # quotes, % and ? inside parameters are data, not syntax
    rows = store.execute("SELECT column1 FROM (VALUES " + ", ".join(["(?)"] * len(values)) + ") AS v", values).fetchall()
    assert [row[0] for row in rows] == values


def test_the_spec_cache_keeps_the_most_recently_used_and_no_more(monkeypatch):
    """A worker that served many versions kept every parsed spec for ever (~84 KiB each): the cache now keeps the most
    recently used `SPEC_CACHE_SIZE`, and a spec read again is the same object while kept."""
    from deniable.storage import surveys

    monkeypatch.setattr(surveys, "SPEC_CACHE_SIZE", 3)
    monkeypatch.setattr(surveys, "_SPEC_CACHE", __import__("collections").OrderedDict())
    demo = Survey.from_file(EXAMPLES / "tax.yaml").to_dict()
    texts = [Survey.from_dict({**demo, "title": f"Tax {i}"}).canonical_json() for i in range(5)]
    first = surveys.load_spec(texts[0])
    assert surveys.load_spec(texts[0]) is first
    for text in texts[1:]:
        surveys.load_spec(text)
    assert len(surveys._SPEC_CACHE) == 3 and texts[0] not in surveys._SPEC_CACHE
    assert surveys.load_spec(texts[0]) is not first and surveys.load_spec(texts[0]).hash == first.hash


def test_counts_by_a_public_question_are_the_reports_of_each_group(store, survey):
    """Each group's counts are its own reports counted one by one; a level nobody chose is no group."""
    import random

    record = store.get_survey("tax")
    draw = random.Random(7)
    expected: dict = {}
    for i in range(60):
        answers = {**ANSWERS, "region": draw.choice(["North", "South", "East"]), "hours": draw.randrange(0, 40)}
        reports = survey.randomize(answers)
        store.submit("tax", record.hash, f"key{i:013d}", reports)
        for qid, report in reports.items():
            group = expected.setdefault(reports["region"], {}).setdefault(qid, {})
            group[repr(report)] = group.get(repr(report), 0) + 1
    by_columns = store.counts("tax", by="region")
    found = {group["value"]: {qid: {repr(item["report"]): item["count"] for item in items if item["count"]}
                              for qid, items in group["counts"].items()}
             for group in by_columns["groups"]}
    assert found == expected
    assert [group["value"] for group in by_columns["groups"]] == ["North", "South", "East"]
