"""Maintenance of a whole deployment: copying it to another database (SQLite ↔ PostgreSQL) and
online backups of SQLite. Compacting is `Store.compact`."""

from __future__ import annotations

import os
import sqlite3

from .engines import describe_database, is_postgres
from .errors import Conflict, Invalid, StorageError
from .schema import KEYS, TABLES
from .store import Store


def copy_database(source_url: str, target_url: str, batch: int = 5000, progress=None) -> dict[str, int]:
    """Copy a whole deployment to another database (SQLite ↔ PostgreSQL): every table, rows in key
    order, in one transaction on the target, which must hold no survey yet. The source is brought
    to the current schema first. Returns rows copied per table; each is checked against the source."""
    copied = {}
    with Store(source_url) as source, Store(target_url) as target:
        if target.execute("SELECT COUNT(*) FROM surveys").fetchone()[0]:
            raise Conflict(f"{describe_database(target_url)} already holds surveys; copy into an empty database", "to")
        with target.transaction():
            target.execute("DELETE FROM settings")
            for table, columns in TABLES.items():
                names = ", ".join(columns)
                insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})"
                rows, count = [], 0
                for row in source.engine.stream(f"SELECT {names} FROM {table} ORDER BY {KEYS[table]}"):
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
    if is_postgres(source_url):
        raise Invalid("backups of PostgreSQL are pg_dump's job: pg_dump --format=custom --file=deniable.dump "
                      "<database URL> (see docs/deploy.md)", "db")
    if os.path.lexists(output):  # a dangling link too: SQLite would follow it and write where it points
        raise Conflict(f"{output} exists; choose a new file", "output")
    with Store(source_url) as source:
        if compact:
            source.execute("VACUUM INTO ?", [output])
        else:
            target = sqlite3.connect(output)
            try:
                source.engine.connection.backup(target)
            finally:
                target.close()
    return os.path.getsize(output)
