"""The two database engines behind every store, chosen by the database URL: SQLite (a path or
``sqlite:///…``, through the standard library's sqlite3; the embedded default), here, and PostgreSQL (``postgresql://…``, psycopg 3
with a psycopg_pool pool per process), in `postgresql`. Every query is written once, with ``?`` placeholders; the
PostgreSQL engine numbers them ``$1, $2, …`` (raw cursors). Transactions and their retries: `transactions`.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import urllib.parse
from typing import Protocol, runtime_checkable

try:
    import fcntl
except ImportError:  # Windows: SQLite's own busy wait alone
    fcntl = None


from . import link_window
from .errors import NotFound, Unavailable, refusal
from .postgresql import PostgresEngine


def is_postgres(url: str) -> bool:
    return str(url).startswith(("postgresql://", "postgres://"))


def sqlite_path(url: str) -> str:
    """The file of a SQLite URL (``sqlite:///relative.db``, ``sqlite:////abs.db``) or plain path."""
    url = str(url)
    return url[len("sqlite:///"):] if url.startswith("sqlite:///") else url


def describe_database(url: str) -> str:
    """The database URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", str(url))


def on_read_only_file_system(path: str) -> bool:
    """Whether the folder of ``path`` sits on a file system mounted read-only (a read-only mount, media)."""
    try:
        return bool(os.statvfs(os.path.dirname(os.path.abspath(path)) or ".").f_flag & os.ST_RDONLY)
    except OSError:  # no such folder: the open below says so in its own words
        return False


#: `SQLiteEngine._writer_lock` when the lock file could not be created.
NO_WRITER_LOCK = -1


@runtime_checkable
class Engine(Protocol):
    """What `Store` and its parts ask of a database engine; `SQLiteEngine` and `PostgresEngine` both provide it
    (a test checks each against this list). Statements are written once, with ``?`` placeholders and the SQL both
    engines share; what differs (placeholders, locking clauses, the schema version's home) is the engine's."""

    dialect: str
    #: The statement that opens a write transaction ("BEGIN IMMEDIATE" on SQLite: writers queue at the start).
    begin: str
    #: What opens a read transaction that sees one moment (`transactions.Snapshot`).
    begin_reading: str
    #: Rows per counter value: concurrent writers spread their increments over them; reads sum them.
    counter_shards: int
    #: What the current transaction has read once (the write path's survey row and settings).
    memo: dict

    def begin_transaction(self) -> None: ...
    def end_transaction(self, commit: bool) -> None: ...
    def execute(self, sql: str, params=()): ...
    def executemany(self, sql: str, rows) -> None: ...
    def stream(self, sql: str, params=()): ...
    def pipeline(self): ...
    @property
    def in_transaction(self) -> bool: ...
    def rollback(self) -> None: ...
    def schema_version(self) -> int: ...
    def set_schema_version(self, version: int) -> None: ...
    def lock_for_migration(self) -> None: ...
    def table_names(self) -> list[str]: ...
    def without_rowid(self) -> str: ...
    def lock_rows(self, table: str, shared: bool = False) -> str: ...
    def compact(self) -> tuple[int, int]: ...
    def scrub(self, table: str) -> str: ...
    def close(self) -> None: ...


class SQLiteEngine:
    """One SQLite connection (the standard library's sqlite3), WAL, ``synchronous=FULL``; writers queue on
    ``BEGIN IMMEDIATE``. Schema version in ``PRAGMA user_version``."""

    dialect = "sqlite"
    begin = "BEGIN IMMEDIATE"
    #: A read transaction (`transactions.Snapshot`): deferred, so it takes no lock until it reads.
    begin_reading = "BEGIN DEFERRED"
    #: One writer at a time: counter shards would only cost reads.
    counter_shards = 1

    def __init__(self, url: str, read_only: bool = False):
        self.path = sqlite_path(url)
        self.memo = {}  # what the current transaction read once (Store._in_transaction)
        frozen = self.path != ":memory:" and on_read_only_file_system(self.path)
        if read_only:
            if self.path == ":memory:" or not os.path.isfile(self.path):
                raise NotFound(f"{self.path}: no such database file", "db")
            # SQLite reads a logged (WAL) database through a shared-memory file it creates beside it. Where it cannot
            # (a read-only file system; a folder this user cannot write, the log not there), nothing is in a log and
            # no writer is connected (a connected writer keeps its log): the file alone is the database, read as the
            # immutable file it is for this command.
            folder = os.path.dirname(os.path.abspath(self.path))
            unlogged = not os.path.exists(f"{self.path}-wal") and not os.access(folder, os.W_OK)
            target = f"file:{urllib.parse.quote(os.path.abspath(self.path))}?mode=ro" + (
                "&immutable=1" if frozen or unlogged else "")
            connection = sqlite3.connect(target, uri=True, timeout=30, isolation_level=None, check_same_thread=False)
        elif frozen:
            raise Unavailable(f"{self.path}: the database is on a read-only file system: serving and every command "
                              "that writes need it writable (commands that only read, such as estimate and export, "
                              "read it as it is)", "db")
        else:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        self.connection = connection
        self._writer_lock = None  # the open lock file, once this connection has written (`begin_transaction`)
        # Not to be kept when it is (or turns out) read-only: opened while the file could not be written, SQLite keeps
        # the connection read-only for its life.
        self.reopen = not read_only and self.path != ":memory:" and not os.access(self.path, os.W_OK)
        if self.path != ":memory:" and not read_only:
            try:
                self.connection.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError as error:
                connection.close()
                refused = refusal(error)
                if refused is None:
                    raise
                raise Unavailable(f"{self.path}: {refused.message.split(':')[0]} (the file or its folder cannot be "
                                  "written)", "db") from None
        try:
            # FULL: a commit reaches the disk before the client hears "201" (invariant 6).
            self.connection.execute("PRAGMA synchronous=FULL")
            # Rows are keyed by random ids (nothing stored keeps arrival order), so each insert dirties a page of its
            # own: a larger page cache and checkpoints every 40 MiB of log instead of 4 rewrite hot pages less often
            # (batch ingest +20% measured; durability unchanged, the log is synced at each commit).
            self.connection.execute("PRAGMA cache_size=-32768")
            self.connection.execute("PRAGMA wal_autocheckpoint=10000")
            self.connection.execute("PRAGMA foreign_keys=ON")
            # Deleted content (a purged contact list, a token bitmap's old page) is overwritten with zeros, not left in
            # free space for a copy of the file to read; the platform's SQLite build may not do it by default.
            self.connection.execute("PRAGMA secure_delete=ON")
            self.connection.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the file is read now, not mid-request
        except sqlite3.DatabaseError as error:
            connection.close()
            refused = refusal(error)
            if "not a database" in str(error):
                raise Unavailable(f"{self.path}: cannot open the database: the file is not a SQLite database", "db") from None
            reason = refused.message.split(":")[0] if refused else str(error)
            raise Unavailable(f"{self.path}: cannot open the database: {reason} (check the file, its log files "
                              f"{os.path.basename(self.path)}-wal and -shm, and that this user may read them and write "
                              "their folder)", "db") from None

    def begin_transaction(self):
        """BEGIN IMMEDIATE, after taking ``<database>-writer`` with flock. SQLite's own wait for a busy
        database polls with growing sleeps (up to 100 ms each): a process whose writers all queue behind one
        sleeping thread (a group commit's) stalls while the other writes. flock queues writers in the kernel
        and wakes the next at once; the busy timeout still covers writers outside deniable."""
        if self.path != ":memory:" and fcntl is not None and self._writer_lock != NO_WRITER_LOCK:
            if self._writer_lock is None:
                try:
                    self._writer_lock = os.open(f"{self.path}-writer", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                except OSError:  # a folder we cannot create in: SQLite's own wait alone, and its own error if any
                    self._writer_lock = NO_WRITER_LOCK
            if self._writer_lock != NO_WRITER_LOCK:
                fcntl.flock(self._writer_lock, fcntl.LOCK_EX)
        try:
            self.execute(self.begin)
        except BaseException:
            self._release_writer_lock()
            raise

    def end_transaction(self, commit: bool):
        try:
            # SQLite rolls a transaction back itself on some errors (a full disk): a ROLLBACK then fails, and its
            # error would hide the refusal that ended the transaction.
            if commit or self.connection.in_transaction:
                self.execute("COMMIT" if commit else "ROLLBACK")
            if commit and self.path != ":memory:":
                link_window.after_commit(self.connection, self.path)  # the log keeps no commit past its window
        finally:
            self._release_writer_lock()

    def _release_writer_lock(self):
        if self._writer_lock not in (None, NO_WRITER_LOCK):
            fcntl.flock(self._writer_lock, fcntl.LOCK_UN)

    def execute(self, sql: str, params=()):
        try:
            return self.connection.execute(sql, params)
        except sqlite3.OperationalError as error:
            raise self._refused(error) from None

    def executemany(self, sql: str, rows):
        try:
            return self.connection.executemany(sql, rows)
        except sqlite3.OperationalError as error:
            raise self._refused(error) from None

    def _refused(self, error):
        refused = refusal(error)
        if isinstance(refused, Unavailable):
            # A connection opened while the file could not be written stays read-only for its life: once the file
            # is writable again, only a new connection writes. Its owner drops this one (`Store.reusable`).
            self.reopen = True
        return refused or error

    def stream(self, sql: str, params=()):
        yield from self.connection.execute(sql, params)

    def pipeline(self):
        return contextlib.nullcontext()

    @property
    def in_transaction(self) -> bool:
        return self.connection.in_transaction

    def rollback(self):
        if self.connection.in_transaction:
            self.connection.rollback()

    def schema_version(self) -> int:
        return self.execute("PRAGMA user_version").fetchone()[0]

    def set_schema_version(self, version: int):
        self.execute(f"PRAGMA user_version={int(version)}")

    def lock_for_migration(self):
        pass  # BEGIN IMMEDIATE already holds the write lock

    def table_names(self) -> list[str]:
        return [name for name, in self.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]

    def without_rowid(self) -> str:
        return " WITHOUT ROWID"

    def lock_rows(self, table: str, shared: bool = False) -> str:
        return ""  # BEGIN IMMEDIATE: one writer at a time already

    def compact(self) -> tuple[int, int]:
        def size():
            return self.execute("PRAGMA page_count").fetchone()[0] * self.execute("PRAGMA page_size").fetchone()[0]

        before = size()
        self.execute("VACUUM")
        if self.path != ":memory:":
            self.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return before, size()

    def scrub(self, table: str) -> str:
        """After rows of ``table`` were deleted (and, with secure_delete, zeroed): the log checkpointed and truncated,
        so no frame of it still holds them. Says what was done."""
        if self.path == ":memory:":
            return "nothing is kept on disk"
        busy, _, _ = self.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            return (f"{os.path.basename(self.path)}-wal still holds them: a reader kept the log from being reset; run "
                    "`deniable compact` when the server is idle")
        return f"overwritten in {os.path.basename(self.path)}, and its log ({os.path.basename(self.path)}-wal) reset"

    def close(self):
        self.connection.close()
        if self._writer_lock not in (None, NO_WRITER_LOCK):
            os.close(self._writer_lock)
        self._writer_lock = None


def open_engine(url: str, read_only: bool = False) -> Engine:
    return PostgresEngine(str(url), read_only) if is_postgres(url) else SQLiteEngine(str(url), read_only)
