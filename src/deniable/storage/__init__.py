"""deniable.storage: the only code that speaks SQL.

One facade, `Store`, over two engines chosen by the database URL (SQLite through the standard library's sqlite3, the
embedded default; PostgreSQL through psycopg 3 and a pool). Its concerns each have a module:
``engines`` (the engine protocol, SQLite's engine), ``postgresql`` (PostgreSQL's engine and its pool),
``transactions`` (transactions, savepoints, retries), ``errors`` (what a failure means to the sender),
``schema`` (migrations, older layouts),
``surveys`` (surveys, versions, invitation tokens, settings), ``tokens`` and ``frames`` (a token's use
and the sampling frame it carries), ``credentials`` (blind-signed credentials: keys, issues, spent serials),
``writes`` (responses and running totals), ``group_commit`` (a server process's concurrent submissions in one transaction), ``reads``
(counts, report rows, exports), ``accounts`` (admins, sessions, API tokens, audit), ``maintenance``
(copy, backup), ``location`` (which database: `resolve_database`), ``export_file`` (an export as a SQLite file
Datasette opens, written with sqlite-utils).

Readers (every reading command, the dashboard and the analysis) open ``Store(url, read_only=True)``,
which reads any schema from 1 on without migrating it.
"""

from .accounts import MIN_PASSWORD_LENGTH, SCOPES, SESSION_LIFETIME, SIGN_IN_FAILURES, SIGN_IN_LOCK, checked_scopes
from .common import GRANULARITIES, canonical, decoded_report
from .contacts import checked_address
from .engines import describe_database, is_postgres, sqlite_path
from .errors import Conflict, Gone, Invalid, NotFound, StorageError, Unavailable, Unconfirmed
from .frames import MIN_CELL
from .frames import rows_from_csv as frame_rows_from_csv
from .group_commit import GroupCommit
from .location import DEFAULT_DATABASE, resolve_database
from .maintenance import backup_sqlite, copy_database
from .schema import KEYS, SCHEMA_VERSION, TABLES, rebuild_counts
from .store import Store
from .surveys import SurveyRecord

__all__ = [
    "Conflict", "DEFAULT_DATABASE", "GRANULARITIES", "Gone", "GroupCommit", "Invalid", "KEYS", "MIN_CELL",
    "MIN_PASSWORD_LENGTH", "NotFound", "SCHEMA_VERSION", "SCOPES", "checked_scopes", "SESSION_LIFETIME", "SIGN_IN_FAILURES", "SIGN_IN_LOCK",
    "StorageError", "Store", "SurveyRecord", "TABLES", "Unavailable", "Unconfirmed", "backup_sqlite", "canonical", "checked_address",
    "copy_database", "decoded_report",
    "describe_database", "frame_rows_from_csv", "is_postgres", "rebuild_counts", "resolve_database", "sqlite_path",
]
