"""What an id may be (a survey, section, question, group): 1 to 64 letters, digits, '_', '-' or '.',
starting with a letter or digit, matched as a whole (a trailing newline is not an id)."""

from __future__ import annotations

import re

from .errors import SpecError

ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def identifier(value, where: str) -> str:
    """``value`` when it is an id; `SpecError` naming ``where`` otherwise."""
    if not isinstance(value, str) or not ID.fullmatch(value):
        raise SpecError(f"{where}: must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit; got {value!r}")
    return value
