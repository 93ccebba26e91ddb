"""The one root of deniable's errors.

Every domain error of every room derives from `DeniableError`, so a caller (the CLI, a notebook,
an embedding app) catches one name. ``field`` names the input at fault where one is (a spec key,
``reports.dodged``, ``db``); the server answers with it in its JSON error body, the CLI prints
the message on one line.
"""

from __future__ import annotations


class DeniableError(Exception):
    """A refusal or failure that deniable explains in words: ``message``, and ``field`` where an
    input is at fault."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field

    def __str__(self) -> str:
        return self.message
