"""What every `deniable` command shares: how it names its database (`db_option`), opens it (`open_store`) and a
spec file (`load_spec_file`), turns a domain error into one line and exit status 1 (`Commands`), writes an output
file whole or not at all (`atomic_write`), and whom the audit log names (`cli_actor`)."""

from __future__ import annotations

import getpass
from pathlib import Path

import click

from deniable import storage
from deniable.client import Survey
from deniable.client.errors import DeniableError


def _database(_ctx, _param, value):
    return storage.resolve_database(value)


# Every command names its database the same way: storage.resolve_database decides.
db_option = click.option("--db", "db_path", default=None, callback=_database, type=click.Path(dir_okay=False),
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


def open_store(db_path: str, read_only: bool = False, must_exist: bool = True) -> storage.Store:
    """The database of a command. Commands that only read open it read-only; every command but
    those that set a deployment up (init-db, survey add, serve, demo, admin add) needs it to exist,
    so a mistyped --db never leaves an empty database behind."""
    import os

    if must_exist and not storage.is_postgres(db_path) and not os.path.isfile(storage.sqlite_path(db_path)):
        raise click.ClickException(f"{db_path}: no such database file (create one with `deniable init-db --db {db_path}` "
                                   "or `deniable survey add`)")
    try:
        return storage.Store(db_path, read_only=read_only)
    except DeniableError as error:
        where = storage.describe(db_path)
        raise click.ClickException(error.message if error.message.startswith(where) else f"{where}: {error.message}") from None
    except Exception as error:  # sqlite3.DatabaseError, psycopg's OperationalError: not a database, unreachable…
        raise click.ClickException(f"{storage.describe(db_path)}: cannot open the database ({error})") from None


def atomic_write(target: Path, write):
    """Write a new file beside the target and rename it over the target: a failed write leaves no partial
    file. The new file is created exclusively under a name nobody can predict (a link planted at
    ``<output>.partial`` is never followed), and the target must be a regular file or not exist yet."""
    import os
    import tempfile

    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise click.ClickException(f"{target}: not a regular file (a link, a folder or a device); choose another output")
    try:
        handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    except OSError as error:
        raise click.ClickException(f"{target}: cannot write ({error.strerror})") from None
    os.close(handle)
    partial = Path(name)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(partial, 0o666 & ~umask)  # as an ordinary new file would be, not mkstemp's 0600
        write(partial)
        partial.replace(target)
    except BaseException as error:
        partial.unlink(missing_ok=True)
        if not isinstance(error, OSError):
            raise
        raise click.ClickException(f"{target}: cannot write ({error.strerror})") from None


def cli_actor() -> str:
    """Who the audit log names for a command: the command line and the operating-system user."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in this environment
        return "cli"
