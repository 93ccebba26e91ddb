"""XLSForm in and out: the spreadsheet questionnaires of ODK, KoBoToolbox, SurveyCTO and Safely Report.

`read_xlsform` (`xlsform_reader`) turns a form into a deniable spec (a dict for `Survey`), reporting every problem of
the form at once with its sheet, row, column and value; `write_xlsform` (`xlsform_writer`) writes a survey as a form
that reads back to the same spec hash. docs/questionnaires.md has the mapping table.
"""

from pathlib import Path

from .survey import Survey
from .xlsform_reader import MAX_SHEET_ROWS, MAX_WORKBOOK_BYTES, checked, read_form
from .xlsform_writer import write_xlsform


def read_xlsform(path) -> dict:
    """A deniable spec from an XLSForm (.xlsx). Raises SpecError listing every problem found, or saying why the spec
    the form gives is not a valid survey."""
    spec = read_form(path)
    checked(Path(path), spec, Survey)
    return spec

__all__ = ["MAX_SHEET_ROWS", "MAX_WORKBOOK_BYTES", "read_xlsform", "write_xlsform"]
