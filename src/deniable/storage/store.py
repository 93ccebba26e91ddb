"""`Store`: the one facade every caller uses, one connection to one database. It is made of parts, one per
concern, each in its module and reachable by name (``store.surveys``, ``store.writes``, ``store.reads``,
``store.accounts``, `part.Part`); the facade's methods forward to them, so callers keep one object. This module opens
the engine, brings the schema up to date, and runs transactions."""

from __future__ import annotations

import functools
import time

from .accounts import Accounts
from .contacts import Contacts
from .credentials import Credentials
from .engines import describe_database, open_engine
from .errors import LAST_FAILURE, StorageError
from .reads import Reads
from .schema import MIGRATIONS, SCHEMA_VERSION, Layout
from .surveys import Surveys
from .transactions import Snapshot, Transaction
from .writes import Writes


def _forward(part: str, method):
    """A facade method: ``method`` of the part named ``part``, with its name, signature and docstring."""
    name = method.__name__

    @functools.wraps(method)
    def forwarded(self, *args, **kwargs):
        return getattr(getattr(self, part), name)(*args, **kwargs)
    return forwarded


class Store:
    """One connection to the database (a SQLite file or a PostgreSQL URL); create one per request
    or per command, or keep one per thread on SQLite (``reusable``)."""

    surveys: Surveys
    writes: Writes
    reads: Reads
    accounts: Accounts

    def __init__(self, url, migrate: bool = True, read_only: bool = False, group_commit=None):
        """``read_only``: the reader of every command and analysis that only reads. A SQLite file
        must exist and is opened read-only (a mistyped path never creates an empty database); any
        schema from 1 on is read as it is, migrating nothing. Otherwise the schema is created or
        migrated first (unless ``migrate`` is False: a server's request, after start-up did it).
        ``group_commit``: a `GroupCommit` shared by the stores of one process's threads, which then store
        concurrent single submissions in one transaction."""
        self.url = str(url)
        self.group_commit = group_commit
        self.surveys, self.writes, self.reads, self.accounts = Surveys(self), Writes(self), Reads(self), Accounts(self)
        self.contacts = Contacts(self)
        self.credentials = Credentials(self)
        self.engine = open_engine(self.url, read_only)
        self.read_only = read_only
        if read_only:
            try:
                version = self.schema_version()
            except StorageError:
                self.close()
                raise
            except Exception as error:  # sqlite3.DatabaseError, psycopg.Error: nothing here is a deniable schema
                self.close()
                raise StorageError(f"{describe_database(self.url)}: not a deniable database ({error})", "db") from None
            if version == 0:
                self.close()
                raise StorageError(f"{describe_database(self.url)}: not a deniable database (no deniable schema: run "
                                   "`deniable init-db` to create one)", "db")
            if version > SCHEMA_VERSION:
                self.close()
                raise StorageError(f"{describe_database(self.url)}: schema version {version} was written by a newer deniable, "
                                   f"which this one (schema {SCHEMA_VERSION}) cannot read: upgrade deniable", "db")
            self.layout = Layout.of(version)
        else:
            if migrate:
                self.migrate()
            self.layout = Layout.of(SCHEMA_VERSION)

    @property
    def connection(self) -> "sqlite3.Connection":  # noqa: F821 - opened by the engine
        """The SQLite connection (SQLite only; tests and benchmarks poke at it below the store)."""
        return self.engine.connection

    def execute(self, sql: str, params=()):
        """Run one statement written with ``?`` placeholders, on either engine."""
        return self.engine.execute(sql, params)

    @property
    def reusable(self) -> bool:
        """Whether a thread may keep this store for its next request: a SQLite connection may, unless it turned out
        read-only (opened while the file could not be written); PostgreSQL's go back to the pool."""
        return self.engine.dialect == "sqlite" and not self.engine.reopen

    def close(self):
        self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

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
        return Transaction(self.engine)

    def snapshot(self):
        """``with store.snapshot():`` the reads inside see one moment of the database (`transactions.Snapshot`)."""
        return Snapshot(self.engine)

    def one(self, sql: str, params) -> dict | None:
        """The first row of one statement as a dict, or None."""
        cursor = self.engine.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else dict(zip((c[0] for c in cursor.description), row))

    def healthy(self) -> dict:
        """For load balancers: the engine answers, the schema is the one this code expects, and no write
        failed on a full disk or a read-only database in the last minute (in this process)."""
        version = self.schema_version()
        health = {"database": self.engine.dialect, "schema_version": version, "expected_schema_version": SCHEMA_VERSION,
                  "ok": version == SCHEMA_VERSION}
        if LAST_FAILURE and time.monotonic() - LAST_FAILURE["at"] < 60:
            health.update(ok=False, error=LAST_FAILURE["message"])
        return health

    def compact(self) -> tuple[int, int]:
        """Rewrite the tables in key order (SQLite: VACUUM; PostgreSQL: CLUSTER and VACUUM), so
        no page keeps rows in arrival order. Returns the database size before and after, in bytes."""
        return self.engine.compact()

    # The facade: what callers use, each forwarded to the part that owns it.
    add_survey = _forward("surveys", Surveys.add_survey)
    get_survey = _forward("surveys", Surveys.get_survey)
    find_version = _forward("surveys", Surveys.find_version)
    list_surveys = _forward("surveys", Surveys.list_surveys)
    versions = _forward("surveys", Surveys.versions)
    responses_of = _forward("surveys", Surveys.responses_of)
    reopen_survey = _forward("surveys", Surveys.reopen_survey)
    close_survey = _forward("surveys", Surveys.close_survey)
    require_repeated = _forward("surveys", Surveys.require_repeated)
    open_wave = _forward("surveys", Surveys.open_wave)
    close_wave = _forward("surveys", Surveys.close_wave)
    open_wave_label = _forward("surveys", Surveys.open_wave_label)
    waves = _forward("surveys", Surveys.waves)
    check_tokens = _forward("surveys", Surveys.check_tokens)
    issue_tokens = _forward("surveys", Surveys.issue_tokens)
    frame_summary = _forward("surveys", Surveys.frame_summary)
    frame_invitations = _forward("surveys", Surveys.frame_invitations)
    token_status = _forward("surveys", Surveys.token_status)
    token_counts = _forward("surveys", Surveys.token_counts)
    quota_counts = _forward("surveys", Surveys.quota_counts)

    add_contacts = _forward("contacts", Contacts.add_contacts)
    check_contacts = _forward("contacts", Contacts.check_contacts)
    claim_contact = _forward("contacts", Contacts.claim_contact)
    due_contacts = _forward("contacts", Contacts.due_contacts)
    waiting_for_reminders = _forward("contacts", Contacts.waiting_for_reminders)
    confirm_sent = _forward("contacts", Contacts.confirm_sent)
    release_claim = _forward("contacts", Contacts.release_claim)
    release_uncertain = _forward("contacts", Contacts.release_uncertain)
    mark_bounced = _forward("contacts", Contacts.mark_bounced)
    opt_out = _forward("contacts", Contacts.opt_out)
    contact_summary = _forward("contacts", Contacts.contact_summary)
    purge_contacts = _forward("contacts", Contacts.purge_contacts)
    credential_key = _forward("credentials", Credentials.credential_key)
    credential_key_for_token = _forward("credentials", Credentials.credential_key_for_token)
    issue_credential = _forward("credentials", Credentials.issue_credential)
    forget_credential = _forward("credentials", Credentials.forget_credential)
    credentials_issued = _forward("credentials", Credentials.credentials_issued)
    get_setting = _forward("surveys", Surveys.get_setting)
    set_setting = _forward("surveys", Surveys.set_setting)
    received_on_granularity = _forward("surveys", Surveys.received_on_granularity)
    set_received_on_granularity = _forward("surveys", Surveys.set_received_on_granularity)

    submit = _forward("writes", Writes.submit)
    submit_many = _forward("writes", Writes.submit_many)
    rebuild_counts = _forward("writes", Writes.rebuild_counts)

    response_count = _forward("reads", Reads.response_count)
    quality_flags = _forward("reads", Reads.quality_flags)
    flagged_responses = _forward("reads", Reads.flagged_responses)
    counts = _forward("reads", Reads.counts)
    responses_per_day = _forward("reads", Reads.responses_per_day)
    report_rows = _forward("reads", Reads.report_rows)
    response_ids = _forward("reads", Reads.response_ids)
    export = _forward("reads", Reads.export)
    response_waves = _forward("reads", Reads.response_waves)
    frame_rows = _forward("reads", Reads.frame_rows)
    released_frames = _forward("reads", Reads.released_frames)
    export_all_versions = _forward("reads", Reads.export_all_versions)

    add_admin = _forward("accounts", Accounts.add_admin)
    admins = _forward("accounts", Accounts.admins)
    check_password = _forward("accounts", Accounts.check_password)
    start_session = _forward("accounts", Accounts.start_session)
    session = _forward("accounts", Accounts.session)
    end_session = _forward("accounts", Accounts.end_session)
    create_api_token = _forward("accounts", Accounts.create_api_token)
    api_tokens = _forward("accounts", Accounts.api_tokens)
    revoke_api_token = _forward("accounts", Accounts.revoke_api_token)
    api_token_caller = _forward("accounts", Accounts.api_token_caller)
    audit = _forward("accounts", Accounts.audit)
    refused_sign_in = _forward("accounts", Accounts.refused_sign_in)
    audit_log = _forward("accounts", Accounts.audit_log)
