"""An export as one SQLite file (`deniable export --format sqlite`) that Datasette, sqlite-utils or any SQL tool opens:
the responses as in the CSV, each keyed to its version, and every version's questions described beside them. The file
itself is written by storage (`deniable.storage.export_file`); what goes in it is decided here, from the spec.
"""

from __future__ import annotations

import json

from deniable.client import skiplogic
from deniable.client.reports import direct_column, option_column
from deniable.client.sample import NUMERIC_ROLES, frame_roles

from .exports import (
    RANDOMIZED_NOTE,
    VERSION_COLUMN,
    ExportUnavailable,
    PooledRecord,
    RowCells,
    describe_privacy,
    describe_reports,
    describe_version,
    export_columns,
    file_bytes,
    question_columns,
    seconds_column,
    timed_sections,
    versions_of,
)


def _column_types(record) -> dict:
    """Each response column's SQL type as a Python type: a number where every version holding the column writes one
    there, text otherwise (a column whose meaning changed between pooled versions is text)."""
    found = {column: set() for column in export_columns(record)}
    if isinstance(record, PooledRecord):
        found[VERSION_COLUMN].add(int)
    for version in versions_of(record):
        survey = version.survey
        for column, role in frame_roles(survey.sample).items():
            found[column].add(float if role in NUMERIC_ROLES else str)
        for key in timed_sections(survey):
            found[seconds_column(key)].add(float)
        for qid, question in survey.questions.items():
            typed = {}
            if question.type == "multi_select":
                typed = dict.fromkeys((option_column(qid, option) for option in question.options), int)
            elif question.type == "number":
                typed = dict.fromkeys((qid, direct_column(qid)), float)
            for column in question_columns(qid, question):
                found[column].add(typed.get(column, str))
    return {column: types.pop() if len(types) == 1 else str for column, types in found.items()}


def _sql_cell(value):
    return None if value == "" else value if isinstance(value, (str, int, float)) else json.dumps(value, ensure_ascii=False)


def export_sqlite(record, rows):
    """The responses, their versions and every question of each in one SQLite file, for Datasette or SQL: the rows
    as in the CSV (an empty cell NULL), each response keyed to its version, each question to its version."""
    try:
        # Here, not at the top: it needs sqlite-utils, for this format only (an install without it exports the others).
        from deniable.storage.export_file import ExportTable, write_tables
    except ModuleNotFoundError as error:
        if error.name != "sqlite_utils":
            raise
        raise ExportUnavailable("SQLite exports need sqlite-utils: pip install 'deniable[server]'") from None
    versions = versions_of(record)
    cells_of = {version.hash: RowCells(version.survey) for version in versions}
    types = _column_types(record)
    tables = [
        ExportTable("versions", {"spec_hash": str, "version": int, "title": str, "responses": int}, "spec_hash",
                    [{"spec_hash": v.hash, "version": v.version, "title": v.survey.title, "responses": v.responses}
                     for v in versions]),
        ExportTable("questions", {"spec_hash": str, "question": str, "text": str, "type": str, "randomized": int,
                                  "privacy": str, "epsilon": float, "report_values": str, "columns": str,
                                  "asked_of": str}, ("spec_hash", "question"),
                    [{"spec_hash": v.hash, "question": qid, "text": q.text, "type": q.type, "randomized": int(q.is_private),
                      "privacy": describe_privacy(q), "epsilon": q.epsilon if q.is_private else None,
                      "report_values": describe_reports(q), "columns": ", ".join(question_columns(qid, q)),
                      "asked_of": None if v.survey.condition(qid) is None else skiplogic.to_text(v.survey.condition(qid))}
                     for v in versions for qid, q in v.survey.questions.items()], (("spec_hash", "versions", "spec_hash"),)),
        ExportTable("responses", types, "id",
                    ({column: _sql_cell(value) for column, value in cells_of[row["spec_hash"]](row).items()}
                     for row in rows), (("spec_hash", "versions", "spec_hash"),)),
        ExportTable("notes", {"topic": str, "text": str}, "topic",
                    [{"topic": "randomized columns", "text": RANDOMIZED_NOTE},
                     {"topic": "survey", "text": f"{record.id}: {record.survey.title}, {describe_version(record)}"}]),
    ]
    yield file_bytes(lambda path: write_tables(path, tables), ".sqlite")


