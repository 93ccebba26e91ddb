"""Reading an XLSForm's cells: the problems of a form, gathered to be reported at once with their place; a cell's
text; a language suffix (``label::English (en)``); a mapping written as JSON in a cell."""

from __future__ import annotations

import json
import re

_NAMED_LANGUAGES = {"english": "en", "spanish": "es", "español": "es", "french": "fr", "français": "fr",
                    "portuguese": "pt", "português": "pt", "arabic": "ar", "swahili": "sw", "kiswahili": "sw",
                    "german": "de", "deutsch": "de", "hindi": "hi", "russian": "ru", "chinese": "zh"}


class _Problems:
    def __init__(self):
        self.items: list[str] = []

    def add(self, sheet: str, row: int | None, column: str | None, value, why: str):
        where = f"{sheet} sheet" + (f", row {row}" if row else "") + (f", column {column}" if column else "")
        shown = "" if value is None or value == "" else f" {str(value)!r}:"
        self.items.append(f"{where}:{shown} {why}")


def _language(suffix: str, sheet: str, row: int, column: str, problems: _Problems) -> str | None:
    """``English (en)`` → en, ``es`` → es, ``Spanish`` → es."""
    text = suffix.strip()
    code = re.search(r"\(([A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)\)\s*$", text)
    if code:
        return code.group(1)
    if re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*", text):
        return text
    if text.lower() in _NAMED_LANGUAGES:
        return _NAMED_LANGUAGES[text.lower()]
    problems.add(sheet, row, column, None, f"cannot tell which language {text!r} is; write it as "
                                           f"'{column.split('::')[0]}::Name (code)', e.g. 'label::English (en)'")
    return None


def _cell_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _json_cell(value, number: int, column: str, problems: "_Problems", sheet: str = "survey", kind=dict):
    """A cell holding a mapping (or, with ``kind=list``, a list) as JSON text (`xlsform_writer` writes them so), or
    None with a problem recorded."""
    try:
        parsed = json.loads(_cell_text(value))
    except ValueError:
        parsed = None
    if not isinstance(parsed, kind):
        example = '{"direct": "1/4"}' if kind is dict else '[{"question": "region", "limit": 500}]'
        problems.add(sheet, number, column, value, f"must be a {'mapping' if kind is dict else 'list'} written as JSON, "
                                                   f"e.g. {example}")
        return None
    return parsed
