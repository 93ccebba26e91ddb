"""Storage: the only module that talks to the database.

Two engines behind one `Store`, chosen by the database URL: SQLite (a path or ``sqlite:///…``,
through sqlite-utils; the embedded default) and PostgreSQL (``postgresql://…``, psycopg 3 with a
psycopg_pool pool per process). Every query is written once, with ``?`` placeholders; the
PostgreSQL engine turns them into ``%s``. Schema versions and migrations are the same on both.

What is kept, and nothing more: survey specs (every version, by hash), respondent tokens (hashed,
with the date used), and per response a random id, the survey id, the spec hash, the date received
and the randomized reports. No time of day, no address, no user agent, no link from a token to a
response. Reports also live in a long table (one row per response and question) so counts are a
single GROUP BY where the data sits.
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import hashlib
import json
import re
import secrets
import sqlite3
from dataclasses import dataclass

from deniable.client import SpecError, Survey, skiplogic
from deniable.client.exact import canonical_json
from deniable.client.versions import VersionError, resolve_version

SCHEMA_VERSION = 5

#: How finely the day a response arrived is kept (the setting ``received_on``): a date can tell
#: a response from the others of that day to whoever saw someone answer on it.
GRANULARITIES = ("day", "week", "month")


class StorageError(Exception):
    """Base of the storage layer's errors; each carries an HTTP status and the field at fault."""

    status = 400

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(StorageError):
    status = 404


class Conflict(StorageError):
    status = 409


class Gone(StorageError):
    status = 410


class Invalid(StorageError):
    status = 422


#: Admin sign-in: minimum password length, failures before a lock, the lock, a session's life.
MIN_PASSWORD_LENGTH = 12
SIGN_IN_FAILURES = 5
SIGN_IN_LOCK = dt.timedelta(minutes=15)
SESSION_LIFETIME = dt.timedelta(hours=8)
_DUMMY_HASH = "scrypt:32768:8:1$deniable$" + "0" * 128


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _today(granularity: str = "day") -> str:
    """Today (UTC) as a date, rounded down to the Monday of its ISO week or the first of its month."""
    today = dt.datetime.now(dt.timezone.utc).date()
    if granularity == "week":
        today -= dt.timedelta(days=today.weekday())
    elif granularity == "month":
        today = today.replace(day=1)
    return today.isoformat()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


canonical = canonical_json  # stored report values and fingerprints


@dataclass
class SurveyRecord:
    id: str
    hash: str
    version: int
    survey: Survey
    access: str  # "open" or "token"
    closed_on: str | None
    _count: object = None  # counts this version's responses on demand (not on the submit path)

    @property
    def closed(self) -> bool:
        return self.closed_on is not None

    @property
    def responses(self) -> int:
        return self._count()


# --- engines ---------------------------------------------------------------------------------------

def is_postgres(url: str) -> bool:
    return str(url).startswith(("postgresql://", "postgres://"))


def sqlite_path(url: str) -> str:
    """The file of a SQLite URL (``sqlite:///relative.db``, ``sqlite:////abs.db``) or plain path."""
    url = str(url)
    return url[len("sqlite:///"):] if url.startswith("sqlite:///") else url


def describe(url: str) -> str:
    """The database URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", str(url))


class SQLiteEngine:
    """One SQLite connection (sqlite-utils), WAL, ``synchronous=FULL``; writers queue on
    ``BEGIN IMMEDIATE``. Schema version in ``PRAGMA user_version``."""

    dialect = "sqlite"
    begin = "BEGIN IMMEDIATE"
    #: One writer at a time: counter shards would only cost reads.
    counter_shards = 1

    def __init__(self, url: str, read_only: bool = False):
        self.path = sqlite_path(url)
        self.memo = {}  # what the current transaction read once (Store._in_transaction)
        if read_only:
            import os
            import urllib.parse

            if self.path == ":memory:" or not os.path.isfile(self.path):
                raise NotFound(f"{self.path}: no such database file", "db")
            target = f"file:{urllib.parse.quote(os.path.abspath(self.path))}?mode=ro"
            connection = sqlite3.connect(target, uri=True, timeout=30, isolation_level=None, check_same_thread=False)
        else:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        import sqlite_utils  # here, not at the top: it imports pandas when installed (0.9 s for `deniable --help`)

        self.db = sqlite_utils.Database(connection)
        if self.path != ":memory:" and not read_only:
            self.db.enable_wal()
        # FULL: a commit reaches the disk before the client hears "201" (invariant 6).
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")

    def execute(self, sql: str, params=()):
        return self.db.conn.execute(sql, params)

    def executemany(self, sql: str, rows):
        return self.db.conn.executemany(sql, rows)

    def stream(self, sql: str, params=()):
        yield from self.db.conn.execute(sql, params)

    def pipeline(self):
        import contextlib

        return contextlib.nullcontext()

    @property
    def in_transaction(self) -> bool:
        return self.db.conn.in_transaction

    def rollback(self):
        if self.db.conn.in_transaction:
            self.db.conn.rollback()

    def schema_version(self) -> int:
        return self.execute("PRAGMA user_version").fetchone()[0]

    def set_schema_version(self, version: int):
        self.execute(f"PRAGMA user_version={int(version)}")

    def lock_for_migration(self):
        pass  # BEGIN IMMEDIATE already holds the write lock

    def table_names(self) -> list[str]:
        return self.db.table_names()

    def without_rowid(self) -> str:
        return " WITHOUT ROWID"

    def compact(self) -> tuple[int, int]:
        def size():
            return self.execute("PRAGMA page_count").fetchone()[0] * self.execute("PRAGMA page_size").fetchone()[0]

        before = size()
        self.execute("VACUUM")
        if self.path != ":memory:":
            self.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return before, size()

    def close(self):
        self.db.conn.close()


_POOLS: dict = {}


def _pool(url: str):
    """One pool per database URL and per process (a pool made before a fork is not reused)."""
    import os

    from psycopg_pool import ConnectionPool

    key = (url, os.getpid())
    if key not in _POOLS:
        # One direct connection first: an unreachable or misnamed database fails at once with
        # PostgreSQL's own message, where the pool would retry quietly until its timeout.
        import psycopg

        try:
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.OperationalError as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else error.__class__.__name__
            raise StorageError(f"cannot connect to the database ({reason})", "db") from None
        _POOLS[key] = ConnectionPool(url, min_size=1, max_size=32, open=True, timeout=30,
                                     kwargs={"autocommit": True}, name="deniable")
    return _POOLS[key]


class PostgresEngine:
    """A connection borrowed from the process's psycopg_pool pool, in autocommit mode with explicit
    transactions. Schema version in the table ``deniable_schema``; migrations take an advisory lock."""

    dialect = "postgresql"
    begin = "BEGIN"
    #: Concurrent submissions to one survey spread their counter updates over this many rows per
    #: value, so they do not all wait on one row lock until the other commits; reads sum them.
    counter_shards = 8

    def __init__(self, url: str):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise StorageError("PostgreSQL needs psycopg: pip install 'deniable[postgresql]'") from None
        self.url = url
        self.memo = {}  # what the current transaction read once (Store._in_transaction)
        self.pool = _pool(url)
        self.connection = self.pool.getconn()

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def execute(self, sql: str, params=()):
        return self.connection.execute(self._sql(sql), params)

    def executemany(self, sql: str, rows):
        with self.connection.cursor() as cursor:
            cursor.executemany(self._sql(sql), list(rows))

    def pipeline(self):
        return self.connection.pipeline()

    def stream(self, sql: str, params=()):
        # A server-side cursor: an export of millions of rows never sits in memory at once.
        with self.connection.transaction(), self.connection.cursor(name=f"stream_{secrets.token_hex(4)}") as cursor:
            cursor.itersize = 2000
            cursor.execute(self._sql(sql), params)
            yield from cursor

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.connection.info.transaction_status != TransactionStatus.IDLE

    def rollback(self):
        if self.in_transaction:
            self.connection.execute("ROLLBACK")

    def schema_version(self) -> int:
        self.execute("CREATE TABLE IF NOT EXISTS deniable_schema (version INTEGER NOT NULL)")
        row = self.execute("SELECT version FROM deniable_schema").fetchone()
        return 0 if row is None else row[0]

    def set_schema_version(self, version: int):
        self.execute("DELETE FROM deniable_schema")
        self.execute("INSERT INTO deniable_schema (version) VALUES (?)", [version])

    def lock_for_migration(self):
        self.execute("SELECT pg_advisory_xact_lock(?)", [0x64656E69])  # 'deni'

    def table_names(self) -> list[str]:
        return [r[0] for r in self.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_schema = current_schema() ORDER BY table_name")]

    def without_rowid(self) -> str:
        return ""

    def compact(self) -> tuple[int, int]:
        # Heap tables keep rows where they were inserted: CLUSTER rewrites them in key order.
        def size():
            return self.execute("SELECT pg_database_size(current_database())").fetchone()[0]

        before = size()
        for table, index in (("responses", "responses_pkey"), ("reports", "reports_pkey")):
            self.execute(f"CLUSTER {table} USING {index}")
        self.execute("VACUUM ANALYZE")
        return before, size()

    def close(self):
        self.rollback()
        self.pool.putconn(self.connection)


def open_engine(url: str, read_only: bool = False):
    return PostgresEngine(str(url)) if is_postgres(url) else SQLiteEngine(str(url), read_only)


# --- schema ----------------------------------------------------------------------------------------

def _migrate_to_1(engine):
    for sql in (
        "CREATE TABLE surveys (id TEXT PRIMARY KEY, current_hash TEXT, access TEXT, closed_on TEXT, added_on TEXT)",
        "CREATE TABLE survey_versions (hash TEXT PRIMARY KEY, survey_id TEXT, version INTEGER, spec TEXT, added_on TEXT)",
        "CREATE UNIQUE INDEX idx_survey_versions_survey_id_version ON survey_versions (survey_id, version)",
        "CREATE TABLE responses (id TEXT PRIMARY KEY, survey_id TEXT, spec_hash TEXT, received_on TEXT, "
        "idempotency_key TEXT, fingerprint TEXT)",
        "CREATE UNIQUE INDEX idx_responses_survey_id_idempotency_key ON responses (survey_id, idempotency_key)",
        "CREATE INDEX idx_responses_spec_hash ON responses (spec_hash)",
        "CREATE TABLE reports (response_id TEXT, spec_hash TEXT, question_id TEXT, value TEXT, "
        "PRIMARY KEY (response_id, question_id))",
        "CREATE INDEX idx_reports_spec_hash_question_id_value ON reports (spec_hash, question_id, value)",
        "CREATE TABLE tokens (token_hash TEXT PRIMARY KEY, survey_id TEXT, issued_on TEXT, used_on TEXT)",
        "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT)",
    ):
        engine.execute(sql)


def _migrate_to_2(engine):
    """Running totals, kept in the same transaction as each response: counting a version's
    reports no longer scans them (10^7 stored reports took 49 s to count by GROUP BY)."""
    engine.execute("CREATE TABLE report_counts (spec_hash TEXT, question_id TEXT, value TEXT, count BIGINT, "
                   "PRIMARY KEY (spec_hash, question_id, value))")
    engine.execute("ALTER TABLE survey_versions ADD COLUMN responses BIGINT NOT NULL DEFAULT 0")
    engine.execute("INSERT INTO report_counts (spec_hash, question_id, value, count) "
                   "SELECT spec_hash, question_id, value, COUNT(*) FROM reports GROUP BY spec_hash, question_id, value")
    engine.execute("UPDATE survey_versions SET responses = (SELECT COUNT(*) FROM responses r WHERE r.spec_hash = survey_versions.hash)")


def _migrate_to_3(engine):
    """Responses and reports in tables clustered by the random response id, the running totals
    by value (WITHOUT ROWID): with a rowid, SQLite keeps rows in arrival order, and whoever saw
    when someone answered could find their row by its place. Existing rows are copied over in id
    order. PostgreSQL's heap tables have no such clustering: there, `compact` CLUSTERs them."""
    if engine.dialect != "sqlite":
        return
    engine.execute("CREATE TABLE responses_by_id (id TEXT PRIMARY KEY, survey_id TEXT, spec_hash TEXT, received_on TEXT, "
                   "idempotency_key TEXT, fingerprint TEXT) WITHOUT ROWID")
    engine.execute("INSERT INTO responses_by_id SELECT id, survey_id, spec_hash, received_on, idempotency_key, fingerprint "
                   "FROM responses ORDER BY id")
    engine.execute("CREATE TABLE reports_by_id (response_id TEXT, spec_hash TEXT, question_id TEXT, value TEXT, "
                   "PRIMARY KEY (response_id, question_id)) WITHOUT ROWID")
    engine.execute("INSERT INTO reports_by_id SELECT response_id, spec_hash, question_id, value FROM reports "
                   "ORDER BY response_id, question_id")
    # The running totals too: with a rowid, a value's row would sit where it first arrived.
    engine.execute("CREATE TABLE report_counts_by_value (spec_hash TEXT, question_id TEXT, value TEXT, count BIGINT, "
                   "PRIMARY KEY (spec_hash, question_id, value)) WITHOUT ROWID")
    engine.execute("INSERT INTO report_counts_by_value SELECT spec_hash, question_id, value, count FROM report_counts "
                   "ORDER BY spec_hash, question_id, value")
    for table in ("responses", "reports", "report_counts"):
        engine.execute(f"DROP TABLE {table}")
    engine.execute("ALTER TABLE responses_by_id RENAME TO responses")
    engine.execute("ALTER TABLE reports_by_id RENAME TO reports")
    engine.execute("ALTER TABLE report_counts_by_value RENAME TO report_counts")
    engine.execute("CREATE UNIQUE INDEX idx_responses_survey_id_idempotency_key ON responses (survey_id, idempotency_key)")
    engine.execute("CREATE INDEX idx_responses_spec_hash ON responses (spec_hash)")
    engine.execute("CREATE INDEX idx_reports_spec_hash_question_id_value ON reports (spec_hash, question_id, value)")


def _migrate_to_4(engine):
    """Counter shards: each running total is kept in a few rows (``shard``), summed on read, so
    concurrent submissions on PostgreSQL do not all queue on one row lock; the response count per
    version moves to ``version_counts`` for the same reason."""
    tail = engine.without_rowid()
    engine.execute("CREATE TABLE report_counts_sharded (spec_hash TEXT, question_id TEXT, value TEXT, shard INTEGER, "
                   f"count BIGINT, PRIMARY KEY (spec_hash, question_id, value, shard)){tail}")
    engine.execute("INSERT INTO report_counts_sharded SELECT spec_hash, question_id, value, 0, count FROM report_counts "
                   "ORDER BY spec_hash, question_id, value")
    engine.execute("DROP TABLE report_counts")
    engine.execute("ALTER TABLE report_counts_sharded RENAME TO report_counts")
    engine.execute(f"CREATE TABLE version_counts (spec_hash TEXT, shard INTEGER, responses BIGINT, "
                   f"PRIMARY KEY (spec_hash, shard)){tail}")
    engine.execute("INSERT INTO version_counts SELECT hash, 0, responses FROM survey_versions WHERE responses > 0")
    engine.execute("ALTER TABLE survey_versions DROP COLUMN responses")


def _migrate_to_5(engine):
    """Named admin accounts (password hashes), their browser sessions (hashed ids, with the
    CSRF secret of each), revocable API tokens (hashed) and an audit log of admin actions."""
    for sql in (
        "CREATE TABLE admins (name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, added_on TEXT, "
        "failed_sign_ins INTEGER NOT NULL DEFAULT 0, locked_until TEXT)",
        "CREATE TABLE admin_sessions (id_hash TEXT PRIMARY KEY, admin TEXT NOT NULL, csrf TEXT NOT NULL, "
        "expires_at TEXT NOT NULL)",
        "CREATE TABLE api_tokens (id TEXT PRIMARY KEY, name TEXT NOT NULL, admin TEXT, token_hash TEXT NOT NULL UNIQUE, "
        "created_on TEXT, last_used_on TEXT, revoked_on TEXT)",
        "CREATE TABLE audit_log (id TEXT PRIMARY KEY, at TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL, "
        "survey_id TEXT, detail TEXT)",
        "CREATE INDEX idx_audit_log_at ON audit_log (at)",
    ):
        engine.execute(sql)


MIGRATIONS = {1: _migrate_to_1, 2: _migrate_to_2, 3: _migrate_to_3, 4: _migrate_to_4, 5: _migrate_to_5}


def rebuild_counts(engine):
    """Recompute the running totals from the stored rows (bulk loads that bypass `submit`)."""
    engine.execute("DELETE FROM report_counts")
    engine.execute("INSERT INTO report_counts (spec_hash, question_id, value, shard, count) "
                   "SELECT spec_hash, question_id, value, 0, COUNT(*) FROM reports GROUP BY spec_hash, question_id, value")
    engine.execute("DELETE FROM version_counts")
    engine.execute("INSERT INTO version_counts (spec_hash, shard, responses) "
                   "SELECT spec_hash, 0, COUNT(*) FROM responses GROUP BY spec_hash")


#: Transient failures of a submission on PostgreSQL, retried from the start.
_RETRIES = 4


@functools.cache
def _transient() -> tuple:
    """PostgreSQL's deadlock and serialization failures (psycopg is imported only when needed)."""
    try:
        from psycopg import errors
    except ImportError:
        return ()
    return errors.DeadlockDetected, errors.SerializationFailure


class Store:
    """One connection to the database (a SQLite file or a PostgreSQL URL); create one per request
    or per command, or keep one per thread on SQLite (``reusable``)."""

    def __init__(self, url, migrate: bool = True, read_only: bool = False):
        """``read_only``: a SQLite file must exist and is opened read-only (commands that only read
        never create an empty database from a mistyped path); the schema must be current."""
        self.url = str(url)
        self.engine = open_engine(self.url, read_only)
        self.reusable = self.engine.dialect == "sqlite"
        if read_only:
            try:
                version = self.schema_version()
            except sqlite3.DatabaseError as error:
                self.close()
                raise StorageError(f"{describe(self.url)}: not a deniable database ({error})", "db") from None
            if version != SCHEMA_VERSION:
                self.close()
                raise StorageError(f"{describe(self.url)}: schema version {version}, this deniable reads "
                                   f"{SCHEMA_VERSION}: run `deniable init-db` to migrate it", "db")
        elif migrate:
            self.migrate()

    @property
    def db(self) -> "sqlite_utils.Database":  # noqa: F821 - imported by the engine
        """The sqlite-utils database (SQLite only; tests and benchmarks poke at it)."""
        return self.engine.db

    def execute(self, sql: str, params=()):
        """Run one statement written with ``?`` placeholders, on either engine."""
        return self.engine.execute(sql, params)

    def close(self):
        self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- schema -------------------------------------------------------------------------------

    def schema_version(self) -> int:
        return self.engine.schema_version()

    def migrate(self):
        """Bring the schema to SCHEMA_VERSION, one numbered migration at a time, each atomic."""
        while (current := self.schema_version()) < SCHEMA_VERSION:
            with self.transaction():
                self.engine.lock_for_migration()
                if self.schema_version() != current:  # another process migrated meanwhile
                    continue
                MIGRATIONS[current + 1](self.engine)
                self.engine.set_schema_version(current + 1)

    def transaction(self):
        return _Transaction(self.engine)

    def _one(self, sql: str, params) -> dict | None:
        cursor = self.engine.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else dict(zip((c[0] for c in cursor.description), row))

    def _survey_row(self, survey_id: str) -> dict | None:
        return self._one("SELECT id, current_hash, access, closed_on FROM surveys WHERE id = ?", [survey_id])

    # --- surveys ------------------------------------------------------------------------------

    def add_survey(self, survey: Survey, access: str | None = None, actor: str | None = None) -> tuple[SurveyRecord, str]:
        """Store a spec. Returns the record and what happened: "created", "unchanged" or "new version".

        A survey's spec is never changed in place: a different spec under the same id becomes
        a new version with its own hash, and responses keep the hash they were randomized under.
        """
        if access not in (None, "open", "token"):
            raise Invalid(f"access must be 'open' or 'token', got {access!r}", "access")
        with self.transaction():
            row = self._survey_row(survey.id)
            if row is not None and row["current_hash"] == survey.hash:
                if access and access != row["access"]:
                    self.execute("UPDATE surveys SET access = ? WHERE id = ?", [access, survey.id])
                return self.get_survey(survey.id), "unchanged"
            if self._one("SELECT hash FROM survey_versions WHERE hash = ?", [survey.hash]) is None:
                version = 1 + self.execute("SELECT COALESCE(MAX(version), 0) FROM survey_versions WHERE survey_id = ?",
                                           [survey.id]).fetchone()[0]
                self.execute("INSERT INTO survey_versions (hash, survey_id, version, spec, added_on) VALUES (?, ?, ?, ?, ?)",
                             [survey.hash, survey.id, version, survey.canonical_json(), _today()])
            if row is None:
                self.execute("INSERT INTO surveys (id, current_hash, access, closed_on, added_on) VALUES (?, ?, ?, NULL, ?)",
                             [survey.id, survey.hash, access or "open", _today()])
                outcome = "created"
            else:
                self.execute("UPDATE surveys SET current_hash = ?, access = COALESCE(?, access) WHERE id = ?",
                             [survey.hash, access, survey.id])
                outcome = "new version"
            record = self.get_survey(survey.id)
            self._audit_if(actor, f"survey {outcome}", survey.id, f"version {record.version} {record.hash[:12]}")
        return record, outcome

    def _record(self, row: dict, spec_hash: str | None = None) -> SurveyRecord:
        spec_hash = spec_hash or row["current_hash"]
        version = self._one("SELECT version, spec FROM survey_versions WHERE hash = ? AND survey_id = ?", [spec_hash, row["id"]])
        if version is None:
            raise Invalid(f"spec_hash {spec_hash!r} is not a version of survey {row['id']!r}", "spec_hash")

        def count():
            return self._responses_of(spec_hash)

        return SurveyRecord(id=row["id"], hash=spec_hash, version=version["version"],
                            survey=_load_spec(version["spec"]), access=row["access"],
                            closed_on=row["closed_on"], _count=count)

    def _responses_of(self, spec_hash: str) -> int:
        return int(self.execute("SELECT COALESCE(SUM(responses), 0) FROM version_counts WHERE spec_hash = ?",
                                [spec_hash]).fetchone()[0])

    def get_survey(self, survey_id: str, spec_hash: str | None = None) -> SurveyRecord:
        row = self._survey_row(survey_id)
        if row is None:
            raise NotFound(f"no survey {survey_id!r}", "survey_id")
        return self._record(row, spec_hash)

    def find_version(self, survey_id: str, spec_hash: str | None = None, version=None) -> SurveyRecord:
        """A version to read: named by its full hash, a unique prefix of it, or its number (the
        current one when neither is given). Submitting names the full hash (`get_survey`)."""
        row = self._survey_row(survey_id)
        if row is None:
            raise NotFound(f"no survey {survey_id!r}", "survey_id")
        if spec_hash is None and version is None:
            return self._record(row)
        try:
            entry = resolve_version(self.versions(survey_id), survey_id, spec_hash, version)
        except VersionError as error:
            raise (NotFound if error.missing else Invalid)(error.message, error.field) from None
        return self._record(row, entry["hash"])

    def list_surveys(self) -> list[SurveyRecord]:
        cursor = self.execute("SELECT id, current_hash, access, closed_on FROM surveys ORDER BY id")
        names = [c[0] for c in cursor.description]
        return [self._record(dict(zip(names, row))) for row in cursor.fetchall()]

    def versions(self, survey_id: str) -> list[dict]:
        self.get_survey(survey_id)
        rows = self.execute(
            "SELECT v.version, v.hash, v.added_on, COALESCE(SUM(c.responses), 0) FROM survey_versions v "
            "LEFT JOIN version_counts c ON c.spec_hash = v.hash WHERE v.survey_id = ? "
            "GROUP BY v.version, v.hash, v.added_on ORDER BY v.version", [survey_id]).fetchall()
        return [{"version": v, "hash": h, "added_on": d, "responses": int(n)} for v, h, d, n in rows]

    def reopen_survey(self, survey_id: str, actor: str | None = None) -> SurveyRecord:
        """Accept responses again (a survey closed by mistake, or a second wave). ``actor``: who,
        for the audit log (written in the same transaction; None writes no line)."""
        self.get_survey(survey_id)
        with self.transaction():
            self.execute("UPDATE surveys SET closed_on = NULL WHERE id = ?", [survey_id])
            self._audit_if(actor, "survey reopened", survey_id)
        return self.get_survey(survey_id)

    def close_survey(self, survey_id: str, actor: str | None = None) -> SurveyRecord:
        record = self.get_survey(survey_id)
        with self.transaction():
            if not record.closed:
                self.execute("UPDATE surveys SET closed_on = ? WHERE id = ?", [_today(), survey_id])
            self._audit_if(actor, "survey closed", survey_id)
        return self.get_survey(survey_id)

    # --- tokens -------------------------------------------------------------------------------

    def issue_tokens(self, survey_id: str, count: int, actor: str | None = None) -> list[str]:
        """New single-use respondent tokens; only their hashes are stored. Turns token access on."""
        if not 1 <= count <= 100_000:
            raise Invalid("count must be between 1 and 100000", "count")
        if self.get_survey(survey_id).closed:
            raise Gone(f"survey {survey_id!r} is closed: reopen it first (deniable survey reopen {survey_id})", "survey_id")
        tokens = [secrets.token_urlsafe(16) for _ in range(count)]
        with self.transaction():
            self.engine.executemany("INSERT INTO tokens (token_hash, survey_id, issued_on, used_on) VALUES (?, ?, ?, NULL)",
                                    [(_digest(t), survey_id, _today()) for t in tokens])
            self.execute("UPDATE surveys SET access = 'token' WHERE id = ?", [survey_id])
            self._audit_if(actor, "invitation tokens issued", survey_id, f"{count} tokens")
        return tokens

    def token_status(self, survey_id: str, token: str) -> str | None:
        """"unused" or "used" for a token of this survey, None for any other string: what the survey page
        tells a respondent before they answer. Sending still decides, in the transaction that spends it."""
        row = self._one("SELECT used_on FROM tokens WHERE token_hash = ? AND survey_id = ?", [_digest(token), survey_id])
        return None if row is None else "unused" if row["used_on"] is None else "used"

    def token_counts(self, survey_id: str) -> dict:
        issued, used = self.execute("SELECT COUNT(*), COUNT(used_on) FROM tokens WHERE survey_id = ?",
                                    [survey_id]).fetchone()
        return {"issued": issued, "used": used}

    # --- responses ----------------------------------------------------------------------------

    def submit(self, survey_id: str, spec_hash, idempotency_key, reports, token=None,
               answerable=None) -> tuple[dict, bool]:
        """Validate and store one response. Returns (acknowledgement, created).

        A retry with the same idempotency key returns the first acknowledgement (created False),
        even when it races the first attempt from another process. Nothing is written unless
        everything is valid; the token is spent in the same transaction as the response is
        stored, and accepted exactly once however many processes race for it. ``answerable``
        limits the required questions to those a client could answer (the no-JavaScript form).
        """
        record, values, fingerprint = self._prepare(survey_id, spec_hash, idempotency_key, reports, token, answerable)
        return self._retrying(lambda: self._store_response(survey_id, spec_hash, idempotency_key, token, record, values,
                                                           fingerprint))

    @staticmethod
    def _retrying(store):
        """Run ``store`` again after a deadlock or serialization failure (PostgreSQL), a few times."""
        for attempt in range(_RETRIES):
            try:
                return store()
            except _transient() as error:
                if attempt == _RETRIES - 1:
                    raise StorageError(f"the database is too busy to store this ({error.__class__.__name__}); "
                                       "send it again with the same idempotency key") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _prepare(self, survey_id, spec_hash, idempotency_key, reports, token, answerable=None):
        """Everything about one response that needs no write: (record, sorted report rows, fingerprint)."""
        if not isinstance(spec_hash, str) or not spec_hash:
            raise Invalid("spec_hash: required, the hash of the spec the answers were randomized under", "spec_hash")
        if not isinstance(idempotency_key, str) or not 8 <= len(idempotency_key) <= 128:
            raise Invalid("idempotency_key: required, a random string of 8 to 128 characters", "idempotency_key")
        if token is not None and (not isinstance(token, str) or not 1 <= len(token) <= 256):
            raise Invalid("token: must be a string", "token")
        record = self._in_transaction("record", (survey_id, spec_hash), lambda: self.get_survey(survey_id, spec_hash))
        clean = validate_reports(record.survey, reports, answerable)
        fingerprint = _digest(canonical({"spec_hash": spec_hash, "reports": clean}))
        # Counter rows in one order for everyone: two transactions never wait on each other crosswise.
        values = sorted((spec_hash, qid, canonical(value)) for qid, value in clean.items())
        return record, values, fingerprint

    def submit_many(self, survey_id: str, items: list[tuple]) -> list:
        """Store a batch of responses, each judged on its own as `submit` would judge it alone:
        ``items`` are (spec_hash, idempotency_key, reports, token); the result per item is
        (acknowledgement, created) or the StorageError it earned. One transaction. Responses to an
        open survey go in with a handful of multi-row statements for the whole batch; a token
        survey's go one by one (each spends its own token in its own savepoint)."""
        results: list = [None] * len(items)

        def store():
            with self.transaction():
                self._submit_many(survey_id, items, results)
            return results

        return self._retrying(store)

    def _submit_many(self, survey_id: str, items: list[tuple], results: list):
        prepared = []  # (position, spec_hash, key, values, fingerprint)
        for position, (spec_hash, key, reports, token) in enumerate(items):
            try:
                record, values, fingerprint = self._prepare(survey_id, spec_hash, key, reports, token)
            except StorageError as error:
                results[position] = error
                continue
            if record.access == "token":
                try:
                    with self.transaction():  # a savepoint: this item alone is undone on refusal
                        results[position] = self._store_response(survey_id, spec_hash, key, token, record, values, fingerprint)
                except StorageError as error:
                    results[position] = error
            else:
                prepared.append((position, spec_hash, key, values, fingerprint))
        if not prepared:
            return
        closed = self._in_transaction("survey", survey_id, lambda: self._survey_row(survey_id))["closed_on"] is not None
        received_on = _today(self._in_transaction("setting", "received_on", self.received_on_granularity))
        first = {}  # key -> the batch's first item with it (a later one is a retry of it)
        for entry in prepared:
            first.setdefault(entry[2], entry)
        ids = {key: secrets.token_hex(16) for key in first}
        inserted = set()
        for chunk in _chunks([] if closed else first.values(), 500):
            cursor = self.execute(
                "INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, fingerprint) VALUES "
                + ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(chunk))
                + " ON CONFLICT (survey_id, idempotency_key) DO NOTHING RETURNING idempotency_key",
                [x for _, spec_hash, key, _, fingerprint in chunk
                 for x in (ids[key], survey_id, spec_hash, received_on, key, fingerprint)])
            inserted.update(r[0] for r in cursor.fetchall())
        # Keys stored before this batch (retries) get their first acknowledgement.
        previous = {}
        for chunk in _chunks(sorted(set(first) - inserted), 500):
            cursor = self.execute("SELECT id, survey_id, spec_hash, received_on, fingerprint, idempotency_key FROM responses "
                                  f"WHERE survey_id = ? AND idempotency_key IN ({', '.join('?' * len(chunk))})",
                                  [survey_id, *chunk])
            names = [c[0] for c in cursor.description]
            previous.update({row[-1]: dict(zip(names, row)) for row in cursor.fetchall()})
        for key in inserted:
            _, spec_hash, _, _, fingerprint = first[key]
            previous[key] = {"id": ids[key], "survey_id": survey_id, "spec_hash": spec_hash, "received_on": received_on,
                             "fingerprint": fingerprint}
        written = []  # (response id, spec hash, values) of the responses inserted now
        for entry in prepared:
            position, spec_hash, key, values, fingerprint = entry
            stored = previous.get(key)
            if stored is None:
                results[position] = (Gone(f"survey {survey_id!r} is closed", "survey_id") if closed else
                                     StorageError("idempotency_key: stored by another request meanwhile; send it again",
                                                  "idempotency_key"))
            elif stored["fingerprint"] != fingerprint:
                results[position] = Invalid("idempotency_key: already used for a different response", "idempotency_key")
            elif key in inserted and first[key] is entry:
                results[position] = (self._acknowledgement(stored), True)
                written.append((ids[key], spec_hash, values))
            else:
                results[position] = (self._acknowledgement(stored), False)
        self._write_reports(written)

    def _previous(self, survey_id: str, idempotency_key: str, fingerprint: str) -> dict | None:
        previous = self._one("SELECT id, survey_id, spec_hash, received_on, fingerprint FROM responses "
                             "WHERE survey_id = ? AND idempotency_key = ?", [survey_id, idempotency_key])
        if previous is not None and previous["fingerprint"] != fingerprint:
            raise Invalid("idempotency_key: already used for a different response", "idempotency_key")
        return previous

    def _store_response(self, survey_id, spec_hash, idempotency_key, token, record, values, fingerprint):
        # Few round trips (each costs a network wait on PostgreSQL): the survey row and the date
        # setting are read once per transaction (once per batch), the response row is inserted
        # first and stands for the idempotency check, reports and counters go in one statement each.
        with self.transaction():
            if self._in_transaction("survey", survey_id, lambda: self._survey_row(survey_id))["closed_on"] is not None:
                previous = self._previous(survey_id, idempotency_key, fingerprint)
                if previous is not None:  # stored before it closed: the answer the client missed
                    return self._acknowledgement(previous), False
                raise Gone(f"survey {survey_id!r} is closed", "survey_id")
            received_on = _today(self._in_transaction("setting", "received_on", self.received_on_granularity))
            row = {"id": secrets.token_hex(16), "survey_id": survey_id, "spec_hash": spec_hash, "received_on": received_on,
                   "idempotency_key": idempotency_key, "fingerprint": fingerprint}
            inserted = self.execute(
                "INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, fingerprint) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (survey_id, idempotency_key) DO NOTHING RETURNING id",
                [row["id"], survey_id, spec_hash, received_on, idempotency_key, fingerprint]).fetchone()
            if inserted is None:  # a retry (perhaps racing its first attempt, which has committed now)
                previous = self._previous(survey_id, idempotency_key, fingerprint)
                if previous is None:  # pragma: no cover - the conflicting row cannot vanish inside a transaction
                    raise StorageError("idempotency_key: conflicting response not found", "idempotency_key")
                return self._acknowledgement(previous), False
            if record.access == "token":
                if token is None:
                    raise Invalid("token: this survey needs the respondent token from your invitation link", "token")
                # Spent in the same transaction: a refusal below rolls the response back with it.
                spent = self.execute("UPDATE tokens SET used_on = ? WHERE token_hash = ? AND survey_id = ? AND used_on IS NULL",
                                     [received_on, _digest(token), survey_id])
                if spent.rowcount != 1:
                    if self._one("SELECT 1 AS one FROM tokens WHERE token_hash = ? AND survey_id = ?",
                                 [_digest(token), survey_id]) is None:
                        raise Invalid("token: not a token of this survey", "token")
                    raise Conflict("token: already used; each invitation answers once", "token")
            self._write_reports([(row["id"], spec_hash, values)])
        return self._acknowledgement(row), True

    def _write_reports(self, responses: list[tuple]):
        """The report rows of newly stored responses — (response id, spec hash, sorted values) —
        and their running totals, in one multi-row statement per table (per 1000 rows), all on one
        random counter shard, sent together (pipelined) on PostgreSQL."""
        if not responses:
            return
        rows = [(response_id, *value) for response_id, _, values in responses for value in values]
        counts = collections.Counter(value for _, _, values in responses for value in values)
        versions = collections.Counter(spec_hash for _, spec_hash, _ in responses)
        shard = secrets.randbelow(self.engine.counter_shards)
        with self.engine.pipeline():
            for chunk in _chunks(rows, 1000):
                self.execute("INSERT INTO reports (response_id, spec_hash, question_id, value) VALUES "
                             + ", ".join(["(?, ?, ?, ?)"] * len(chunk)), [x for row in chunk for x in row])
            for chunk in _chunks(sorted(counts.items()), 1000):  # sorted: every writer locks in one order
                self.execute("INSERT INTO report_counts (spec_hash, question_id, value, shard, count) VALUES "
                             + ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))
                             + " ON CONFLICT (spec_hash, question_id, value, shard) "
                               "DO UPDATE SET count = report_counts.count + excluded.count",
                             [x for value, n in chunk for x in (*value, shard, n)])
            for spec_hash, n in sorted(versions.items()):
                self.execute("INSERT INTO version_counts (spec_hash, shard, responses) VALUES (?, ?, ?) "
                             "ON CONFLICT (spec_hash, shard) DO UPDATE SET responses = version_counts.responses + excluded.responses",
                             [spec_hash, shard, n])

    def _in_transaction(self, kind: str, key, read):
        """``read()`` once per outer transaction (a batch reads the survey row once, not per item);
        outside a transaction, every time."""
        if not self.engine.in_transaction:
            return read()
        memo = self.engine.memo
        if (kind, key) not in memo:
            memo[(kind, key)] = read()
        return memo[(kind, key)]

    @staticmethod
    def _acknowledgement(row: dict) -> dict:
        return {"id": row["id"], "survey_id": row["survey_id"], "spec_hash": row["spec_hash"], "received_on": row["received_on"]}

    def response_count(self, survey_id: str) -> int:
        return int(self.execute("SELECT COALESCE(SUM(c.responses), 0) FROM version_counts c "
                                "JOIN survey_versions v ON v.hash = c.spec_hash WHERE v.survey_id = ?",
                                [survey_id]).fetchone()[0])

    def rebuild_counts(self):
        with self.transaction():
            rebuild_counts(self.engine)

    def counts(self, survey_id: str, spec_hash: str | None = None, by: str | None = None, version=None) -> dict:
        """Per question, how many of each report value (for one version); optionally per level of a
        public question ``by``. Aggregated in SQL; the running totals' shards are summed."""
        record = self.find_version(survey_id, spec_hash, version)
        if by is not None:
            question = record.survey.questions.get(by)
            if question is None:
                raise Invalid(f"by: no question {by!r} in this survey", "by")
            if question.is_private:
                raise Invalid(f"by: {by!r} is randomized; group only by a public question (privacy: none)", "by")
            rows = self.execute(
                "SELECT g.value, r.question_id, r.value, COUNT(*) FROM reports r "
                "JOIN reports g ON g.response_id = r.response_id AND g.question_id = ? "
                "WHERE r.spec_hash = ? GROUP BY g.value, r.question_id, r.value", [by, record.hash]).fetchall()
        else:
            rows = [(None, *row) for row in self.execute(
                "SELECT question_id, value, SUM(count) FROM report_counts WHERE spec_hash = ? "
                "GROUP BY question_id, value", [record.hash]).fetchall()]
        table: dict = {}  # group (canonical JSON text, or None) → question → [{report, count}]
        for group, qid, value, count in rows:
            table.setdefault(group, {}).setdefault(qid, []).append({"report": json.loads(value), "count": int(count)})
        result = {"survey_id": survey_id, "spec_hash": record.hash, "version": record.version,
                  "responses": record.responses}
        if by is None:
            result["counts"] = _ordered_counts(record.survey, table.get(None, {}))
        else:
            levels = record.survey.questions[by].mechanism.reports
            result["by"] = by
            result["groups"] = [{"value": level, "counts": _ordered_counts(record.survey, table[canonical(level)])}
                                for level in levels if canonical(level) in table]
        return result

    def report_rows(self, spec_hash: str, question_ids: list[str]):
        """(response id, question id, canonical value) of the given questions of one version."""
        marks = ",".join("?" * len(question_ids))
        return self.execute(f"SELECT response_id, question_id, value FROM reports WHERE spec_hash = ? "
                            f"AND question_id IN ({marks})", [spec_hash, *question_ids]).fetchall()

    def export(self, survey_id: str, spec_hash: str | None = None, version=None):
        """Yield one dict per response of a version: id, spec_hash, received_on, reports; in the
        order of the random response ids, which says nothing about when anyone answered."""
        record = self.find_version(survey_id, spec_hash, version)
        rows = self.engine.stream(
            "SELECT r.id, r.received_on, p.question_id, p.value FROM responses r "
            "LEFT JOIN reports p ON p.response_id = r.id WHERE r.spec_hash = ? ORDER BY r.id", [record.hash])
        order = list(record.survey.questions)

        def ordered(row):
            row["reports"] = {qid: row["reports"][qid] for qid in order if qid in row["reports"]}
            return row

        current = None
        for response_id, received_on, qid, value in rows:
            if current is None or current["id"] != response_id:
                if current is not None:
                    yield ordered(current)
                current = {"id": response_id, "spec_hash": record.hash, "received_on": received_on, "reports": {}}
            if qid is not None:
                current["reports"][qid] = json.loads(value)
        if current is not None:
            yield ordered(current)

    # --- settings -----------------------------------------------------------------------------

    def get_setting(self, key: str) -> str | None:
        row = self.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
        return None if row is None else row[0]

    def set_setting(self, key: str, value: str):
        self.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                     [key, value])

    def compact(self) -> tuple[int, int]:
        """Rewrite the tables in key order (SQLite: VACUUM; PostgreSQL: CLUSTER and VACUUM), so
        no page keeps rows in arrival order. Returns the database size before and after, in bytes."""
        return self.engine.compact()

    def received_on_granularity(self) -> str:
        """How finely arrival dates are kept: "day" (the default), "week" or "month"."""
        return self.get_setting("received_on") or "day"

    def set_received_on_granularity(self, granularity: str):
        if granularity not in GRANULARITIES:
            raise Invalid(f"received_on: must be one of {', '.join(GRANULARITIES)}, got {granularity!r}", "received_on")
        self.set_setting("received_on", granularity)

    # --- admins, sessions, API tokens, audit ---------------------------------------------------

    def add_admin(self, name: str, password: str):
        """A named admin account; the password is kept only as a salted scrypt hash (werkzeug)."""
        from werkzeug.security import generate_password_hash

        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.@-]{1,64}", name):
            raise Invalid("name: 1 to 64 letters, digits or _ . @ -", "name")
        if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
            raise Invalid(f"password: at least {MIN_PASSWORD_LENGTH} characters", "password")
        with self.transaction():
            if self._one("SELECT name FROM admins WHERE name = ?", [name]) is not None:
                raise Conflict(f"name: an admin {name!r} exists already", "name")
            self.execute("INSERT INTO admins (name, password_hash, added_on) VALUES (?, ?, ?)",
                         [name, generate_password_hash(password), _today()])
            self.audit(name, "admin added")

    def admins(self) -> list[dict]:
        cursor = self.execute("SELECT name, added_on, locked_until FROM admins ORDER BY name")
        return [{"name": n, "added_on": d, "locked_until": locked} for n, d, locked in cursor.fetchall()]

    def check_password(self, name: str, password: str) -> bool:
        """True for the right password. Every failure counts; after `SIGN_IN_FAILURES` in a row the
        account is locked for `SIGN_IN_LOCK` (across every server process: it is in the database)."""
        from werkzeug.security import check_password_hash

        row = self._one("SELECT password_hash, failed_sign_ins, locked_until FROM admins WHERE name = ?", [name])
        if row is None:
            check_password_hash(_DUMMY_HASH, password)  # the same time for an unknown name
            return False
        now = _now()
        if row["locked_until"] and row["locked_until"] > now.isoformat():
            return False
        if check_password_hash(row["password_hash"], password):
            self.execute("UPDATE admins SET failed_sign_ins = 0, locked_until = NULL WHERE name = ?", [name])
            return True
        failures = row["failed_sign_ins"] + 1
        locked = (now + SIGN_IN_LOCK).isoformat() if failures >= SIGN_IN_FAILURES else None
        self.execute("UPDATE admins SET failed_sign_ins = ?, locked_until = ? WHERE name = ?",
                     [0 if locked else failures, locked, name])
        if locked:
            self.audit(name, "account locked", detail=f"{SIGN_IN_FAILURES} failed sign-ins")
        return False

    def start_session(self, admin: str) -> tuple[str, str]:
        """A new session (a fresh id at every sign-in: no fixation); returns (id, CSRF secret).
        Only the id's hash is stored."""
        session_id, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.execute("DELETE FROM admin_sessions WHERE expires_at < ?", [_now().isoformat()])
        self.execute("INSERT INTO admin_sessions (id_hash, admin, csrf, expires_at) VALUES (?, ?, ?, ?)",
                     [_digest(session_id), admin, csrf, (_now() + SESSION_LIFETIME).isoformat()])
        return session_id, csrf

    def session(self, session_id: str | None) -> dict | None:
        """{admin, csrf} of a live session, or None."""
        if not session_id or not isinstance(session_id, str) or len(session_id) > 100:
            return None
        row = self._one("SELECT admin, csrf, expires_at FROM admin_sessions WHERE id_hash = ?", [_digest(session_id)])
        if row is None or row["expires_at"] < _now().isoformat():
            return None
        return {"admin": row["admin"], "csrf": row["csrf"]}

    def end_session(self, session_id: str | None):
        if session_id:
            self.execute("DELETE FROM admin_sessions WHERE id_hash = ?", [_digest(session_id)])

    def create_api_token(self, name: str, admin: str | None = None) -> tuple[str, str]:
        """A named token for scripts: returns (id, token). The token is shown once and kept hashed."""
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            raise Invalid("name: 1 to 100 characters saying what the token is for", "name")
        token_id, token = secrets.token_hex(4), "dnb_" + secrets.token_urlsafe(32)
        with self.transaction():
            self.execute("INSERT INTO api_tokens (id, name, admin, token_hash, created_on) VALUES (?, ?, ?, ?, ?)",
                         [token_id, name, admin, _digest(token), _today()])
            self.audit(admin or "cli", "API token created", detail=f"{token_id} ({name})")
        return token_id, token

    def api_tokens(self) -> list[dict]:
        cursor = self.execute("SELECT id, name, admin, created_on, last_used_on, revoked_on FROM api_tokens ORDER BY created_on, id")
        names = [c[0] for c in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def revoke_api_token(self, token_id: str, actor: str = "cli"):
        with self.transaction():
            if self.execute("UPDATE api_tokens SET revoked_on = ? WHERE id = ? AND revoked_on IS NULL",
                            [_today(), token_id]).rowcount != 1:
                raise NotFound(f"no live API token {token_id!r}", "id")
            self.audit(actor, "API token revoked", detail=token_id)

    def api_token_name(self, token: str | None) -> str | None:
        """The name of a live API token (its last use is recorded, to the day), or None."""
        if not token or len(token) > 200:
            return None
        row = self._one("SELECT id, name, last_used_on FROM api_tokens WHERE token_hash = ? AND revoked_on IS NULL",
                        [_digest(token)])
        if row is None:
            return None
        if row["last_used_on"] != _today():
            self.execute("UPDATE api_tokens SET last_used_on = ? WHERE id = ?", [_today(), row["id"]])
        return f"token {row['id']} ({row['name']})"

    def audit(self, actor: str, action: str, survey_id: str | None = None, detail: str | None = None):
        """One line of the audit log: who did what to which survey, when. Never report content."""
        self.execute("INSERT INTO audit_log (id, at, actor, action, survey_id, detail) VALUES (?, ?, ?, ?, ?, ?)",
                     [secrets.token_hex(8), _now().isoformat(timespec="microseconds"), actor, action, survey_id, detail])

    def _audit_if(self, actor: str | None, action: str, survey_id: str | None = None, detail: str | None = None):
        if actor is not None:
            self.audit(actor, action, survey_id, detail)

    def audit_log(self, limit: int = 200) -> list[dict]:
        cursor = self.execute("SELECT at, actor, action, survey_id, detail FROM audit_log ORDER BY at DESC, id LIMIT ?",
                              [limit])
        names = [c[0] for c in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def healthy(self) -> dict:
        """For load balancers: the engine answers and the schema is the one this code expects."""
        version = self.schema_version()
        return {"database": self.engine.dialect, "schema_version": version, "expected_schema_version": SCHEMA_VERSION,
                "ok": version == SCHEMA_VERSION}


#: Every table of the current schema and its columns, in the order a copy fills them.
TABLES = {
    "settings": ("key", "value"),
    "surveys": ("id", "current_hash", "access", "closed_on", "added_on"),
    "survey_versions": ("hash", "survey_id", "version", "spec", "added_on"),
    "tokens": ("token_hash", "survey_id", "issued_on", "used_on"),
    "responses": ("id", "survey_id", "spec_hash", "received_on", "idempotency_key", "fingerprint"),
    "reports": ("response_id", "spec_hash", "question_id", "value"),
    "report_counts": ("spec_hash", "question_id", "value", "shard", "count"),
    "version_counts": ("spec_hash", "shard", "responses"),
    "admins": ("name", "password_hash", "added_on", "failed_sign_ins", "locked_until"),
    "api_tokens": ("id", "name", "admin", "token_hash", "created_on", "last_used_on", "revoked_on"),
    "audit_log": ("id", "at", "actor", "action", "survey_id", "detail"),
}
_KEYS = {"settings": "key", "surveys": "id", "survey_versions": "hash", "tokens": "token_hash", "responses": "id",
         "reports": "response_id, question_id", "report_counts": "spec_hash, question_id, value, shard",
         "version_counts": "spec_hash, shard", "admins": "name", "api_tokens": "id", "audit_log": "at, id"}


def copy_database(source_url: str, target_url: str, batch: int = 5000, progress=None) -> dict[str, int]:
    """Copy a whole deployment to another database (SQLite ↔ PostgreSQL): every table, rows in key
    order, in one transaction on the target, which must hold no survey yet. The source is brought
    to the current schema first. Returns rows copied per table; each is checked against the source."""
    copied = {}
    with Store(source_url) as source, Store(target_url) as target:
        if target.execute("SELECT COUNT(*) FROM surveys").fetchone()[0]:
            raise Conflict(f"{describe(target_url)} already holds surveys; copy into an empty database", "to")
        with target.transaction():
            target.execute("DELETE FROM settings")
            for table, columns in TABLES.items():
                names = ", ".join(columns)
                insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})"
                rows, count = [], 0
                for row in source.engine.stream(f"SELECT {names} FROM {table} ORDER BY {_KEYS[table]}"):
                    rows.append(tuple(row))
                    if len(rows) >= batch:
                        target.engine.executemany(insert, rows)
                        count, rows = count + len(rows), []
                        if progress:
                            progress(table, count)
                if rows:
                    target.engine.executemany(insert, rows)
                    count += len(rows)
                expected = source.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                if target.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] != expected or count != expected:
                    raise StorageError(f"{table}: {count} rows copied but the source holds {expected}; nothing was kept")
                copied[table] = count
    return copied


def backup_sqlite(source_url: str, output: str, compact: bool = False) -> int:
    """A consistent copy of a live SQLite database (writers carry on meanwhile). The backup API
    copies pages as they are; ``compact`` writes them in key order instead (VACUUM INTO), so no
    page of the copy keeps rows in arrival order. Returns the size of the copy in bytes."""
    import os

    if is_postgres(source_url):
        raise Invalid("backups of PostgreSQL are pg_dump's job: pg_dump --format=custom --file=deniable.dump "
                      "<database URL> (see docs/deploy.md)", "db")
    if os.path.exists(output):
        raise Conflict(f"{output} exists; choose a new file", "output")
    with Store(source_url) as source:
        if compact:
            source.execute("VACUUM INTO ?", [output])
        else:
            target = sqlite3.connect(output)
            try:
                source.engine.db.conn.backup(target)
            finally:
                target.close()
    return os.path.getsize(output)


def _chunks(sequence, size: int):
    sequence = list(sequence)
    for start in range(0, len(sequence), size):
        yield sequence[start:start + size]


def _ordered_counts(survey: Survey, table: dict) -> dict:
    """Counts per question in report-alphabet order, zeros included, so every value is listed."""
    result = {}
    for qid, question in survey.questions.items():
        seen = {canonical(item["report"]): item["count"] for item in table.get(qid, [])}
        mechanism = question.mechanism
        alphabet = mechanism.reports if len(mechanism.answers) <= 4096 else []
        listed = [{"report": r, "count": seen.pop(canonical(r), 0)} for r in alphabet]
        result[qid] = listed + [{"report": json.loads(k), "count": n} for k, n in seen.items()]
    return result


_SPEC_CACHE: dict[str, Survey] = {}


def _load_spec(text: str) -> Survey:
    # Specs are immutable by hash, and building a channel (e.g. the ordinal search) is not free.
    survey = _SPEC_CACHE.get(text)
    if survey is None:
        try:
            survey = Survey.from_json(text)
        except SpecError as error:  # pragma: no cover - stored specs were validated on the way in
            raise StorageError(f"stored spec is invalid: {error}") from None
        _SPEC_CACHE[text] = survey
    return survey


def validate_reports(survey: Survey, reports, answerable=None) -> dict:
    """Canonical reports, or Invalid naming the field: every report in its mechanism's output
    alphabet (invariant 2), no unknown question, no report for a question that skip logic hides
    (decided by the public reports, which are the true public answers), every question that is
    required for these answers present."""
    if not isinstance(reports, dict):
        raise Invalid("reports: must be an object of question id to report", "reports")
    clean = {}
    for qid, value in reports.items():
        question = survey.questions.get(qid)
        if question is None:
            raise Invalid(f"reports.{qid}: no such question in this survey", f"reports.{qid}")
        if value is None:
            continue
        try:
            clean[qid] = question.mechanism.validate_report(value)
        except ValueError as error:
            raise Invalid(f"reports.{qid}: {error}", f"reports.{qid}") from None
    shown = survey.shown(clean)
    hidden = [qid for qid in clean if qid not in shown]
    if hidden:
        raise Invalid(f"reports.{hidden[0]}: this question is not shown for these answers (skip logic: "
                      f"{skiplogic.to_text(survey.condition(hidden[0]))})", f"reports.{hidden[0]}")
    missing = [qid for qid in survey.required_now(clean, shown)
               if qid not in clean and (answerable is None or qid in answerable)]
    if missing:
        raise Invalid(f"reports.{missing[0]}: required question not answered", f"reports.{missing[0]}")
    return clean


class _Transaction:
    """BEGIN (IMMEDIATE on SQLite: writers queue on the lock instead of failing mid-way) … COMMIT.

    Nested inside another transaction it is a savepoint: a failure rolls back only its own
    writes (one batch item), and the outer transaction commits the rest at once.
    """

    def __init__(self, engine):
        self.connection = engine
        self.savepoint = None

    def __enter__(self):
        if self.connection.in_transaction:
            self.savepoint = f"item_{secrets.token_hex(4)}"
            self.connection.execute(f"SAVEPOINT {self.savepoint}")
        else:
            self.connection.memo = {}
            self.connection.execute(self.connection.begin)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.savepoint is None:
            self.connection.memo = {}
            self.connection.execute("COMMIT" if exc_type is None else "ROLLBACK")
        else:
            if exc_type is not None:
                self.connection.execute(f"ROLLBACK TO {self.savepoint}")
            self.connection.execute(f"RELEASE {self.savepoint}")
        return False
