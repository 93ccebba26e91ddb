"""The ``deniable`` command: a thin layer over the library, a module per concern. Every domain error (a
`DeniableError`) becomes a one-line message and exit status 1, in one place (`common.Commands`).

``surveys`` (check, import, add, list, close, waves), ``data`` (invitation tokens and their credentials' re-issue,
exports, estimates), ``models`` (a multilevel model and its small areas), ``contacts`` (e-mail invitations and
reminders, the contact list), ``admins`` (accounts, API tokens, the audit log; copy, backup, compact), ``running``
(serve, demo, init-db); what they share is in ``common`` (the database option, opening a store, the audit log's
actor) and ``files`` (atomic writes)."""

from __future__ import annotations

import sys

import click

from .admins import admin, backup, compact, copy
from .common import Commands
from .contacts import contacts, invite, remind
from .data import estimate_command, export, reissue, tokens
from .models import model_command
from .running import demo, init_db, serve
from .surveys import survey


@click.group(cls=Commands)
@click.version_option(package_name="deniable")
def main():
    """deniable: surveys with plausible deniability (randomized response on the respondent's device)."""


for command in (survey, tokens, reissue, invite, remind, contacts, export, estimate_command, model_command, admin, copy,
                backup, compact, serve, demo, init_db):
    main.add_command(command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
