"""The formats an export is written in, by the name the CLI's ``--format``, the API's ``?format=`` and the dashboard's
links use: how each is written, served and named."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .exports import codebook, export_csv, export_dta, export_jsonl, export_sav
from .sqlite_export import export_sqlite


@dataclass(frozen=True)
class ExportFormat:
    write: Callable
    mimetype: str
    #: The file name's ending (the codebook is Markdown).
    suffix: str
    #: What the dashboard's link says.
    label: str
    binary: bool = False


EXPORT_FORMATS = {
    "csv": ExportFormat(export_csv, "text/csv", "csv", "CSV"),
    "jsonl": ExportFormat(export_jsonl, "application/x-ndjson", "jsonl", "JSON lines"),
    "sav": ExportFormat(export_sav, "application/x-spss-sav", "sav", "SPSS", binary=True),
    "dta": ExportFormat(export_dta, "application/x-stata-dta", "dta", "Stata", binary=True),
    "sqlite": ExportFormat(export_sqlite, "application/vnd.sqlite3", "sqlite", "SQLite (Datasette)", binary=True),
    "codebook": ExportFormat(codebook, "text/markdown", "codebook.md", "codebook"),
}
