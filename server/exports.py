"""Exports of one version's stored reports: JSON lines, CSV, labelled SPSS (.sav) and Stata (.dta)
files, and the codebook that says what each column holds.

Private columns hold randomized reports, not answers: a table of them is not a table of the truth.
Every labelled file says so (file label, variable labels) and the codebook explains each column's
report alphabet; the estimates come from deniable (`deniable estimate`, `deniable.analysis`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
import textwrap
from dataclasses import dataclass
from typing import Callable, Iterable

from deniable.client import Question
from deniable.client.compliance import GroupedMechanism
from deniable.client.errors import DeniableError
from deniable.client.exact import json_number, spreadsheet_safe
from deniable.client.reports import WAVE_COLUMN, arm_column, direct_column, group_column, option_column
from deniable.client.splitballot import SplitBallot

#: What each labelled file and the codebook say about private columns.
RANDOMIZED_NOTE = ("Columns marked [randomized] hold each respondent's randomized report, not their answer: "
                   "analyse them with deniable (deniable estimate, deniable.analysis), which removes the "
                   "randomization; tabulating them directly gives wrong shares.")


def _grouped(question: Question) -> bool:
    return isinstance(question.mechanism, GroupedMechanism)


def _columns(record) -> list[str]:
    columns = ["id", "spec_hash", "received_on"]
    if record.survey.repeated is not None:
        columns.append(WAVE_COLUMN)
    for qid, question in record.survey.questions.items():
        if question.split_ballot is not None:
            columns.append(arm_column(qid))
        if question.type == "multi_select":
            columns += [option_column(qid, option) for option in question.options]
        elif _grouped(question):
            columns += [group_column(qid), qid]
        else:
            columns.append(qid)
        if question.split_ballot is not None:
            columns.append(direct_column(qid))
    return columns


def _arms(question: Question, value) -> tuple[str | None, object, object]:
    """(arm, the design's report, the direct answer) of a stored value: arm None without a split ballot."""
    if question.split_ballot is None or value is None:
        return None, value, None
    arm, report = SplitBallot.unwrap(value)
    return (arm, None, report) if arm == "direct" else (arm, report, None)


def export_jsonl(record, rows):
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def export_csv(record, rows):
    """One column per question, and one 0/1 column per option of a multi-select question (empty when the
    question was not answered)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([spreadsheet_safe(column) for column in _columns(record)])
    for row in rows:
        values = [row["id"], row["spec_hash"], row["received_on"]]
        if record.survey.repeated is not None:
            values.append(row.get("wave") or "")
        for qid, question in record.survey.questions.items():
            arm, value, direct = _arms(question, row["reports"].get(qid))
            if question.split_ballot is not None:
                values.append(arm or "")
            if question.type == "multi_select":
                values += [""] * len(question.options) if value is None else \
                    [int(option in value) for option in question.options]
            elif _grouped(question):
                values += ["", ""] if value is None else [value["group"], value["report"]]
            else:
                values.append("" if value is None else value)
            if question.split_ballot is not None:
                values.append(direct or "")
        writer.writerow([spreadsheet_safe(value) for value in values])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


# --- labelled files (SPSS, Stata) -------------------------------------------------------------------

@dataclass
class Variable:
    """One column of a labelled file: its name (valid in SPSS and Stata), label, value labels, and how
    to read it from a stored response."""

    name: str
    label: str
    value_labels: dict | None
    read: Callable
    question: Question | None = None
    option: str | None = None


def _name(wanted: str, taken: set) -> str:
    """A variable name Stata and SPSS both accept: letters, digits and _, not starting with a digit,
    at most 32 characters, unique in the file."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", wanted)
    if not re.match(r"[A-Za-z]", name):
        name = "q_" + name
    name = name[:32]
    stem, counter = name, 1
    while name.lower() in taken:
        counter += 1
        name = f"{stem[:32 - len(str(counter)) - 1]}_{counter}"
    taken.add(name.lower())
    return name


#: Codes of yes/no answers in labelled files; of a split ballot's arms.
YES_NO_CODES = {"yes": 1, "no": 0}
ARM_CODES = {"direct": 1, "randomized": 2}


def _codes(question: Question) -> dict:
    """Numeric code of each report of a question with named answers: yes 1, no 0 (also the report typed in a
    group); options 1..k; the choices of a design the respondent randomizes (same, different; …) 1..k."""
    if question.type == "yes_no" and (_grouped(question) or question.mechanism.reports == ["yes", "no"]):
        return dict(YES_NO_CODES)
    if question.type == "yes_no":
        return {report: position for position, report in enumerate(question.mechanism.reports, start=1)}
    return {option: position for position, option in enumerate(question.options, start=1)}


def _group_codes(question: Question) -> dict:
    return {group: position for position, group in enumerate(question.mechanism.groups, start=1)}


def variables(record) -> list[Variable]:
    taken = {"id", "spec_hash", "received_on"}
    found = [Variable("id", "Response id (random)", None, lambda row: row["id"]),
             Variable("spec_hash", "Spec hash of the version the answers were randomized under", None,
                      lambda row: row["spec_hash"]),
             Variable("received_on", "Day the response was received", None, lambda row: row["received_on"])]
    if record.survey.repeated is not None:
        taken.add(WAVE_COLUMN)
        found.append(Variable(WAVE_COLUMN, "Wave of the repeated survey the response arrived in", None,
                              lambda row: row.get("wave")))
    for qid, question in record.survey.questions.items():
        mark = "[randomized] " if question.is_private else ""
        text = question.text

        def report(row, qid=qid, question=question):  # the design's report (a split ballot's randomized arm)
            return _arms(question, row["reports"].get(qid))[1]

        if question.split_ballot is not None:
            found.append(Variable(_name(f"{qid}_arm", taken), f"Arm (direct or randomized) for: {text}"[:256],
                                  {code: arm for arm, code in ARM_CODES.items()},
                                  lambda row, qid=qid, question=question: ARM_CODES.get(
                                      _arms(question, row["reports"].get(qid))[0]), question))
        if question.type == "multi_select":
            for option in question.options:
                found.append(Variable(
                    _name(f"{qid}_{option}", taken), f"{mark}{text}: {question.option_label(option)}"[:256],
                    {0: "not in report", 1: "in report"},
                    lambda row, report=report, option=option: None if report(row) is None
                    else int(option in report(row)), question, option))
        elif question.type == "number":
            found.append(Variable(_name(qid, taken), f"{mark}{text}"[:256], None, report, question))
        elif _grouped(question):
            groups, codes = _group_codes(question), _codes(question)
            found.append(Variable(_name(f"{qid}_group", taken), f"Group shown for: {text}"[:256],
                                  {code: group for group, code in groups.items()},
                                  lambda row, report=report, groups=groups: None if report(row) is None
                                  else groups[report(row)["group"]], question))
            found.append(Variable(_name(qid, taken), f"{mark}{text}"[:256], {code: v for v, code in codes.items()},
                                  lambda row, report=report, codes=codes: None if report(row) is None
                                  else codes[report(row)["report"]], question))
        else:
            codes = _codes(question)
            labels = {code: (question.option_label(value) if question.type != "yes_no" else value)
                      for value, code in codes.items()}
            found.append(Variable(_name(qid, taken), f"{mark}{text}"[:256], labels,
                                  lambda row, report=report, codes=codes: None if report(row) is None
                                  else codes[report(row)], question))
        if question.split_ballot is not None:
            found.append(Variable(_name(f"{qid}_direct", taken), f"[asked directly] {text}"[:256],
                                  {code: value for value, code in YES_NO_CODES.items()},
                                  lambda row, qid=qid, question=question: YES_NO_CODES.get(
                                      _arms(question, row["reports"].get(qid))[2]), question))
    return found


def _frame(record, rows, found: list[Variable]):
    import pandas as pd

    data = {v.name: [] for v in found}
    for row in rows:
        for v in found:
            data[v.name].append(v.read(row))
    frame = pd.DataFrame(data)
    for v in found:
        if v.name not in ("id", "spec_hash", "received_on", WAVE_COLUMN):
            frame[v.name] = pd.to_numeric(frame[v.name]).astype("float64")
    return frame


def _labelled(record, rows, suffix: str) -> bytes:
    """The rows as a labelled SPSS or Stata file, written by pyreadstat to a temporary file and read back."""
    try:
        import pyreadstat
    except ImportError:
        raise ExportUnavailable("SPSS and Stata exports need pyreadstat: pip install 'deniable[analysis]'") from None
    found = variables(record)
    frame = _frame(record, rows, found)
    labels = {v.name: v.label for v in found}
    values = {v.name: v.value_labels for v in found if v.value_labels}
    title = f"deniable export: {record.id} version {record.version}"
    handle, path = tempfile.mkstemp(suffix=suffix)
    os.close(handle)
    try:
        if suffix == ".sav":
            pyreadstat.write_sav(frame, path, file_label=title[:64], column_labels=labels,
                                 variable_value_labels=values, note=textwrap.wrap(RANDOMIZED_NOTE, 80))  # SPSS: 80-character lines
        else:
            # Stata: labels at most 80 characters; value labels on whole-number columns.
            pyreadstat.write_dta(frame, path, file_label=title[:80], column_labels={k: v[:80] for k, v in labels.items()},
                                 variable_value_labels=values, version=15)
        with open(path, "rb") as written:
            return written.read()
    finally:
        os.unlink(path)


def export_sav(record, rows):
    yield _labelled(record, rows, ".sav")


def export_dta(record, rows):
    yield _labelled(record, rows, ".dta")


def _alphabet(question: Question) -> str:
    if question.type == "number":
        reports = question.mechanism.reports
        low, high, step = (json_number(value) for value in question.grid)
        return (f"numbers from {reports[0]} to {reports[-1]} in steps of {step} "
                f"(answers run from {low} to {high}; "
                + ("reports outside that range are the randomization at work)" if question.is_private
                   else "sent as given)"))
    if question.type == "multi_select":
        return "0 or 1 per option: whether the (randomized) report includes it"
    typed = ", ".join(f"{code} = {value}" for value, code in _codes(question).items())
    if _grouped(question):
        groups = ", ".join(f"{code} = {group}" for group, code in _group_codes(question).items())
        return (f"the group shown ({groups}; CSV column `{group_column(question.id)}`), and the answer typed after "
                f"following that group's instruction ({typed})")
    return typed


def codebook(record, rows=()) -> Iterable[str]:
    """A plain-text (Markdown) description of every column: question, privacy, report alphabet, codes."""
    survey = record.survey
    yield (f"# Codebook: {survey.title}\n\nSurvey `{record.id}`, version {record.version} "
           f"(spec hash {record.hash}).\n\n{RANDOMIZED_NOTE}\n\n"
           "CSV files have one 0/1 column per option of a multi-select question, named `question.option`; "
           "SPSS and Stata files name it `question_option` and code the other answers as below "
           "(text in CSV).\n\n")
    taken = {"id", "spec_hash", "received_on"}
    for qid, question in survey.questions.items():
        private = question.is_private
        who = "by the respondent" if question.mechanism.respondent_randomizes else "on the respondent's device"
        privacy = (f"randomized {who}: {question.mechanism.design}, ε = {question.epsilon:.4g}"
                   if private else "public: sent as given, not randomized")
        split = question.split_ballot
        names = ([_name(f"{qid}_arm", taken)] if split is not None else []) + (
            [_name(f"{qid}_{o}", taken) for o in question.options] if question.type == "multi_select"
            else [_name(f"{qid}_group", taken), _name(qid, taken)] if _grouped(question)
            else [_name(qid, taken)]) + ([_name(f"{qid}_direct", taken)] if split is not None else [])
        yield (f"## `{qid}`{' [randomized]' if private else ''}\n\n"
               f"- Text: {question.text}\n- Type: {question.type}\n- Privacy: {privacy}\n"
               f"- Report values: {_alphabet(question)}\n"
               f"- SPSS/Stata variable{'s' if len(names) > 1 else ''}: {', '.join(names)}\n")
        if question.type == "multi_select":
            yield "".join(f"  - `{option_column(qid, o)}`: {question.option_label(o)}\n" for o in question.options)
        if split is not None:
            arms = ", ".join(f"{code} = {arm}" for arm, code in ARM_CODES.items())
            yield (f"- Split ballot: {float(split.direct):.3g} of respondents were asked directly (told so first). "
                   f"The arm is in `{arm_column(qid)}` ({arms}); a randomized-arm report is in the columns above, a "
                   f"direct answer (1 = yes, 0 = no in SPSS/Stata) in `{direct_column(qid)}`, sent as given, NOT "
                   "randomized\n")
        condition = survey.condition(qid)
        if condition is not None:
            from deniable.client import skiplogic

            yield f"- Asked of: respondents with {skiplogic.to_text(condition)} (empty for the others)\n"
        yield "\n"


class ExportUnavailable(DeniableError):
    """A format whose library is not installed."""

    status = 501


@dataclass(frozen=True)
class ExportFormat:
    write: Callable
    mimetype: str
    binary: bool = False


EXPORT_FORMATS = {
    "csv": ExportFormat(export_csv, "text/csv"),
    "jsonl": ExportFormat(export_jsonl, "application/x-ndjson"),
    "sav": ExportFormat(export_sav, "application/x-spss-sav", binary=True),
    "dta": ExportFormat(export_dta, "application/x-stata-dta", binary=True),
    "codebook": ExportFormat(codebook, "text/markdown"),
}

#: The file name ending of each format (the codebook is Markdown).
SUFFIXES = {"csv": "csv", "jsonl": "jsonl", "sav": "sav", "dta": "dta", "codebook": "codebook.md"}
