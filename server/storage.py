"""Storage: the only module that talks to the database (SQLite through sqlite-utils).

What is kept, and nothing more: survey specs (every version, by hash), respondent tokens (hashed,
with the date used), and per response a random id, the survey id, the spec hash, the date received
and the randomized reports. No time of day, no address, no user agent, no link from a token to a
response. Reports also live in a long table (one row per response and question) so counts are a
single GROUP BY where the data sits.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
import sqlite3
from dataclasses import dataclass

import sqlite_utils

from deniable.client import SpecError, Survey, skiplogic
from deniable.client.exact import canonical_json

SCHEMA_VERSION = 3

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


def _migrate_to_1(db: sqlite_utils.Database):
    db["surveys"].create({"id": str, "current_hash": str, "access": str, "closed_on": str, "added_on": str}, pk="id")
    db["survey_versions"].create({"hash": str, "survey_id": str, "version": int, "spec": str, "added_on": str}, pk="hash")
    db["survey_versions"].create_index(["survey_id", "version"], unique=True)
    db["responses"].create({"id": str, "survey_id": str, "spec_hash": str, "received_on": str,
                            "idempotency_key": str, "fingerprint": str}, pk="id")
    db["responses"].create_index(["survey_id", "idempotency_key"], unique=True)
    db["responses"].create_index(["spec_hash"])
    db["reports"].create({"response_id": str, "spec_hash": str, "question_id": str, "value": str},
                         pk=("response_id", "question_id"))
    db["reports"].create_index(["spec_hash", "question_id", "value"])
    db["tokens"].create({"token_hash": str, "survey_id": str, "issued_on": str, "used_on": str}, pk="token_hash")
    db["settings"].create({"key": str, "value": str}, pk="key")


def _migrate_to_2(db: sqlite_utils.Database):
    """Running totals, kept in the same transaction as each response: counting a version's
    reports no longer scans them (10^7 stored reports took 49 s to count by GROUP BY)."""
    db["report_counts"].create({"spec_hash": str, "question_id": str, "value": str, "count": int},
                               pk=("spec_hash", "question_id", "value"))
    db["survey_versions"].add_column("responses", int, not_null_default=0)
    rebuild_counts(db)


def rebuild_counts(db: sqlite_utils.Database):
    """Recompute the running totals from the stored rows (the migration; bulk loads that bypass `submit`)."""
    db.execute("DELETE FROM report_counts")
    db.execute("INSERT INTO report_counts (spec_hash, question_id, value, count) "
               "SELECT spec_hash, question_id, value, COUNT(*) FROM reports GROUP BY spec_hash, question_id, value")
    db.execute("UPDATE survey_versions SET responses = (SELECT COUNT(*) FROM responses r WHERE r.spec_hash = survey_versions.hash)")


def _migrate_to_3(db: sqlite_utils.Database):
    """Responses and reports in tables clustered by the random response id, the running totals
    by value (WITHOUT ROWID):
    with a rowid, SQLite keeps rows in arrival order, and whoever saw when someone answered
    could find their row by its place. Existing rows are copied over in id order."""
    db.execute("CREATE TABLE responses_by_id (id TEXT PRIMARY KEY, survey_id TEXT, spec_hash TEXT, received_on TEXT, "
               "idempotency_key TEXT, fingerprint TEXT) WITHOUT ROWID")
    db.execute("INSERT INTO responses_by_id SELECT id, survey_id, spec_hash, received_on, idempotency_key, fingerprint "
               "FROM responses ORDER BY id")
    db.execute("CREATE TABLE reports_by_id (response_id TEXT, spec_hash TEXT, question_id TEXT, value TEXT, "
               "PRIMARY KEY (response_id, question_id)) WITHOUT ROWID")
    db.execute("INSERT INTO reports_by_id SELECT response_id, spec_hash, question_id, value FROM reports "
               "ORDER BY response_id, question_id")
    # The running totals too: with a rowid, a value's row would sit where it first arrived.
    db.execute("CREATE TABLE report_counts_by_value (spec_hash TEXT, question_id TEXT, value TEXT, count INTEGER, "
               "PRIMARY KEY (spec_hash, question_id, value)) WITHOUT ROWID")
    db.execute("INSERT INTO report_counts_by_value SELECT spec_hash, question_id, value, count FROM report_counts "
               "ORDER BY spec_hash, question_id, value")
    for table in ("responses", "reports", "report_counts"):
        db.execute(f"DROP TABLE {table}")
    db.execute("ALTER TABLE responses_by_id RENAME TO responses")
    db.execute("ALTER TABLE reports_by_id RENAME TO reports")
    db.execute("ALTER TABLE report_counts_by_value RENAME TO report_counts")
    db.execute("CREATE UNIQUE INDEX idx_responses_survey_id_idempotency_key ON responses (survey_id, idempotency_key)")
    db.execute("CREATE INDEX idx_responses_spec_hash ON responses (spec_hash)")
    db.execute("CREATE INDEX idx_reports_spec_hash_question_id_value ON reports (spec_hash, question_id, value)")


MIGRATIONS = {1: _migrate_to_1, 2: _migrate_to_2, 3: _migrate_to_3}


class Store:
    """One connection to the database file; create one per request or per command."""

    def __init__(self, path):
        self.path = str(path)
        connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        self.db = sqlite_utils.Database(connection)
        if self.path != ":memory:":
            self.db.enable_wal()
        # FULL: a commit reaches the disk before the client hears "201" (invariant 6).
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.migrate()

    def close(self):
        self.db.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- schema -------------------------------------------------------------------------------

    def schema_version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self):
        """Bring the schema to SCHEMA_VERSION, one numbered migration at a time, each atomic."""
        while (current := self.schema_version()) < SCHEMA_VERSION:
            with self.transaction():
                if self.schema_version() != current:  # another process migrated meanwhile
                    continue
                MIGRATIONS[current + 1](self.db)
                self.db.execute(f"PRAGMA user_version={current + 1}")

    def transaction(self):
        return _Transaction(self.db.conn)

    def _one(self, sql: str, params) -> dict | None:
        cursor = self.db.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else dict(zip((c[0] for c in cursor.description), row))

    def _survey_row(self, survey_id: str) -> dict | None:
        return self._one("SELECT id, current_hash, access, closed_on FROM surveys WHERE id = ?", [survey_id])

    # --- surveys ------------------------------------------------------------------------------

    def add_survey(self, survey: Survey, access: str | None = None) -> tuple[SurveyRecord, str]:
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
                    self.db["surveys"].update(survey.id, {"access": access})
                return self.get_survey(survey.id), "unchanged"
            known = next(self.db["survey_versions"].rows_where("hash = ?", [survey.hash]), None)
            if known is None:
                version = 1 + (self.db.execute("SELECT COALESCE(MAX(version), 0) FROM survey_versions WHERE survey_id = ?",
                                               [survey.id]).fetchone()[0])
                self.db["survey_versions"].insert({"hash": survey.hash, "survey_id": survey.id, "version": version,
                                                   "spec": survey.canonical_json(), "added_on": _today()})
            if row is None:
                self.db["surveys"].insert({"id": survey.id, "current_hash": survey.hash, "access": access or "open",
                                           "closed_on": None, "added_on": _today()})
                outcome = "created"
            else:
                changes = {"current_hash": survey.hash}
                if access:
                    changes["access"] = access
                self.db["surveys"].update(survey.id, changes)
                outcome = "new version"
        return self.get_survey(survey.id), outcome

    def _record(self, row: dict, spec_hash: str | None = None) -> SurveyRecord:
        spec_hash = spec_hash or row["current_hash"]
        version = self._one("SELECT version, spec FROM survey_versions WHERE hash = ? AND survey_id = ?", [spec_hash, row["id"]])
        if version is None:
            raise Invalid(f"spec_hash {spec_hash!r} is not a version of survey {row['id']!r}", "spec_hash")
        def count():
            return self.db.execute("SELECT responses FROM survey_versions WHERE hash = ?", [spec_hash]).fetchone()[0]

        return SurveyRecord(id=row["id"], hash=spec_hash, version=version["version"],
                            survey=_load_spec(version["spec"]), access=row["access"],
                            closed_on=row["closed_on"], _count=count)

    def get_survey(self, survey_id: str, spec_hash: str | None = None) -> SurveyRecord:
        row = self._survey_row(survey_id)
        if row is None:
            raise NotFound(f"no survey {survey_id!r}", "survey_id")
        return self._record(row, spec_hash)

    def list_surveys(self) -> list[SurveyRecord]:
        return [self._record(row) for row in self.db["surveys"].rows_where(order_by="id")]

    def versions(self, survey_id: str) -> list[dict]:
        self.get_survey(survey_id)
        rows = self.db.execute("SELECT version, hash, added_on, responses FROM survey_versions WHERE survey_id = ? "
                               "ORDER BY version", [survey_id]).fetchall()
        return [{"version": v, "hash": h, "added_on": d, "responses": n} for v, h, d, n in rows]

    def close_survey(self, survey_id: str) -> SurveyRecord:
        record = self.get_survey(survey_id)
        if not record.closed:
            self.db["surveys"].update(survey_id, {"closed_on": _today()})
        return self.get_survey(survey_id)

    # --- tokens -------------------------------------------------------------------------------

    def issue_tokens(self, survey_id: str, count: int) -> list[str]:
        """New single-use respondent tokens; only their hashes are stored. Turns token access on."""
        if not 1 <= count <= 100_000:
            raise Invalid("count must be between 1 and 100000", "count")
        self.get_survey(survey_id)
        tokens = [secrets.token_urlsafe(16) for _ in range(count)]
        with self.transaction():
            self.db["tokens"].insert_all(({"token_hash": _digest(t), "survey_id": survey_id, "issued_on": _today(),
                                           "used_on": None} for t in tokens))
            self.db["surveys"].update(survey_id, {"access": "token"})
        return tokens

    def token_counts(self, survey_id: str) -> dict:
        issued, used = self.db.execute("SELECT COUNT(*), COUNT(used_on) FROM tokens WHERE survey_id = ?",
                                       [survey_id]).fetchone()
        return {"issued": issued, "used": used}

    # --- responses ----------------------------------------------------------------------------

    def submit(self, survey_id: str, spec_hash, idempotency_key, reports, token=None,
               answerable=None) -> tuple[dict, bool]:
        """Validate and store one response. Returns (acknowledgement, created).

        A retry with the same idempotency key returns the first acknowledgement (created False).
        Nothing is written unless everything is valid; the token is spent in the same
        transaction as the response is stored. ``answerable`` limits the required questions to
        those a client could answer (the no-JavaScript form).
        """
        if not isinstance(spec_hash, str) or not spec_hash:
            raise Invalid("spec_hash: required, the hash of the spec the answers were randomized under", "spec_hash")
        if not isinstance(idempotency_key, str) or not 8 <= len(idempotency_key) <= 128:
            raise Invalid("idempotency_key: required, a random string of 8 to 128 characters", "idempotency_key")
        if token is not None and (not isinstance(token, str) or not 1 <= len(token) <= 256):
            raise Invalid("token: must be a string", "token")
        record = self.get_survey(survey_id, spec_hash)
        clean = validate_reports(record.survey, reports, answerable)
        fingerprint = _digest(canonical({"spec_hash": spec_hash, "reports": clean}))
        with self.transaction():
            previous = self._one("SELECT id, survey_id, spec_hash, received_on, fingerprint FROM responses "
                                 "WHERE survey_id = ? AND idempotency_key = ?", [survey_id, idempotency_key])
            if previous is not None:
                if previous["fingerprint"] != fingerprint:
                    raise Invalid("idempotency_key: already used for a different response", "idempotency_key")
                return self._acknowledgement(previous), False
            if self._survey_row(survey_id)["closed_on"] is not None:
                raise Gone(f"survey {survey_id!r} is closed", "survey_id")
            received_on = _today(self.received_on_granularity())
            if record.access == "token":
                if token is None:
                    raise Invalid("token: this survey needs the respondent token from your invitation link", "token")
                spent = self.db.execute("UPDATE tokens SET used_on = ? WHERE token_hash = ? AND survey_id = ? AND used_on IS NULL",
                                        [received_on, _digest(token), survey_id])
                if spent.rowcount != 1:
                    exists = self._one("SELECT 1 FROM tokens WHERE token_hash = ? AND survey_id = ?", [_digest(token), survey_id])
                    if exists is None:
                        raise Invalid("token: not a token of this survey", "token")
                    raise Conflict("token: already used; each invitation answers once", "token")
            row = {"id": secrets.token_hex(16), "survey_id": survey_id, "spec_hash": spec_hash, "received_on": received_on,
                   "idempotency_key": idempotency_key, "fingerprint": fingerprint}
            # Plain statements on the hot path (sqlite-utils' insert inspects the table each call).
            self.db.execute("INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, fingerprint) "
                            "VALUES (:id, :survey_id, :spec_hash, :received_on, :idempotency_key, :fingerprint)", row)
            values = [(spec_hash, qid, canonical(value)) for qid, value in clean.items()]
            self.db.conn.executemany("INSERT INTO reports (response_id, spec_hash, question_id, value) VALUES (?, ?, ?, ?)",
                                     [(row["id"], *value) for value in values])
            self.db.conn.executemany("INSERT INTO report_counts (spec_hash, question_id, value, count) VALUES (?, ?, ?, 1) "
                                     "ON CONFLICT (spec_hash, question_id, value) DO UPDATE SET count = count + 1", values)
            self.db.execute("UPDATE survey_versions SET responses = responses + 1 WHERE hash = ?", [spec_hash])
        return self._acknowledgement(row), True

    @staticmethod
    def _acknowledgement(row: dict) -> dict:
        return {"id": row["id"], "survey_id": row["survey_id"], "spec_hash": row["spec_hash"], "received_on": row["received_on"]}

    def response_count(self, survey_id: str) -> int:
        return self.db.execute("SELECT COALESCE(SUM(responses), 0) FROM survey_versions WHERE survey_id = ?",
                               [survey_id]).fetchone()[0]

    def rebuild_counts(self):
        with self.transaction():
            rebuild_counts(self.db)

    def counts(self, survey_id: str, spec_hash: str | None = None, by: str | None = None) -> dict:
        """Per question, how many of each report value (for one version); optionally per level of a
        public question ``by``. Aggregated in SQL."""
        record = self.get_survey(survey_id, spec_hash)
        if by is not None:
            question = record.survey.questions.get(by)
            if question is None:
                raise Invalid(f"by: no question {by!r} in this survey", "by")
            if question.is_private:
                raise Invalid(f"by: {by!r} is randomized; group only by a public question (privacy: none)", "by")
            rows = self.db.execute(
                "SELECT g.value, r.question_id, r.value, COUNT(*) FROM reports r "
                "JOIN reports g ON g.response_id = r.response_id AND g.question_id = ? "
                "WHERE r.spec_hash = ? GROUP BY g.value, r.question_id, r.value", [by, record.hash]).fetchall()
        else:
            rows = [(None, *row) for row in self.db.execute(
                "SELECT question_id, value, count FROM report_counts WHERE spec_hash = ?", [record.hash]).fetchall()]
        table: dict = {}  # group (canonical JSON text, or None) → question → [{report, count}]
        for group, qid, value, count in rows:
            table.setdefault(group, {}).setdefault(qid, []).append({"report": json.loads(value), "count": count})
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

    def export(self, survey_id: str, spec_hash: str | None = None):
        """Yield one dict per response of a version: id, spec_hash, received_on, reports; in the
        order of the random response ids, which says nothing about when anyone answered."""
        record = self.get_survey(survey_id, spec_hash)
        cursor = self.db.execute(
            "SELECT r.id, r.received_on, p.question_id, p.value FROM responses r "
            "LEFT JOIN reports p ON p.response_id = r.id WHERE r.spec_hash = ? ORDER BY r.id", [record.hash])
        order = list(record.survey.questions)

        def ordered(row):
            row["reports"] = {qid: row["reports"][qid] for qid in order if qid in row["reports"]}
            return row

        current = None
        for response_id, received_on, qid, value in cursor:
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
        row = self.db.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()  # plain: on the submit path
        return None if row is None else row[0]

    def set_setting(self, key: str, value: str):
        self.db["settings"].upsert({"key": key, "value": value}, pk="key")

    def compact(self) -> tuple[int, int]:
        """VACUUM: every table rewritten in key order, so no page keeps rows in arrival order.
        Returns the file size before and after, in bytes."""
        def size():
            return self.db.execute("PRAGMA page_count").fetchone()[0] * self.db.execute("PRAGMA page_size").fetchone()[0]

        before = size()
        self.db.execute("VACUUM")
        if self.path != ":memory:":
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return before, size()

    def received_on_granularity(self) -> str:
        """How finely arrival dates are kept: "day" (the default), "week" or "month"."""
        return self.get_setting("received_on") or "day"

    def set_received_on_granularity(self, granularity: str):
        if granularity not in GRANULARITIES:
            raise Invalid(f"received_on: must be one of {', '.join(GRANULARITIES)}, got {granularity!r}", "received_on")
        self.set_setting("received_on", granularity)


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
    """BEGIN IMMEDIATE … COMMIT: writers queue on the lock instead of failing mid-way.

    Nested inside another transaction it is a savepoint: a failure rolls back only its own
    writes (one batch item), and the outer transaction commits the rest at once.
    """

    def __init__(self, connection):
        self.connection = connection
        self.savepoint = None

    def __enter__(self):
        if self.connection.in_transaction:
            self.savepoint = f"item_{secrets.token_hex(4)}"
            self.connection.execute(f"SAVEPOINT {self.savepoint}")
        else:
            self.connection.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.savepoint is None:
            self.connection.execute("COMMIT" if exc_type is None else "ROLLBACK")
        else:
            if exc_type is not None:
                self.connection.execute(f"ROLLBACK TO {self.savepoint}")
            self.connection.execute(f"RELEASE {self.savepoint}")
        return False
