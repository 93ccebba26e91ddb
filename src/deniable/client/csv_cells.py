"""CSV lines and their cells as exports write them and readers read them back: a cell no spreadsheet runs as a formula
(OWASP's CSV injection rule), undone on reading, and one writer for many lines."""

from __future__ import annotations

import io
import re

#: A spreadsheet reads a cell starting with one of these as a formula (OWASP's CSV injection rule).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value):
    """A CSV cell no spreadsheet runs as a formula: text starting with = + - @, a tab or a carriage return
    gets a leading apostrophe (numbers such as -3 stay numbers). `from_spreadsheet` undoes it."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_row(cells) -> str:
    """One CSV line ("\n"-terminated) of spreadsheet-safe cells (`CsvLines`, for one line)."""
    return CsvLines().line(cells)


class CsvLines:
    """CSV lines of spreadsheet-safe cells through one pair of writers and one buffer (a writer and a buffer made for
    each line were a fifth of an export's time). A line with a carriage return or a line feed in a cell is written
    with every cell quoted: Python's csv quotes a line feed but not a lone carriage return, which readers take for
    the end of the row, so the text after it began a new row whose first cell could be a formula ("a\r=HYPERLINK(…)")."""

    def __init__(self):
        import csv  # not loaded by `import deniable.client` (7 ms): CSV is the exports'

        self._buffer = io.StringIO()
        self._minimal = csv.writer(self._buffer, lineterminator="\n")
        self._quoted = csv.writer(self._buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def line(self, cells) -> str:
        safe = ["" if cell is None else spreadsheet_safe(cell) if isinstance(cell, str) and cell.startswith(_FORMULA_START)
                else cell for cell in cells]
        line = self._written(self._minimal, safe)
        if "\r" in line or line.find("\n") != len(line) - 1:  # a cell holds one: numbers never do
            line = self._written(self._quoted, safe)
        return line

    def _written(self, writer, cells) -> str:
        self._buffer.seek(0)
        self._buffer.truncate()
        writer.writerow(cells)
        return self._buffer.getvalue()


def from_spreadsheet(text: str) -> str:
    """The value a `spreadsheet_safe` cell stands for."""
    if text.startswith("'") and text[1:].startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text[1:]):
        return text[1:]
    return text
