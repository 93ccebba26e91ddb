"""Exports of one version's stored reports, or of every version pooled (`PooledRecord`): JSON lines, CSV,
labelled SPSS (.sav) and Stata (.dta) files, and the codebook that says what each column holds.

Private columns hold randomized reports, not answers: a table of them is not a table of the truth.
Every labelled file says so (file label, variable labels) and the codebook explains each column's
report alphabet; the estimates come from deniable (`deniable estimate`, `deniable.analysis`).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import textwrap
from dataclasses import dataclass
from typing import Callable, Iterable

from deniable.client import Question, skiplogic
from deniable.client.compliance import GroupedMechanism
from deniable.client.csv_cells import CsvLines
from deniable.client.errors import DeniableError
from deniable.client.json_text import json_number
from deniable.client.quality import section_keys
from deniable.client.reports import WAVE_COLUMN, arm_column, direct_column, group_column, option_column
from deniable.client.sample import NUMERIC_ROLES, frame_roles
from deniable.client.splitballot import SplitBallot

#: What each labelled file and the codebook say about private columns.
#: The column of a pooled export that names each row's version (its number).
VERSION_COLUMN = "version"

RANDOMIZED_NOTE = ("Columns marked [randomized] hold each respondent's randomized report, not their answer: "
                   "analyse them with deniable (deniable estimate, deniable.analysis), which removes the "
                   "randomization; tabulating them directly gives wrong shares.")


def _grouped(question: Question) -> bool:
    return isinstance(question.mechanism, GroupedMechanism)


@dataclass(frozen=True)
class PooledRecord:
    """Every version of a survey in one export: each row carries its ``version`` (number) beside its spec
    hash; columns are the union over versions (newest first), empty where a row's version lacks one."""

    versions: tuple  # SurveyRecord, oldest first

    @classmethod
    def of(cls, store, survey_id: str) -> "PooledRecord":
        return cls(tuple(store.find_version(survey_id, entry["hash"]) for entry in store.versions(survey_id)))

    @property
    def id(self) -> str:
        return self.versions[-1].id

    @property
    def survey(self):
        return self.versions[-1].survey

    @property
    def responses(self) -> int:
        return sum(v.responses for v in self.versions)

    @property
    def label(self) -> str:
        return "all versions"


def export_rows(store, record):
    """The stored rows an export of ``record`` holds: one version's, or (`PooledRecord`) every version's."""
    if isinstance(record, PooledRecord):
        return store.export_all_versions(record.id)
    return store.export(record.id, record.hash)


def versions_of(record) -> list:
    """The versions an export holds, newest first."""
    return list(reversed(record.versions)) if isinstance(record, PooledRecord) else [record]


def _union(lists) -> list:
    return list(dict.fromkeys(item for items in lists for item in items))


def export_columns(record) -> list[str]:
    columns = _union(_survey_columns(version.survey) for version in versions_of(record))
    if isinstance(record, PooledRecord):
        columns.insert(columns.index("spec_hash") + 1, VERSION_COLUMN)
    return columns


def _survey_columns(survey) -> list[str]:
    columns = ["id", "spec_hash", "received_on"]
    if survey.repeated is not None:
        columns.append(WAVE_COLUMN)
    columns += survey.sample.get("frame", [])
    columns += [seconds_column(key) for key in timed_sections(survey)]
    for qid, question in survey.questions.items():
        columns += question_columns(qid, question)
    return columns


def question_columns(qid: str, question: Question) -> list[str]:
    """The columns of a CSV (or SQLite) export that hold one question's reports."""
    split = question.split_ballot is not None
    columns = [arm_column(qid)] if split else []
    if question.type == "multi_select":
        columns += [option_column(qid, option) for option in question.options]
    elif _grouped(question):
        columns += [group_column(qid), qid]
    else:
        columns.append(qid)
    return columns + ([direct_column(qid)] if split else [])


def timed_sections(survey) -> list[str]:
    """The sections whose time a response carries (quality.section_times), by their key in the paradata."""
    return section_keys(survey) if survey.quality is not None and survey.quality.section_times else []


def seconds_column(key: str) -> str:
    return f"seconds.{key}"


def _arms(question: Question, value) -> tuple[str | None, object, object]:
    """(arm, the design's report, the direct answer) of a stored value: arm None without a split ballot."""
    if question.split_ballot is None or value is None:
        return None, value, None
    arm, report = SplitBallot.unwrap(value)
    return (arm, None, report) if arm == "direct" else (arm, report, None)


def export_jsonl(record, rows):
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


class RowCells:
    """A version's cells of one row, by column name, with what the version's spec decides worked out once (an export
    of a million rows asked the spec the same questions a million times)."""

    def __init__(self, survey):
        self.repeated = survey.repeated is not None
        self.frame = survey.sample.get("frame", [])
        self.timed = [(key, seconds_column(key)) for key in timed_sections(survey)]
        self.questions = [(qid, question, question.split_ballot is not None,
                           "options" if question.type == "multi_select" else "grouped" if _grouped(question) else "value",
                           [(option, option_column(qid, option)) for option in question.options]
                           if question.type == "multi_select" else None)
                          for qid, question in survey.questions.items()]

    def __call__(self, row) -> dict:
        cells = {"id": row["id"], "spec_hash": row["spec_hash"], "received_on": row["received_on"]}
        if VERSION_COLUMN in row:
            cells[VERSION_COLUMN] = row[VERSION_COLUMN]
        if self.repeated:
            cells[WAVE_COLUMN] = row.get("wave") or ""
        for column in self.frame:
            cells[column] = row.get(column, "")
        if self.timed:
            seconds = row.get("seconds", {})
            for key, column in self.timed:
                cells[column] = seconds.get(key, "")
        reports = row["reports"]
        for qid, question, split, kind, options in self.questions:
            value, direct = reports.get(qid), None
            if split:
                arm, value, direct = _arms(question, value)
                cells[arm_column(qid)] = arm or ""
            if kind == "options":
                for option, column in options:
                    cells[column] = "" if value is None else int(option in value)
            elif kind == "grouped":
                cells[group_column(qid)], cells[qid] = ("", "") if value is None else (value["group"], value["report"])
            else:
                cells[qid] = "" if value is None else value
            if split:
                cells[direct_column(qid)] = direct or ""
        return cells


def export_csv(record, rows):
    """One column per question, and one 0/1 column per option of a multi-select question (empty when the
    question was not answered, or, pooled, not asked in the row's version)."""
    columns = export_columns(record)
    cells_of = {version.hash: RowCells(version.survey) for version in versions_of(record)}
    lines = CsvLines()
    yield lines.line(columns)  # the header on its own: a version with no responses yet still has its columns
    for row in rows:
        cells = cells_of[row["spec_hash"]](row)
        yield lines.line([cells.get(column, "") for column in columns])


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
    codes: dict | None = None  # a coded answer's value → code (pooling recodes versions by value, not by code)
    numeric: bool = True  # written as a number (a frame's stratum or PSU labels are text)


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
#: What a frame column holds, by the role the spec's ``sample`` gives it.
FRAME_LABELS = {"weights": "design weight", "strata": "stratum", "clusters": "primary sampling unit (cluster)",
                "fpc": "population count of PSUs in the stratum (finite population correction)"}
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
    """The columns of a labelled file: one version's, or every version's pooled (`_pooled_variables`)."""
    if isinstance(record, PooledRecord):
        return _pooled_variables(record)
    taken = {"id", "spec_hash", "received_on"}
    found = [Variable("id", "Response id (random)", None, lambda row: row["id"]),
             Variable("spec_hash", "Spec hash of the version the answers were randomized under", None,
                      lambda row: row["spec_hash"]),
             Variable("received_on", "Day the response was received", None, lambda row: row["received_on"])]
    if record.survey.repeated is not None:
        taken.add(WAVE_COLUMN)
        found.append(Variable(WAVE_COLUMN, "Wave of the repeated survey the response arrived in", None,
                              lambda row: row.get("wave")))
    for column, role in frame_roles(record.survey.sample).items():
        taken.add(column)
        found.append(Variable(column, f"[frame] {FRAME_LABELS.get(role, 'public covariate')} of the invitation",
                              None, lambda row, column=column: row.get(column), numeric=role in NUMERIC_ROLES))
    for key in timed_sections(record.survey):
        name = _name(f"seconds_{key}", taken)
        found.append(Variable(name, f"[paradata] seconds on section {key} (to the nearest 10)", None,
                              lambda row, key=key: row.get("seconds", {}).get(key), numeric=True))
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
                                  else groups[report(row)["group"]], question, codes=groups))
            found.append(Variable(_name(qid, taken), f"{mark}{text}"[:256], {code: v for v, code in codes.items()},
                                  lambda row, report=report, codes=codes: None if report(row) is None
                                  else codes[report(row)["report"]], question, codes=codes))
        else:
            codes = _codes(question)
            # A yes/no answer is labelled by its own label where the question gives one ("Yes, once"), else "yes"/"no".
            labels = {code: (question.option_label(value) if question.type != "yes_no" or value in question.option_labels
                             else value) for value, code in codes.items()}
            found.append(Variable(_name(qid, taken), f"{mark}{text}"[:256], labels,
                                  lambda row, report=report, codes=codes: None if report(row) is None
                                  else codes[report(row)], question, codes=codes))
        if question.split_ballot is not None:
            found.append(Variable(_name(f"{qid}_direct", taken), f"[asked directly] {text}"[:256],
                                  {code: value for value, code in YES_NO_CODES.items()},
                                  lambda row, qid=qid, question=question: YES_NO_CODES.get(
                                      _arms(question, row["reports"].get(qid))[2]), question))
    return found


def _pooled_variables(record: PooledRecord) -> list[Variable]:
    """One variable per name over every version (newest first), each row read by its own version's variable.
    A coded answer keeps the newest version's codes and labels; a value only an older version has gets the
    next free code. A name whose meaning changed (a number become a choice, or other value labels) gets its
    older version's own variable, suffixed ``_v<version>``."""
    versions = versions_of(record)
    merged: dict[str, dict] = {}  # name → {"variable": the newest's, "readers": {hash: read}, codes…}
    taken: set = set()
    for version in versions:
        for variable in variables(version):
            name, entry = variable.name, merged.get(variable.name)
            if entry is not None and variable.codes is not None and entry["variable"].codes is not None:
                codes, labels = entry["codes"], entry["labels"]
                for value, code in variable.codes.items():
                    if value not in codes:
                        codes[value] = max(codes.values(), default=0) + 1
                        labels[codes[value]] = variable.value_labels[code]
                entry["readers"][version.hash] = _recoded(variable, codes)
                continue
            if entry is not None and variable.codes is None and entry["variable"].codes is None and \
                    variable.value_labels == entry["variable"].value_labels:
                entry["readers"][version.hash] = variable.read
                continue
            if entry is not None:
                name = _name(f"{variable.name}_v{version.version}", taken)
            taken.add(name)
            merged[name] = {"variable": variable, "readers": {version.hash: variable.read},
                            "codes": dict(variable.codes or {}), "labels": dict(variable.value_labels or {})}
    found = []
    for name, entry in merged.items():
        variable, readers = entry["variable"], entry["readers"]
        found.append(Variable(name, variable.label, entry["labels"] or None,
                              lambda row, readers=readers: (readers[row["spec_hash"]](row) if row["spec_hash"] in readers
                                                            else None),
                              variable.question, variable.option, entry["codes"] or None))
    found.insert(2, Variable(VERSION_COLUMN, "Version of the survey the response answered", None,
                             lambda row: row[VERSION_COLUMN]))
    return found


def _recoded(variable: Variable, codes: dict) -> Callable:
    """``variable.read`` with its version's codes replaced by the pooled ``codes`` of the same values."""
    to_value = {code: value for value, code in variable.codes.items()}
    return lambda row: None if (code := variable.read(row)) is None else codes[to_value[code]]


def _frame(record, rows, found: list[Variable]):
    import pandas as pd  # 0.3 s: the Stata and SPSS files only

    data = {v.name: [] for v in found}
    for row in rows:
        for v in found:
            data[v.name].append(v.read(row))
    frame = pd.DataFrame(data)
    for v in found:
        if v.numeric and v.name not in ("id", "spec_hash", "received_on", WAVE_COLUMN):  # the version is a number
            frame[v.name] = pd.to_numeric(frame[v.name]).astype("float64")
    return frame


def _labelled(record, rows, suffix: str) -> bytes:
    """The rows as a labelled SPSS or Stata file, written by pyreadstat to a temporary file and read back."""
    try:
        import pyreadstat  # the Stata and SPSS files only
    except ImportError:
        raise ExportUnavailable("SPSS and Stata exports need pyreadstat: pip install 'deniable[analysis]'") from None
    found = variables(record)
    frame = _frame(record, rows, found)
    labels = {v.name: v.label for v in found}
    values = {v.name: v.value_labels for v in found if v.value_labels}
    title = f"deniable export: {record.id} {describe_version(record)}"

    def write(path: str) -> None:
        if suffix == ".sav":
            pyreadstat.write_sav(frame, path, file_label=title[:64], column_labels=labels,
                                 variable_value_labels=values, note=textwrap.wrap(RANDOMIZED_NOTE, 80))  # SPSS: 80-character lines
        else:
            # Stata: labels at most 80 characters; value labels on whole-number columns.
            pyreadstat.write_dta(frame, path, file_label=title[:80], column_labels={k: v[:80] for k, v in labels.items()},
                                 variable_value_labels=values, version=15)

    return file_bytes(write, suffix)


def file_bytes(write, suffix: str) -> bytes:
    """What ``write(path)`` writes to a file (a library that writes only to a path: pyreadstat, sqlite-utils), read
    back; the temporary file is gone afterwards, whatever happened."""
    handle, path = tempfile.mkstemp(suffix=suffix)
    os.close(handle)
    try:
        write(path)
        with open(path, "rb") as written:
            return written.read()
    finally:
        os.unlink(path)


def export_sav(record, rows):
    yield _labelled(record, rows, ".sav")


def export_dta(record, rows):
    yield _labelled(record, rows, ".dta")


def describe_reports(question: Question) -> str:
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


CSV_AND_CODES = ("CSV files have one 0/1 column per option of a multi-select question, named `question.option`; "
                 "SPSS and Stata files name it `question_option` and code the other answers as below "
                 "(text in CSV). An empty CSV cell is no answer; any other text is one, `None` and `NA` included "
                 "(options may be named so): read the file as text, `pandas.read_csv(path, dtype=str, "
                 "keep_default_na=False)` or R's `read.csv(path, colClasses = \"character\", na.strings = \"\")`, "
                 "or use `deniable.analysis.load(path, spec=...)`.\n\n")


def describe_version(record) -> str:
    """What an export holds, for titles, messages and the audit log: "version 2" or "versions 1, 2, 3"."""
    if isinstance(record, PooledRecord):
        return "versions " + ", ".join(str(v.version) for v in record.versions)
    return f"version {record.version}"


def codebook(record, rows=()) -> Iterable[str]:
    """A plain-text (Markdown) description of every column: question, privacy, report alphabet, codes."""
    if isinstance(record, PooledRecord):
        yield from _pooled_codebook(record)
        return
    yield (f"# Codebook: {record.survey.title}\n\nSurvey `{record.id}`, version {record.version} "
           f"(spec hash {record.hash}).\n\n{RANDOMIZED_NOTE}\n\n{CSV_AND_CODES}")
    yield from _sample_section(record.survey, "##")
    yield from _questions(record.survey, "##")


def _sample_section(survey, heading: str) -> Iterable[str]:
    """The spec's sample design (what `deniable estimate` uses by default) and the frame columns: what each holds."""
    if not survey.sample:
        return
    roles = ", ".join(f"{role} `{name}`" for role, name in survey.sample.items() if role != "frame")
    yield f"{heading} Sample design\n\n"
    if roles:
        yield (f"The spec names the sample design: {roles}. `deniable estimate` and the dashboard estimate with it "
               "(design-based standard errors; `--design none` for the unweighted view).\n\n")
    frame = frame_roles(survey.sample)
    if frame:
        yield ("Columns from the invitations' sampling frame: each response carries the frame row of the invitation "
               "its token came with (empty for a response sent without one). Public design variables, not answers; "
               "every row is shared by several invitations.\n\n")
        yield "".join(f"- `{column}`: {FRAME_LABELS.get(role, 'public covariate')}\n" for column, role in frame.items())
        yield "\n"


def _pooled_codebook(record: PooledRecord) -> Iterable[str]:
    newest = record.versions[-1]
    yield (f"# Codebook: {newest.survey.title}\n\nSurvey `{record.id}`, {describe_version(record)} pooled: each row is "
           f"one response, and its `{VERSION_COLUMN}` column (with `spec_hash`) says which version it answered. "
           "A column a version does not have is empty in its rows. Estimate pooled versions with deniable "
           "(`deniable estimate --all-versions`), which pools a question only where its randomization is the same "
           f"in every version.\n\n{RANDOMIZED_NOTE}\n\n"
           "## The pooled SPSS and Stata files\n\nEach coded answer keeps the newest version's code; an answer only "
           "an older version offered gets the next free code; a column whose meaning changed between versions "
           "gets the older version's own variable, suffixed `_v<version>`. Codes in the pooled files:\n\n")
    for variable in variables(record):
        if variable.value_labels:
            codes = ", ".join(f"{code} = {label}" for code, label in sorted(variable.value_labels.items()))
            yield f"- `{variable.name}`: {codes}\n"
    yield "\n"
    for version in reversed(record.versions):
        yield (f"## Version {version.version} (spec hash {version.hash}, {version.responses} responses)\n\n"
               "As this version asked its questions; codes below are this version's own (those of a one-version "
               f"export).\n\n{CSV_AND_CODES}")
        yield from _sample_section(version.survey, "###")
        yield from _questions(version.survey, "###")


def describe_privacy(question: Question) -> str:
    if not question.is_private:
        return "public: sent as given, not randomized"
    who = "by the respondent" if question.mechanism.respondent_randomizes else "on the respondent's device"
    return f"randomized {who}: {question.mechanism.design}, ε = {question.epsilon:.4g}"


def _questions(survey, heading: str) -> Iterable[str]:
    taken = {"id", "spec_hash", "received_on"}
    for qid, question in survey.questions.items():
        private = question.is_private
        privacy = describe_privacy(question)
        split = question.split_ballot
        names = ([_name(f"{qid}_arm", taken)] if split is not None else []) + (
            [_name(f"{qid}_{o}", taken) for o in question.options] if question.type == "multi_select"
            else [_name(f"{qid}_group", taken), _name(qid, taken)] if _grouped(question)
            else [_name(qid, taken)]) + ([_name(f"{qid}_direct", taken)] if split is not None else [])
        yield (f"{heading} `{qid}`{' [randomized]' if private else ''}\n\n"
               f"- Text: {question.text}\n- Type: {question.type}\n- Privacy: {privacy}\n"
               f"- Report values: {describe_reports(question)}\n"
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
            yield f"- Asked of: respondents with {skiplogic.to_text(condition)} (empty for the others)\n"
        yield "\n"


class ExportUnavailable(DeniableError):
    """A format whose library is not installed."""

    status = 501
