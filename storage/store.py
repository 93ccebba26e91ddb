"""`Store`: the one facade every caller uses, one connection to one database. Its methods live in
the modules of their concern (surveys, writes, reads, accounts); this module opens the engine,
brings the schema up to date, and runs transactions."""

from __future__ import annotations

from .accounts import Accounts
from .engines import LAST_FAILURE, Transaction, describe, open_engine
from .errors import StorageError
from .reads import Reads
from .schema import MIGRATIONS, SCHEMA_VERSION, Layout
from .surveys import Surveys
from .writes import Writes


class Store(Surveys, Writes, Reads, Accounts):
    """One connection to the database (a SQLite file or a PostgreSQL URL); create one per request
    or per command, or keep one per thread on SQLite (``reusable``)."""

    def __init__(self, url, migrate: bool = True, read_only: bool = False, group_commit=None):
        """``read_only``: the reader of every command and analysis that only reads. A SQLite file
        must exist and is opened read-only (a mistyped path never creates an empty database); any
        schema from 1 on is read as it is, migrating nothing. Otherwise the schema is created or
        migrated first (unless ``migrate`` is False: a server's request, after start-up did it).
        ``group_commit``: a `GroupCommit` shared by the stores of one process's threads, which then store
        concurrent single submissions in one transaction."""
        self.url = str(url)
        self.group_commit = group_commit
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
                raise StorageError(f"{describe(self.url)}: not a deniable database ({error})", "db") from None
            if version == 0:
                self.close()
                raise StorageError(f"{describe(self.url)}: not a deniable database (no deniable schema: run "
                                   "`deniable init-db` to create one)", "db")
            if version > SCHEMA_VERSION:
                self.close()
                raise StorageError(f"{describe(self.url)}: schema version {version} was written by a newer deniable, "
                                   f"which this one (schema {SCHEMA_VERSION}) cannot read: upgrade deniable", "db")
            self.layout = Layout.of(version)
        else:
            if migrate:
                self.migrate()
            self.layout = Layout.of(SCHEMA_VERSION)

    @property
    def db(self) -> "sqlite_utils.Database":  # noqa: F821 - imported by the engine
        """The sqlite-utils database (SQLite only; tests and benchmarks poke at it)."""
        return self.engine.db

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

    def _one(self, sql: str, params) -> dict | None:
        cursor = self.engine.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else dict(zip((c[0] for c in cursor.description), row))

    def healthy(self) -> dict:
        """For load balancers: the engine answers, the schema is the one this code expects, and no write
        failed on a full disk or a read-only database in the last minute (in this process)."""
        import time

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
