"""The schema: its numbered migrations (the same on both engines, each atomic), the tables a copy
fills, and how each older schema keeps the figures a reader needs (read-only opens migrate nothing).

What is kept, and nothing more: survey specs (every version, by hash), respondent tokens (hashed, with
the date issued; whether each has answered is a bit of a bitmap row, `tokens.py`), and per response a
random id, the survey id, the spec hash, the date received, the wave of a repeated survey, its
invitation's frame row, its section times in tens of seconds when the spec asks for them, and the
randomized reports. No time of day, no address, no user agent, no link from a token to a response,
not even in the rows' metadata. Reports also live in a long table (one row per response and question)
so counts are a single GROUP BY where the data sits. Beside them, never joined to them: the quota counts
(of public answers) and, for e-mail invitations, the contact list (`contacts.py`): each address with its
own token as given (the link a reminder sends again), until `purge_contacts` erases them after fieldwork.
"""

from __future__ import annotations

from dataclasses import dataclass

from .tokens import SLOTS_PER_ROW, with_spent

SCHEMA_VERSION = 16


def migrate_to_1(engine):
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


def migrate_to_2(engine):
    """Running totals, kept in the same transaction as each response: counting a version's
    reports no longer scans them (10^7 stored reports took 49 s to count by GROUP BY)."""
    engine.execute("CREATE TABLE report_counts (spec_hash TEXT, question_id TEXT, value TEXT, count BIGINT, "
                   "PRIMARY KEY (spec_hash, question_id, value))")
    engine.execute("ALTER TABLE survey_versions ADD COLUMN responses BIGINT NOT NULL DEFAULT 0")
    engine.execute("INSERT INTO report_counts (spec_hash, question_id, value, count) "
                   "SELECT spec_hash, question_id, value, COUNT(*) FROM reports GROUP BY spec_hash, question_id, value")
    engine.execute("UPDATE survey_versions SET responses = (SELECT COUNT(*) FROM responses r WHERE r.spec_hash = survey_versions.hash)")


def migrate_to_3(engine):
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


def migrate_to_4(engine):
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


def migrate_to_5(engine):
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


def migrate_to_6(engine):
    """Waves of a repeated survey (a panel): each response records the wave open when it arrived (its label,
    nothing that links one person's waves); one wave is open at a time."""
    tail = engine.without_rowid()
    engine.execute("CREATE TABLE waves (survey_id TEXT, label TEXT, position INTEGER NOT NULL, opened_on TEXT, "
                   f"closed_on TEXT, PRIMARY KEY (survey_id, label)){tail}")
    engine.execute("ALTER TABLE responses ADD COLUMN wave TEXT")


def migrate_to_7(engine):
    """Responses and reports keyed by version first: (spec hash, random response id[, question]), and their
    indexes on the spec hash and on (spec hash, question, value) dropped. Those indexes put a response's rows on
    pages of their own: at 20,000 stored responses a single response's commit wrote 23 pages of SQLite's log, 13
    of them index pages; keyed by version, a response's reports sit together and it writes about 11. Every read of them
    is by version (or, for responses, by survey and idempotency key, which keeps its unique index) and searches
    one range of the key; inside a version the order is still the random id's, which says nothing of arrival."""
    if engine.dialect != "sqlite":
        for table, key in (("responses", "spec_hash, id"), ("reports", "spec_hash, response_id, question_id")):
            engine.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey")
            engine.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({key})")
        engine.execute("DROP INDEX idx_responses_spec_hash")
        engine.execute("DROP INDEX idx_reports_spec_hash_question_id_value")
        return
    engine.execute("CREATE TABLE responses_by_version (id TEXT, survey_id TEXT, spec_hash TEXT, received_on TEXT, "
                   "idempotency_key TEXT, fingerprint TEXT, wave TEXT, PRIMARY KEY (spec_hash, id)) WITHOUT ROWID")
    engine.execute("INSERT INTO responses_by_version SELECT id, survey_id, spec_hash, received_on, idempotency_key, "
                   "fingerprint, wave FROM responses ORDER BY spec_hash, id")
    engine.execute("CREATE TABLE reports_by_version (response_id TEXT, spec_hash TEXT, question_id TEXT, value TEXT, "
                   "PRIMARY KEY (spec_hash, response_id, question_id)) WITHOUT ROWID")
    engine.execute("INSERT INTO reports_by_version SELECT response_id, spec_hash, question_id, value FROM reports "
                   "ORDER BY spec_hash, response_id, question_id")
    for table in ("responses", "reports"):
        engine.execute(f"DROP TABLE {table}")
        engine.execute(f"ALTER TABLE {table}_by_version RENAME TO {table}")
    engine.execute("CREATE UNIQUE INDEX idx_responses_survey_id_idempotency_key ON responses (survey_id, idempotency_key)")


def migrate_to_8(engine):
    """A token's use is a bit of a bitmap row (``token_use``), no longer a date in the token's own row: on PostgreSQL
    that update shared its transaction id (``xmin``) with the response it stored, and so joined the two. The tokens
    table is written anew (one slot per token, in token-hash order, which is random), so no row keeps the ``xmin``
    or the place that its use gave it; the old table's file is removed when the migration commits."""
    tail = engine.without_rowid()
    engine.execute(f"CREATE TABLE tokens_by_slot (token_hash TEXT PRIMARY KEY, survey_id TEXT, issued_on TEXT, "
                   f"slot INTEGER NOT NULL){tail}")
    engine.execute(f"CREATE TABLE token_use (survey_id TEXT, block INTEGER, used TEXT NOT NULL, "
                   f"PRIMARY KEY (survey_id, block)){tail}")
    slots: dict[str, int] = {}
    rows, bitmaps = [], {}
    for token_hash, survey_id, issued_on, used_on in engine.execute(
            "SELECT token_hash, survey_id, issued_on, used_on FROM tokens ORDER BY token_hash").fetchall():
        slot = slots[survey_id] = slots.get(survey_id, -1) + 1
        rows.append((token_hash, survey_id, issued_on, slot))
        key = (survey_id, slot // SLOTS_PER_ROW)
        bitmap = bitmaps.setdefault(key, "00" * (SLOTS_PER_ROW // 8))
        if used_on is not None:
            bitmaps[key] = with_spent(bitmap, slot)
    if rows:
        engine.executemany("INSERT INTO tokens_by_slot (token_hash, survey_id, issued_on, slot) VALUES (?, ?, ?, ?)", rows)
        engine.executemany("INSERT INTO token_use (survey_id, block, used) VALUES (?, ?, ?)",
                           [(*key, bitmap) for key, bitmap in sorted(bitmaps.items())])
    engine.execute("DROP TABLE tokens")
    engine.execute("ALTER TABLE tokens_by_slot RENAME TO tokens")
    if engine.dialect != "sqlite":  # the primary key's index keeps the name it was created with
        engine.execute("ALTER INDEX tokens_by_slot_pkey RENAME TO tokens_pkey")
    engine.execute("CREATE UNIQUE INDEX idx_tokens_survey_id_slot ON tokens (survey_id, slot)")


def migrate_to_9(engine):
    """One open wave per survey, held by the database itself (a partial unique index), not only by the code that opens
    them: two concurrent opens on PostgreSQL had left two open. Waves such a race left open are closed first, all but
    the last opened."""
    engine.execute("UPDATE waves SET closed_on = opened_on WHERE closed_on IS NULL AND position < "
                   "(SELECT MAX(w.position) FROM waves w WHERE w.survey_id = waves.survey_id AND w.closed_on IS NULL)")
    engine.execute("CREATE UNIQUE INDEX idx_waves_one_open ON waves (survey_id) WHERE closed_on IS NULL")


def migrate_to_10(engine):
    """The sampling frame carried by invitations (`frames.py`): each distinct frame row once (a cell), a token's cell,
    and the cell of the response it sent."""
    engine.execute(f"CREATE TABLE frame_cells (survey_id TEXT, cell INTEGER, frame TEXT NOT NULL, "
                   f"PRIMARY KEY (survey_id, cell)){engine.without_rowid()}")
    engine.execute("CREATE UNIQUE INDEX idx_frame_cells_survey_id_frame ON frame_cells (survey_id, frame)")
    engine.execute("ALTER TABLE tokens ADD COLUMN frame_cell INTEGER")
    engine.execute("ALTER TABLE responses ADD COLUMN frame_cell INTEGER")


def migrate_to_11(engine):
    """API tokens with scopes (`accounts.SCOPES`). Tokens made before had every power, and keep it (their scripts go on
    working); new ones get what they are given, read-only by default."""
    engine.execute("ALTER TABLE api_tokens ADD COLUMN scopes TEXT NOT NULL DEFAULT 'read,export,write,manage'")


def migrate_to_12(engine):
    """Quota counts (`quotas.py`): per survey, quota and cell of public answers, the responses stored in it."""
    engine.execute("CREATE TABLE quota_counts (survey_id TEXT, quota TEXT, cell TEXT, count BIGINT NOT NULL, "
                   f"PRIMARY KEY (survey_id, quota, cell)){engine.without_rowid()}")


def migrate_to_13(engine):
    """The contact list of e-mail invitations (`contacts.py`): its own table, never joined to responses."""
    engine.execute("CREATE TABLE contacts (survey_id TEXT, id TEXT, address TEXT NOT NULL, language TEXT, "
                   "token TEXT NOT NULL, added_on TEXT, invited_on TEXT, reminders INTEGER NOT NULL DEFAULT 0, "
                   "last_sent_on TEXT, claim TEXT, bounced_on TEXT, opted_out_on TEXT, problem TEXT, "
                   f"PRIMARY KEY (survey_id, id)){engine.without_rowid()}")
    engine.execute("CREATE UNIQUE INDEX idx_contacts_survey_id_address ON contacts (survey_id, address)")
    engine.execute("CREATE UNIQUE INDEX idx_contacts_survey_id_token ON contacts (survey_id, token)")


def migrate_to_14(engine):
    """A response's coarse paradata (`client.quality`): the time spent on each section in tens of seconds, and their
    sum, for a survey whose spec asks for them; never per randomized question, never a log of changes."""
    engine.execute("ALTER TABLE responses ADD COLUMN seconds INTEGER")
    engine.execute("ALTER TABLE responses ADD COLUMN paradata TEXT")


def migrate_to_15(engine):
    """Responses by survey and date received, an index that holds both: the dashboard's responses-per-day chart reads
    it alone (10⁶ responses on SQLite: 0.1 s a view, not the 3.7 s of reading every response's row)."""
    engine.execute("CREATE INDEX idx_responses_survey_id_received_on ON responses (survey_id, received_on)")


def migrate_to_16(engine):
    """Blind-signed credentials (`credentials.py`): the keys, the invitations that received one, the serials spent.
    Three tables that share no column a response carries but the key's frame cell, which the response carries anyway."""
    engine.execute("CREATE TABLE credential_keys (id TEXT PRIMARY KEY, survey_id TEXT NOT NULL, spec_hash TEXT NOT NULL, "
                   "frame_cell INTEGER, wave TEXT, modulus TEXT NOT NULL, exponent INTEGER NOT NULL, "
                   "private_key TEXT NOT NULL, created_on TEXT)")
    engine.execute("CREATE UNIQUE INDEX idx_credential_keys_cell ON credential_keys "
                   "(survey_id, spec_hash, COALESCE(frame_cell, -1), COALESCE(wave, ''))")
    engine.execute("CREATE TABLE credential_issues (survey_id TEXT, slot INTEGER, blinded TEXT NOT NULL, "
                   f"PRIMARY KEY (survey_id, slot)){engine.without_rowid()}")
    engine.execute(f"CREATE TABLE spent_serials (survey_id TEXT, serial TEXT, PRIMARY KEY (survey_id, serial))"
                   f"{engine.without_rowid()}")


MIGRATIONS = {1: migrate_to_1, 2: migrate_to_2, 3: migrate_to_3, 4: migrate_to_4, 5: migrate_to_5, 6: migrate_to_6,
              7: migrate_to_7, 8: migrate_to_8, 9: migrate_to_9,
              10: migrate_to_10, 11: migrate_to_11, 12: migrate_to_12,
              13: migrate_to_13, 14: migrate_to_14, 15: migrate_to_15,
              16: migrate_to_16}


def rebuild_counts(engine):
    """Recompute the running totals from the stored rows (bulk loads that bypass `submit`)."""
    engine.execute("DELETE FROM report_counts")
    engine.execute("INSERT INTO report_counts (spec_hash, question_id, value, shard, count) "
                   "SELECT spec_hash, question_id, value, 0, COUNT(*) FROM reports GROUP BY spec_hash, question_id, value")
    engine.execute("DELETE FROM version_counts")
    engine.execute("INSERT INTO version_counts (spec_hash, shard, responses) "
                   "SELECT spec_hash, 0, COUNT(*) FROM responses GROUP BY spec_hash")




#: Every table of the current schema and its columns, in the order a copy fills them.
TABLES = {
    "settings": ("key", "value"),
    "surveys": ("id", "current_hash", "access", "closed_on", "added_on"),
    "survey_versions": ("hash", "survey_id", "version", "spec", "added_on"),
    "tokens": ("token_hash", "survey_id", "issued_on", "slot", "frame_cell"),
    "token_use": ("survey_id", "block", "used"),
    "responses": ("id", "survey_id", "spec_hash", "received_on", "idempotency_key", "fingerprint", "wave", "frame_cell",
                  "seconds", "paradata"),
    "frame_cells": ("survey_id", "cell", "frame"),
    "reports": ("response_id", "spec_hash", "question_id", "value"),
    "report_counts": ("spec_hash", "question_id", "value", "shard", "count"),
    "version_counts": ("spec_hash", "shard", "responses"),
    "admins": ("name", "password_hash", "added_on", "failed_sign_ins", "locked_until"),
    "api_tokens": ("id", "name", "admin", "token_hash", "created_on", "last_used_on", "revoked_on", "scopes"),
    "audit_log": ("id", "at", "actor", "action", "survey_id", "detail"),
    "waves": ("survey_id", "label", "position", "opened_on", "closed_on"),
    "quota_counts": ("survey_id", "quota", "cell", "count"),
    "contacts": ("survey_id", "id", "address", "language", "token", "added_on", "invited_on", "reminders",
                 "last_sent_on", "claim", "bounced_on", "opted_out_on", "problem"),
    "credential_keys": ("id", "survey_id", "spec_hash", "frame_cell", "wave", "modulus", "exponent", "private_key",
                        "created_on"),
    "credential_issues": ("survey_id", "slot", "blinded"),
    "spent_serials": ("survey_id", "serial"),
}
#: Each table's key: a copy reads rows in this order.
KEYS = {"settings": "key", "surveys": "id", "survey_versions": "hash", "tokens": "token_hash",
        "token_use": "survey_id, block", "responses": "spec_hash, id",
        "reports": "spec_hash, response_id, question_id", "report_counts": "spec_hash, question_id, value, shard",
        "version_counts": "spec_hash, shard", "admins": "name", "api_tokens": "id", "audit_log": "at, id",
        "waves": "survey_id, label", "frame_cells": "survey_id, cell",
        "quota_counts": "survey_id, quota, cell", "contacts": "survey_id, id", "credential_keys": "id",
        "credential_issues": "survey_id, slot", "spent_serials": "survey_id, serial"}


# --- reading older schemas -------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """Where a schema keeps the figures that changed place over time. A read-only open reads every
    schema from 1 on as it is: only a version's number of responses and the running totals of its
    reports moved (schema 2 added them, schema 4 spread them over shards, summed on read)."""

    schema: int
    responses_of_version: str  # one ``?``, the spec hash → its number of responses
    report_totals: str  # one ``?``, the spec hash → (question id, value, count)
    versions: str  # one ``?``, the survey id → (version, hash, added_on, responses)

    @property
    def has_token_use(self) -> bool:
        """Schema 8 keeps a token's use in a bitmap row; before, the token's own row held the date it was used."""
        return self.schema >= 8

    @property
    def has_frames(self) -> bool:
        """Schema 10 keeps the invitations' frame; an older database's responses carry none."""
        return self.schema >= 10

    @property
    def has_paradata(self) -> bool:
        """Schema 14 keeps a response's section times; an older database's responses carry none."""
        return self.schema >= 14

    @property
    def has_quotas(self) -> bool:
        """Schema 12 counts quotas; an older database kept open as it is counts none."""
        return self.schema >= 12

    @property
    def has_credentials(self) -> bool:
        """Schema 16 keeps blind-signed credentials; an older database's tokens have none."""
        return self.schema >= 16

    @property
    def has_waves(self) -> bool:
        """Schema 6 added waves; an older database's responses belong to none."""
        return self.schema >= 6

    @classmethod
    def of(cls, schema: int) -> "Layout":
        if schema >= 4:
            return cls(schema,
                       "SELECT COALESCE(SUM(responses), 0) FROM version_counts WHERE spec_hash = ?",
                       "SELECT question_id, value, SUM(count) FROM report_counts WHERE spec_hash = ? "
                       "GROUP BY question_id, value",
                       "SELECT v.version, v.hash, v.added_on, COALESCE(SUM(c.responses), 0) FROM survey_versions v "
                       "LEFT JOIN version_counts c ON c.spec_hash = v.hash WHERE v.survey_id = ? "
                       "GROUP BY v.version, v.hash, v.added_on ORDER BY v.version")
        if schema >= 2:
            return cls(schema,
                       "SELECT COALESCE(MAX(responses), 0) FROM survey_versions WHERE hash = ?",
                       "SELECT question_id, value, SUM(count) FROM report_counts WHERE spec_hash = ? "
                       "GROUP BY question_id, value",
                       "SELECT version, hash, added_on, responses FROM survey_versions WHERE survey_id = ? ORDER BY version")
        return cls(schema,
                   "SELECT COUNT(*) FROM responses WHERE spec_hash = ?",
                   "SELECT question_id, value, COUNT(*) FROM reports WHERE spec_hash = ? GROUP BY question_id, value",
                   "SELECT v.version, v.hash, v.added_on, (SELECT COUNT(*) FROM responses r WHERE r.spec_hash = v.hash) "
                   "FROM survey_versions v WHERE v.survey_id = ? ORDER BY v.version")
