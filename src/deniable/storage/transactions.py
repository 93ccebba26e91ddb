"""Transactions on either engine: BEGIN … COMMIT, nested ones as savepoints, and the retry of a submission after
PostgreSQL's transient failures (a deadlock, a serialization failure)."""

from __future__ import annotations

import functools
import secrets

from .errors import Unavailable


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


class Snapshot:
    """Reads that see one moment of the database: a read transaction (SQLite: a deferred BEGIN, whose first read
    fixes the moment of the log it sees; PostgreSQL: REPEATABLE READ, READ ONLY). Several statements inside it (the
    answers, then the frame rows they carry) cannot disagree about which responses exist. Inside a transaction
    already, it is that transaction's moment. Kept short on purpose: an open snapshot keeps SQLite's log from being
    reset and PostgreSQL's vacuum from removing the row versions it might still read."""

    def __init__(self, engine):
        self.connection = engine
        self.opened = False

    def __enter__(self):
        if not self.connection.in_transaction:
            self.connection.execute(self.connection.begin_reading)
            self.opened = True
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.opened:
            self.opened = False
            # COMMIT, not ROLLBACK: nothing was written, and SQLite aborts a reader's unfinished statements on ROLLBACK.
            self.connection.execute("COMMIT")
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
