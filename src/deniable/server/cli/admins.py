"""`deniable admin …` (accounts, API tokens, the audit log) and the deployment's maintenance: copy, backup, compact."""

from __future__ import annotations

import sys

import click

from deniable import storage
from deniable.client.errors import DeniableError

from .common import db_option, open_store

# --- admins -------------------------------------------------------------------------------------

@click.group()
def admin():
    """Admin accounts, API tokens for scripts, and the audit log."""


@admin.command("add")
@db_option
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input (for scripts).")
def admin_add(db, name, password_stdin):
    """Add an admin account NAME (asks for the password twice)."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    with open_store(db, must_exist=False) as store:
        store.add_admin(name, password)
    click.echo(f"Admin {name!r} added; sign in at /admin/login.")


@admin.command("list")
@db_option
def admin_list(db):
    """Admin accounts and API tokens (never their secrets)."""
    with open_store(db, read_only=True) as store:
        for row in store.admins():
            locked = f" (locked until {row['locked_until']})" if row["locked_until"] else ""
            click.echo(f"admin {row['name']}, added {row['added_on']}{locked}")
        for token in store.api_tokens():
            state = f"revoked {token['revoked_on']}" if token["revoked_on"] else f"last used {token['last_used_on'] or 'never'}"
            click.echo(f"token {token['id']} {token['name']!r}, may {', '.join(token['scopes'])}, created "
                       f"{token['created_on']}, {state}")


@admin.command("token")
@db_option
@click.argument("name")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(storage.SCOPES),
              help="What the token may do, once per scope: read (surveys, versions, counts, waves), export (per-response "
                   "reports), write (publish, close, reopen surveys), manage (invitation tokens, waves). Default: read.")
def admin_token(db, name, scopes):
    """Create an API token NAME (what it is for) for scripts; it is shown once."""
    with open_store(db, must_exist=False) as store:
        token_id, token = store.create_api_token(name, scopes=scopes or ("read",))
    click.echo(f"API token {token_id} ({name}, may {', '.join(storage.checked_scopes(scopes or ('read',)))}), "
               f"shown once: {token}")
    click.echo("Send it as 'Authorization: Bearer <token>'; revoke it with `deniable admin revoke " + token_id + "`.")


@admin.command("revoke")
@db_option
@click.argument("token_id")
def admin_revoke(db, token_id):
    """Revoke the API token TOKEN_ID (from `deniable admin list`)."""
    with open_store(db) as store:
        store.revoke_api_token(token_id)
    click.echo(f"API token {token_id} revoked.")


@admin.command("audit")
@db_option
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--kind", type=click.Choice(["actions", "refusals", "all"]), default="actions", show_default=True,
              help="Admin actions, refused sign-ins (one line per name and hour, with the count), or both.")
def admin_audit(db, limit, kind):
    """The latest admin actions: who created, closed, exported what, and when."""
    with open_store(db, read_only=True) as store:
        for entry in store.audit_log(limit, kind=None if kind == "all" else kind):
            survey = f" {_printable(entry['survey_id'])}" if entry["survey_id"] else ""
            detail = f" ({_printable(entry['detail'])})" if entry["detail"] else ""
            click.echo(f"{entry['at'][:19].replace('T', ' ')}  {_printable(entry['actor'])}: {entry['action']}{survey}{detail}")


def _printable(text: str) -> str:
    """Text from outside (a name typed at the sign-in form) on one line: control characters escaped, so
    a name cannot print a line that looks like another entry."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


@click.command("copy")
@click.option("--from", "source", required=True, help="The database to copy (a SQLite file, sqlite:///… or postgresql://…).")
@click.option("--to", "target", required=True, help="An empty database to copy into (created and migrated if need be).")
def copy(source, target):
    """Move a deployment to another database, e.g. from SQLite to PostgreSQL.

    Every table is copied in one transaction on the target and each table's row count is
    checked against the source; on any failure nothing is kept. Stop the servers first (or
    close the surveys), or responses that arrive during the copy stay behind."""
    try:
        copied = storage.copy_database(source, target)
    except DeniableError:
        raise
    except Exception as error:  # unreachable server, not a database
        raise click.ClickException(f"cannot copy: {error}") from None
    for table, rows in copied.items():
        click.echo(f"{table:>16}: {rows:,} rows")
    click.echo(f"Copied {storage.describe_database(source)} to {storage.describe_database(target)}.")


@click.command("backup")
@db_option
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="The new backup file.")
@click.option("--compact", is_flag=True, help="Write rows in key order (VACUUM INTO) rather than copy pages as they are.")
def backup(db, output, compact):
    """A consistent online backup of a SQLite database (servers may keep running).

    For PostgreSQL use pg_dump, as docs/deploy.md shows."""
    size = storage.backup_sqlite(db, output, compact)
    click.echo(f"Backed up {storage.describe_database(db)} to {output} ({size:,} bytes)")


@click.command("compact")
@db_option
def compact(db):
    """Rewrite the database file in key order (VACUUM).

    Rows already sit in the order of their random ids, but inside a page SQLite writes each new
    row below the last one until the page is rewritten: someone who reads the raw file could
    still tell which rows of a page came later. Compacting removes that (and frees space).
    It takes the write lock for as long as it runs: do it when few responses arrive."""
    with open_store(db) as store:
        before, after = store.compact()
        click.echo(f"{db}: compacted, {before:,} → {after:,} bytes")
