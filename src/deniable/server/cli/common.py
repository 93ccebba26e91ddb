"""What every `deniable` command shares: how it names its database (`db_option`), opens it (`open_store`) and a
spec file (`load_spec_file`), turns a domain error into one line and exit status 1 (`Commands`), and whom the audit
log names (`cli_actor`). Files are `files`'."""

from __future__ import annotations

import getpass
import os

import click

from deniable import storage
from deniable.client import Survey
from deniable.client.errors import DeniableError


def _database(_ctx, _param, value):
    return storage.resolve_database(value)


# Every command names its database the same way: storage.resolve_database decides.
db_option = click.option("--db", "db", default=None, callback=_database, type=click.Path(dir_okay=False),
                         help="A SQLite file or a database URL (sqlite:///file.db, postgresql://user@host/db); "
                              "default: $DENIABLE_DATABASE_URL, else $DENIABLE_DB, else deniable.db.")


class Commands(click.Group):
    """The command group that turns every `DeniableError` into a one-line message and exit status 1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except DeniableError as error:
            raise click.ClickException(error.message) from None


def load_spec_file(path: str) -> Survey:
    try:
        return Survey.from_file(path)
    except DeniableError as error:
        message = str(error)  # an XLSForm's messages name the file already
        raise click.ClickException(message if message.startswith(f"{path}:") else f"{path}: {message}") from None


def open_store(db: str, read_only: bool = False, must_exist: bool = True) -> storage.Store:
    """The database of a command. Commands that only read open it read-only; every command but
    those that set a deployment up (init-db, survey add, serve, demo, admin add) needs it to exist,
    so a mistyped --db never leaves an empty database behind."""
    if must_exist and not storage.is_postgres(db) and not os.path.isfile(storage.sqlite_path(db)):
        raise click.ClickException(f"{db}: no such database file (create one with `deniable init-db --db {db}` "
                                   "or `deniable survey add`)")
    try:
        return storage.Store(db, read_only=read_only)
    except DeniableError as error:
        where = storage.describe_database(db)
        raise click.ClickException(error.message if error.message.startswith(where) else f"{where}: {error.message}") from None
    except Exception as error:  # sqlite3.DatabaseError, psycopg's OperationalError: not a database, unreachable…
        raise click.ClickException(f"{storage.describe_database(db)}: cannot open the database ({error})") from None


def cli_actor() -> str:
    """Who the audit log names for a command: the command line and the operating-system user."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in this environment
        return "cli"
