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


class DeniableWarning(UserWarning):
    """The one root of deniable's warnings (an estimate not certified, separation in a regression): a caller
    silences or escalates them all by this name (``warnings.simplefilter("error", DeniableWarning)``)."""


class DeniableDeprecationWarning(DeniableWarning, DeprecationWarning):
    """A name or parameter still taken under its former spelling: the message says the new one. A DeprecationWarning
    too, so tools that show or hide deprecations treat it as one."""


class AnswerError(DeniableError, ValueError):
    """An answer the client refuses before randomizing anything: ``question`` names the question,
    ``allowed`` says in words what it accepts."""

    def __init__(self, question: str, reason: str, allowed: str):
        super().__init__(f"answers.{question}: {reason}; allowed: {allowed}", f"answers.{question}")
        self.question, self.reason, self.allowed = question, reason, allowed


class SpecError(DeniableError, ValueError):
    """A survey spec is malformed; the message names the question and field."""


class ReportError(DeniableError, ValueError):
    """A response (or a grouping of responses) the survey does not allow; ``field`` names the
    place at fault (``reports.dodged``, ``by``)."""
