"""The PostgreSQL engine (``postgresql://…``): a connection borrowed from the process's psycopg 3 pool, with
explicit transactions, ``?`` placeholders numbered ``$1, $2, …`` for raw cursors, and a server that is down or lost
answered as unavailable (503) rather than waited on. psycopg is the postgresql extra's: imported only for such a URL.
"""

from __future__ import annotations

import functools
import os
import secrets
import time

from .errors import StorageError, Unavailable, refusal
from .transactions import Transaction

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
    #: A read transaction (`transactions.Snapshot`): every statement sees the moment of its first.
    begin_reading = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
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

    def scrub(self, table: str) -> str:
        """After rows of ``table`` were deleted: the table rewritten (VACUUM FULL: a new file, the old one unlinked),
        so no dead row version of them stays readable in its pages. Says what was done, and what it cannot reach."""
        self.execute(f"VACUUM FULL {table}")
        return ("the table rewritten (VACUUM FULL); PostgreSQL's own write-ahead log, its archive and any replica "
                "keep them until those are recycled")

    def compact(self) -> tuple[int, int]:
        # Heap tables keep rows where they were inserted: CLUSTER rewrites them in key order.
        def size():
            return self.execute("SELECT pg_database_size(current_database())").fetchone()[0]

        before = size()
        # CLUSTER keeps each row's xmin (the id of the transaction that wrote it), which orders responses by arrival,
        # and credentials by issue. Every row is first written anew, responses, reports and spent serials in one
        # transaction and the token bitmaps and credential issues in another: afterwards every response carries one
        # xmin, shared with no bitmap or issue row (`tokens.py`, `credentials.py`), and neither side keeps its order.
        # CLUSTER then keeps only those new versions, in key order (the random id's, the slot's, the serial's).
        for statements in (("UPDATE responses SET id = id", "UPDATE reports SET value = value",
                            "UPDATE spent_serials SET serial = serial"),
                           ("UPDATE token_use SET used = used", "UPDATE credential_issues SET blinded = blinded")):
            with Transaction(self):
                for statement in statements:
                    self.execute(statement)
        for table in ("responses", "reports", "token_use", "spent_serials", "credential_issues"):
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
