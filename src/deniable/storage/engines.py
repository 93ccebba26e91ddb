"""The two database engines behind every store, chosen by the database URL: SQLite (a path or
``sqlite:///…``, through sqlite-utils; the embedded default) and PostgreSQL (``postgresql://…``,
psycopg 3 with a psycopg_pool pool per process). Every query is written once, with ``?``
placeholders; the PostgreSQL engine numbers them ``$1, $2, …`` (raw cursors). Transactions and the retry of
PostgreSQL's transient failures live here too.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import os
import re
import secrets
import sqlite3
import sys
import threading
import urllib.parse
from typing import Protocol, runtime_checkable

try:
    import fcntl
except ImportError:  # Windows: SQLite's own busy wait alone
    fcntl = None

import time

from .errors import DiskFull, NotFound, StorageError, Unavailable


class _WithoutDataFrames(importlib.abc.MetaPathFinder):
    """Refuses pandas and numpy to the thread that imports sqlite-utils, for that import only (`_import_sqlite_utils`):
    any other thread imports them as usual meanwhile."""

    REFUSED = ("pandas", "numpy")

    def __init__(self):
        self.thread = threading.get_ident()

    def find_spec(self, name, path=None, target=None):
        if threading.get_ident() == self.thread and name.partition(".")[0] in self.REFUSED:
            raise ImportError(f"{name}: not loaded for sqlite-utils", name=name)
        return None


def _import_sqlite_utils():
    """sqlite-utils, without the pandas and numpy it imports when they are installed (to store their values; the store
    never gives it either): 0.3 s of CPU and 45 MB in every process that opens a SQLite database, most of which never
    estimate (the server's respondent pages, `deniable survey list`, tokens, export). Where a program has them loaded
    already (a notebook), sqlite-utils finds them as before. Here, not at the top: `deniable --help` opens nothing."""
    if "sqlite_utils" in sys.modules:
        return sys.modules["sqlite_utils"]
    finder = _WithoutDataFrames()
    sys.meta_path.insert(0, finder)
    try:
        import sqlite_utils  # the refused imports fail inside it, which it takes as "not installed"
    finally:
        sys.meta_path.remove(finder)
    return sqlite_utils


def is_postgres(url: str) -> bool:
    return str(url).startswith(("postgresql://", "postgres://"))


def sqlite_path(url: str) -> str:
    """The file of a SQLite URL (``sqlite:///relative.db``, ``sqlite:////abs.db``) or plain path."""
    url = str(url)
    return url[len("sqlite:///"):] if url.startswith("sqlite:///") else url


def describe_database(url: str) -> str:
    """The database URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", str(url))


#: The last failure of the database itself in this process (monotonic time, message): `Store.healthy` reports
#: it for a minute, so a load balancer stops sending writes to a server whose disk is full.
LAST_FAILURE: dict = {}


def refusal(error) -> StorageError | None:
    """What a failure of the database itself (not of the request) means for whoever sent the request:
    a full disk (507) or a read-only database (503), each saying nothing was stored. None otherwise."""
    text, name = str(error).lower(), error.__class__.__name__
    if "disk is full" in text or "no space left" in text or name == "DiskFull":
        refused = DiskFull("the server's disk is full: nothing was stored; send it again later", "db")
    elif "readonly database" in text or name == "ReadOnlySqlTransaction":
        refused = Unavailable("the database is read-only: nothing was stored; send it again later", "db")
    else:
        return None
    LAST_FAILURE.update(at=time.monotonic(), message=refused.message)
    return refused


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
    def close(self) -> None: ...


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
        try:
            sqlite_utils = _import_sqlite_utils()
        except ImportError:
            connection.close()
            raise StorageError("SQLite databases need sqlite-utils: pip install 'deniable[analysis]' (or "
                               "'deniable[server]')", "db") from None

        self.db = sqlite_utils.Database(connection)
        self._writer_lock = None  # the open lock file, once this connection has written (`begin_transaction`)
        # Not to be kept when it is (or turns out) read-only: opened while the file could not be written, SQLite keeps
        # the connection read-only for its life.
        self.reopen = not read_only and self.path != ":memory:" and not os.access(self.path, os.W_OK)
        if self.path != ":memory:" and not read_only:
            try:
                self.db.enable_wal()
            except sqlite3.OperationalError as error:
                connection.close()
                refused = refusal(error)
                if refused is None:
                    raise
                raise Unavailable(f"{self.path}: {refused.message.split(':')[0]} (the file or its folder cannot be "
                                  "written)", "db") from None
        try:
            # FULL: a commit reaches the disk before the client hears "201" (invariant 6).
            self.db.execute("PRAGMA synchronous=FULL")
            # Rows are keyed by random ids (nothing stored keeps arrival order), so each insert dirties a page of its
            # own: a larger page cache and checkpoints every 40 MiB of log instead of 4 rewrite hot pages less often
            # (batch ingest +20% measured; durability unchanged, the log is synced at each commit).
            self.db.execute("PRAGMA cache_size=-32768")
            self.db.execute("PRAGMA wal_autocheckpoint=10000")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the file is read now, not mid-request
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
            if commit or self.db.conn.in_transaction:
                self.execute("COMMIT" if commit else "ROLLBACK")
        finally:
            self._release_writer_lock()

    def _release_writer_lock(self):
        if self._writer_lock not in (None, NO_WRITER_LOCK):
            fcntl.flock(self._writer_lock, fcntl.LOCK_UN)

    def execute(self, sql: str, params=()):
        try:
            return self.db.conn.execute(sql, params)
        except sqlite3.OperationalError as error:
            raise self._refused(error) from None

    def executemany(self, sql: str, rows):
        try:
            return self.db.conn.executemany(sql, rows)
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
        yield from self.db.conn.execute(sql, params)

    def pipeline(self):
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

    def close(self):
        self.db.conn.close()
        if self._writer_lock not in (None, NO_WRITER_LOCK):
            os.close(self._writer_lock)
        self._writer_lock = None


_POOLS: dict = {}
#: How long a request waits for a connection before answering 503 (all 32 busy).
GETCONN_SECONDS = 10
#: How long it waits before it asks the server itself whether it is there: a server that is down answers 503 after
#: about this long (it took 10-20 s, /healthz included), not after GETCONN_SECONDS.
FIRST_WAIT_SECONDS = 0.5
#: A server found down is taken as down for this long without asking again (each ask opens a connection).
DOWN_SECONDS = 1.0
_DOWN: dict = {}  # url -> monotonic time until which it is taken as down


def _server_answers(url: str) -> bool:
    """Whether the server accepts a connection now (at most a second to find out), remembered briefly when not."""
    import psycopg  # the postgresql extra: only for a PostgreSQL URL

    if _DOWN.get(url, 0) > time.monotonic():
        return False
    try:
        psycopg.connect(url, connect_timeout=1).close()
    except psycopg.OperationalError:
        _DOWN[url] = time.monotonic() + DOWN_SECONDS
        return False
    _DOWN.pop(url, None)
    return True


def _borrow(url: str):
    """A connection from the process's pool: at once when one is free; when none comes within FIRST_WAIT_SECONDS, a
    server that is down is a 503 now, and a pool that holds no connection while the server answers again (still in
    its back-off from the outage, which kept 503s going 30 s after the server was back) is replaced."""
    pool = _pool(url)
    try:
        return pool, pool.getconn(timeout=FIRST_WAIT_SECONDS)
    except Exception:  # noqa: BLE001 - psycopg_pool.PoolTimeout: down, busy, or reconnecting
        pass
    if not _server_answers(url):
        raise Unavailable("the database is unavailable (it does not accept connections); try again in a moment",
                          "db")
    stats = pool.get_stats()
    if stats.get("pool_size", 0) == 0:  # the server is back, the pool still waiting to reconnect: start afresh
        pool = _renew_pool(url, pool)
    try:
        return pool, pool.getconn(timeout=GETCONN_SECONDS)
    except Exception as error:  # noqa: BLE001 - every connection busy
        raise Unavailable(f"the database is unavailable ({error.__class__.__name__}); try again in a moment",
                          "db") from None


def _renew_pool(url: str, old):
    key = (url, os.getpid())
    if _POOLS.get(key) is old:
        del _POOLS[key]
        try:
            old.close(timeout=0)
        except Exception:  # noqa: BLE001 - a pool already closing
            pass
    return _pool(url)


def _pool(url: str):
    """One pool per database URL and per process (a pool made before a fork is not reused)."""
    from psycopg_pool import ConnectionPool  # the postgresql extra: only for a PostgreSQL URL

    key = (url, os.getpid())
    if key not in _POOLS:
        # One direct connection first: an unreachable or misnamed database fails at once with
        # PostgreSQL's own message, where the pool would retry quietly until its timeout.
        import psycopg  # the postgresql extra: only for a PostgreSQL URL

        try:
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.OperationalError as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else error.__class__.__name__
            raise StorageError(f"cannot connect to the database ({reason})", "db") from None
        # Lent without a check (`PostgresEngine.execute` replaces a connection that turns out dead).
        _POOLS[key] = ConnectionPool(url, min_size=1, max_size=32, open=True, timeout=30,
                                     kwargs={"autocommit": True}, name="deniable")
    return _POOLS[key]


def close_pools(url: str | None = None) -> None:
    """Close this process's connection pools (of ``url``, or all): a process done with a database gives its
    connections back to the server, which counts them against ``max_connections``."""
    for key in [key for key in _POOLS if url is None or key[0] == url]:
        _POOLS.pop(key).close()


class PostgresEngine:
    """A connection borrowed from the process's psycopg_pool pool, in autocommit mode with explicit
    transactions. Schema version in the table ``deniable_schema``; migrations take an advisory lock."""

    dialect = "postgresql"
    begin = "BEGIN"
    #: Concurrent submissions to one survey spread their counter updates over this many rows per
    #: value, so they do not all wait on one row lock until the other commits; reads sum them.
    counter_shards = 8

    def __init__(self, url: str, read_only: bool = False):
        try:
            from psycopg import RawCursor, RawServerCursor  # the postgresql extra: only for a PostgreSQL URL
        except ImportError:
            raise StorageError("PostgreSQL needs psycopg: pip install 'deniable[postgresql]'") from None
        self.cursor, self.server_cursor = RawCursor, RawServerCursor  # `$n` placeholders: `_sql`
        self.url = url
        self.memo = {}  # what the current transaction read once (Store._in_transaction)
        self.pool, self.connection = _borrow(url)
        self._untried = True  # no statement has gone through this connection since it was lent (`execute`)
        # A reader's connection refuses every write (a read-only store could write on PostgreSQL); the setting is the
        # session's, so `close` resets it before the pool lends the connection to a writer.
        self.read_only = read_only
        if read_only:
            self.execute("SET default_transaction_read_only = on")

    @staticmethod
    @functools.lru_cache(maxsize=512)
    def _sql(sql: str) -> str:
        """``?`` placeholders as PostgreSQL's own ``$1, $2, …``, for psycopg's raw cursors: its ``%s`` queries are
        parsed in Python on every call past 50 parameters, and a batch's multi-row inserts (thousands) spent 60% of
        the request there."""
        parts = sql.split("?")
        return "".join(f"{part}${number}" for number, part in enumerate(parts[:-1], 1)) + parts[-1]

    def _lost(self, error) -> bool:
        return getattr(self.connection, "broken", False) or error.__class__.__name__ in ("AdminShutdown", "CannotConnectNow")

    def begin_transaction(self):
        self.execute(self.begin)

    def end_transaction(self, commit: bool):
        self.execute("COMMIT" if commit else "ROLLBACK")

    def execute(self, sql: str, params=()):
        try:
            result = self.cursor(self.connection).execute(self._sql(sql), params)
        except Exception as error:
            if self._lost(error):
                if self._untried:
                    return self._again_on_a_new_connection(sql, params)
                # the server went away mid-request: a 503, never a traceback
                raise Unavailable("the database connection was lost; send it again in a moment", "db") from None
            raise refusal(error) or error from None
        self._untried = False
        return result

    def _again_on_a_new_connection(self, sql: str, params):
        """The pool lends its connections unchecked: a check is a round trip on every request, a third of what a
        submission costs with the database on another host. A connection a restart left dead fails at its first
        statement instead, which it never delivered: the connection goes back (the pool discards it, being broken),
        the pool checks the others it holds (a restart leaves them all dead), another is borrowed, and the statement
        is sent again; a restart still fails no request."""
        self.pool.putconn(self.connection)
        try:
            self.pool.check()
        except Exception:  # noqa: BLE001 - the server still down: the borrow below says so (a 503)
            pass
        self.pool, self.connection = _borrow(self.url)
        self._untried = False  # lost again: a 503
        return self.execute(sql, params)

    def _tried(self):
        # What speaks to the connection without `execute` (a pipeline, a server-side cursor) finds it alive first.
        if self._untried:
            self.execute("SELECT 1")

    def executemany(self, sql: str, rows):
        try:
            with self.cursor(self.connection) as cursor:
                cursor.executemany(self._sql(sql), list(rows))
        except Exception as error:
            if self._lost(error):
                raise Unavailable("the database connection was lost; send it again in a moment", "db") from None
            # as `execute`: a full disk while tokens are issued is a 507 saying nothing was stored, not a 500
            raise refusal(error) or error from None

    def pipeline(self):
        self._tried()
        return self.connection.pipeline()

    def stream(self, sql: str, params=()):
        # A server-side cursor: an export of millions of rows never sits in memory at once.
        self._tried()
        with self.connection.transaction(), self.server_cursor(self.connection, f"stream_{secrets.token_hex(4)}") as cursor:
            cursor.itersize = 2000
            cursor.execute(self._sql(sql), params)
            yield from cursor

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus  # the postgresql extra: only for a PostgreSQL URL

        return self.connection.info.transaction_status != TransactionStatus.IDLE

    def rollback(self):
        if self.connection.broken:
            return  # nothing to roll back on a lost connection; the pool discards it when it comes back
        if self.in_transaction:
            self.connection.execute("ROLLBACK")

    def schema_version(self) -> int:
        # Looked up, not created: a read-only open writes nothing, not even this table.
        if self.execute("SELECT to_regclass('deniable_schema')").fetchone()[0] is None:
            return 0
        row = self.execute("SELECT version FROM deniable_schema").fetchone()
        return 0 if row is None else row[0]

    def set_schema_version(self, version: int):
        self.execute("CREATE TABLE IF NOT EXISTS deniable_schema (version INTEGER NOT NULL)")
        self.execute("DELETE FROM deniable_schema")
        self.execute("INSERT INTO deniable_schema (version) VALUES (?)", [version])

    def lock_for_migration(self):
        self.execute("SELECT pg_advisory_xact_lock(?)", [0x64656E69])  # 'deni'

    def table_names(self) -> list[str]:
        return [r[0] for r in self.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_schema = current_schema() ORDER BY table_name")]

    def without_rowid(self) -> str:
        return ""

    def lock_rows(self, table: str, shared: bool = False) -> str:
        """The clause that locks the rows a SELECT read from ``table`` until the transaction ends (``shared``: against
        writers of those rows only, not against other shared holders)."""
        return f" FOR {'SHARE' if shared else 'UPDATE'} OF {table}"

    def compact(self) -> tuple[int, int]:
        # Heap tables keep rows where they were inserted: CLUSTER rewrites them in key order.
        def size():
            return self.execute("SELECT pg_database_size(current_database())").fetchone()[0]

        before = size()
        # CLUSTER keeps each row's xmin (the id of the transaction that wrote it), which orders responses by arrival.
        # Every row is first written anew, responses and reports in one transaction and the token bitmaps in another:
        # afterwards every response carries one xmin, shared with no bitmap row (`tokens.py`). CLUSTER then keeps
        # only those new versions, in key order (the random id's).
        for statements in (("UPDATE responses SET id = id", "UPDATE reports SET value = value"),
                           ("UPDATE token_use SET used = used",)):
            with Transaction(self):
                for statement in statements:
                    self.execute(statement)
        for table in ("responses", "reports", "token_use"):
            self.execute(f"CLUSTER {table} USING {table}_pkey")
        self.execute("VACUUM ANALYZE")
        return before, size()

    def close(self):
        self.rollback()
        if self.read_only and not self.connection.broken:
            try:
                self.connection.execute("RESET default_transaction_read_only")
            except Exception:  # noqa: BLE001 - the server went away: never lend a connection that may still refuse writes
                self.connection.close()
        self.pool.putconn(self.connection)


def open_engine(url: str, read_only: bool = False) -> Engine:
    return PostgresEngine(str(url), read_only) if is_postgres(url) else SQLiteEngine(str(url), read_only)




class Transaction:
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
            self.connection.begin_transaction()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.savepoint is None:
            self.connection.memo = {}
            self.connection.end_transaction(commit=exc_type is None)
        else:
            if exc_type is not None:
                self.connection.execute(f"ROLLBACK TO {self.savepoint}")
            self.connection.execute(f"RELEASE {self.savepoint}")
        return False


#: Transient failures of a submission on PostgreSQL, retried from the start.
RETRIES = 4


@functools.cache
def _transient() -> tuple:
    """PostgreSQL's deadlock and serialization failures (psycopg is imported only when needed)."""
    try:
        from psycopg import errors  # the postgresql extra: only for a PostgreSQL URL
    except ImportError:
        return ()
    return errors.DeadlockDetected, errors.SerializationFailure


def retrying(store):
    """Run ``store`` again after a deadlock or serialization failure (PostgreSQL), a few times."""
    for attempt in range(RETRIES):
        try:
            return store()
        except _transient() as error:
            if attempt == RETRIES - 1:
                raise Unavailable(f"the database is too busy to store this ({error.__class__.__name__}); "
                                   "send it again with the same idempotency key") from None
    raise AssertionError("unreachable")  # pragma: no cover
