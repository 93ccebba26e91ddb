"""Which database a command, a server or `load()` reads: decided here, once, for every caller."""

from __future__ import annotations

import os

from .errors import StorageError

#: The CLI's and the server's database when nothing names one: a SQLite file in the working folder.
DEFAULT_DATABASE = "deniable.db"


def resolve_database(db=None, default: str | None = DEFAULT_DATABASE) -> str:
    """The database to use: ``db`` when given (a SQLite path or a URL: ``sqlite:///file.db``,
    ``postgresql://…``), else ``$DENIABLE_DATABASE_URL``, else ``$DENIABLE_DB`` (older name, a
    SQLite file), else ``default``. With ``default=None`` (the Python `load()`), naming no database
    anywhere is an error that says what is needed, never a guess at a file in the working folder."""
    if db is not None and str(db) != "":
        return os.fspath(db) if not isinstance(db, str) else db
    for variable in ("DENIABLE_DATABASE_URL", "DENIABLE_DB"):
        if os.environ.get(variable):
            return os.environ[variable]
    if default is None:
        raise StorageError("no database given: pass db= (a SQLite file or a database URL) or set "
                           "$DENIABLE_DATABASE_URL", "db")
    return default
