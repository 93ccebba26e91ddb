"""An export as a SQLite file that Datasette opens as it is (``datasette tax.sqlite``), as do sqlite-utils, the
``sqlite3`` shell and every SQL tool: each table typed and keyed, and joined to the others by foreign keys, so
Datasette's pages link a response to its version and a version to its questions.

Written with sqlite-utils, the library made for building such files from rows (types, keys, foreign keys and their
indexes declared in one call each). Only this export needs it: its caller imports this module when a file is written,
so a store that never exports loads neither (`benchmarks/startup.py`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable

import sqlite_utils

#: Rows written per INSERT: sqlite-utils' own batching, sized so that a wide survey's row stays under SQLite's
#: limit on bound parameters per statement (32,766 since SQLite 3.32).
BATCH_ROWS = 100


@dataclass(frozen=True)
class ExportTable:
    """One table of the file: its columns and their Python types (``str``, ``int``, ``float``), its key, the rows
    (dicts by column; a missing or ``None`` cell is NULL) and the foreign keys ``(column, other table, other column)``
    to tables written before it."""

    name: str
    columns: dict
    pk: str | tuple
    rows: Iterable[dict]
    foreign_keys: tuple = field(default=())


def write_tables(path: str, tables: list[ExportTable]) -> None:
    """Write ``tables`` into a new SQLite file at ``path``, in one transaction (a file that exists is refused: an
    export never adds to a database)."""
    if os.path.exists(path) and os.path.getsize(path):
        raise FileExistsError(path)
    db = sqlite_utils.Database(path)
    try:
        with db.conn:
            for table in tables:
                db[table.name].create(table.columns, pk=table.pk, foreign_keys=list(table.foreign_keys),
                                      column_order=list(table.columns))
                db[table.name].insert_all(table.rows, batch_size=BATCH_ROWS)
        db.index_foreign_keys()
        db.execute("VACUUM")  # a compact file to hand on
    finally:
        db.close()
