"""Load reports for analysis: from the server's database, a running server, or an export file.

A database (SQLite or PostgreSQL, any schema from 1 on) is read through `deniable.storage`'s
read-only reader, the one code that knows the tables; counting happens where the data sit (in the
database, through storage), by the server for a URL, with pandas for a file. A million
responses never become a million Python objects unless row-level data are asked for
(`LoadedSurvey.frame`, for regression).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
from pathlib import Path

import pandas as pd

from deniable.client import Survey
from deniable.client.compliance import GroupedMechanism
from deniable.client.csv_cells import from_spreadsheet
from deniable.client.json_text import canonical_json
from deniable.client.reports import WAVE_COLUMN, WAVES, arm_column, direct_column, group_column, option_column
from deniable.client.splitballot import SplitBallot
from deniable.client.versions import VersionError, resolve_version
from deniable.storage import StorageError, resolve_database

from .counting import key as _key
from .counting import payload_counter, tally
from .errors import LoadError
from .loaded_survey import LoadedSurvey
from .stored import from_database, read_store
from .survey_data import Version


def load(source=None, survey_id: str | None = None, *, db=None, store=None, url=None, token=None, spec=None,
         spec_hash=None, version=None, all_versions: bool = False, leave_out_flagged: bool = False) -> LoadedSurvey:
    """Load a survey's reports.

    * ``load(db="deniable.db", survey_id="tax")``: the server's database (a SQLite file, read only,
      or a ``postgresql://`` URL); the loaded survey owns the connection it opened: ``with load(…) as data:``,
      or ``data.close()`` (it is also closed when ``data`` is garbage-collected);
    * ``load(store=…, survey_id="tax")``: an open `deniable.storage.Store` (a server's request's), which stays the
      caller's to close;
    * ``load(url="https://…", survey_id="tax", token="<admin token>")``: a running server;
    * ``load("tax.csv", spec="tax.yaml")`` or ``.jsonl``: an export plus its spec; its columns that are no
      question's (design variables, data you joined) stay, for a `SampleDesign` to name;
    * ``load(dataframe, spec="tax.yaml")``: a pandas DataFrame laid out as a CSV export.

    Which version: the current one by default; ``version=2``, or ``spec_hash=`` with the full hash or a
    unique prefix of it (the 12 characters shown everywhere); ``all_versions=True`` pools every version,
    question by question where its randomization is the same (see `LoadedSurvey`).

    ``leave_out_flagged=True`` leaves out the responses the spec's quality checks flag (a wrong answer to an
    instructed item, under ``quality.min_seconds`` in all: `deniable.client.quality`) from every count and frame;
    ``data.flags`` says how many were flagged and why either way. It needs a database (db= or store=).
    """
    if all_versions and (spec_hash is not None or version is not None):
        raise LoadError("all_versions: give it, or one version (spec_hash= or version=), not both")
    if isinstance(source, pd.DataFrame):  # a table in memory, laid out as a CSV export (a notebook's own data)
        _without_flags(leave_out_flagged)
        if spec is None:
            raise LoadError("a DataFrame needs its spec (spec=path or Survey)")
        survey = spec if isinstance(spec, Survey) else Survey.from_file(spec)
        # A cell holding a list or a mapping (a multi-select report, a grouped one) is written as the JSON an export
        # holds; str() would write Python's repr, which no reader takes.
        cells = source.astype(object).where(source.notna(), "")
        raw = cells.map(lambda v: canonical_json(v) if isinstance(v, (list, dict)) else str(v))
        if "id" not in raw:
            raw.insert(0, "id", [f"row{i}" for i in range(len(raw))])
        return _from_table(raw, survey, spec_hash, "a DataFrame", "memory:DataFrame")
    if db is None and url is None and source is not None:
        path = Path(source)
        if path.suffix.lower() in (".csv", ".jsonl", ".ndjson", ".json"):
            _without_flags(leave_out_flagged)
            return _from_file(path, spec, spec_hash)
        db = source
    chosen = {"spec_hash": spec_hash, "version": version, "all_versions": all_versions}
    if store is not None:
        if db is not None or url is not None:
            raise LoadError("load(): give one of db=, store= and url=", "store")
        return read_store(store, survey_id, owned=False, leave_out_flagged=leave_out_flagged, choose=_choose, **chosen)
    if url is not None:
        _without_flags(leave_out_flagged)
        return _from_server(url, survey_id, token, **chosen)

    try:
        db = resolve_database(db, default=None)
    except StorageError:
        raise LoadError("load() needs db=… (a SQLite file or a database URL), url=… or an export file with spec=…; "
                        "or set $DENIABLE_DATABASE_URL", "db") from None
    return from_database(db, survey_id, leave_out_flagged=leave_out_flagged, choose=_choose, **chosen)


def _without_flags(leave_out_flagged: bool):
    if leave_out_flagged:
        raise LoadError("leave_out_flagged: read the database (db=… or store=…); an export or a server's counts do "
                        "not carry the quality flags", "leave_out_flagged")


def _choose(source: str, versions: list[dict], survey_id: str, current: str, spec_hash, version, all_versions) -> list[dict]:
    """The stored versions asked for: all of them, or the one named (the current one by default)."""
    if all_versions:
        return versions
    try:
        return [resolve_version(versions, survey_id, spec_hash if spec_hash or version is not None else current, version)]
    except VersionError as error:
        raise LoadError(f"{source}: {error.message}") from None


# --- a running server -----------------------------------------------------------------------------

def _get(url: str, token: str | None):
    import urllib.request  # with http.client and the e-mail parser, 20 ms of every estimate's CPU: reading a server only

    request = urllib.request.Request(url, headers={"Accept": "application/json",
                                                   **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        try:
            message = json.loads(error.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {error.code}"
        raise LoadError(f"{url}: {message}") from None
    except urllib.error.URLError as error:
        raise LoadError(f"{url}: cannot connect ({error.reason})") from None


def _from_server(base, survey_id, token, **chosen) -> LoadedSurvey:
    if survey_id is None:
        raise LoadError("survey_id: required with url=")
    base = base.rstrip("/") + f"/api/v1/surveys/{urllib.parse.quote(survey_id, safe='')}"
    current = json.loads(_get(base, None))["hash"]
    stored = json.loads(_get(f"{base}/versions?specs=1", token))["versions"]

    def version(entry) -> Version:
        survey = Survey.from_dict(entry["spec"])
        if survey.hash != entry["hash"]:
            raise LoadError(f"{base}: the served spec of version {entry['version']} does not hash to {entry['hash']}")
        grouped: dict = {}

        def counted(by):
            if by not in grouped:
                query = f"?spec_hash={entry['hash']}" + ("" if by is None else f"&by={urllib.parse.quote(by)}")
                grouped[by] = json.loads(_get(f"{base}/counts{query}", token))
            return grouped[by]

        exported: list = []

        def records():  # the version's JSONL export, read once for its reports and its other columns
            if not exported:
                text = _get(f"{base}/export?format=jsonl&spec_hash={entry['hash']}", token).decode("utf-8")
                exported.append([json.loads(line) for line in text.splitlines() if line.strip()])
            return exported[0]

        def framer(question_ids):
            rows = records()
            return pd.DataFrame([{qid: row["reports"].get(qid) for qid in question_ids} for row in rows],
                                index=pd.Index([row["id"] for row in rows], name="response_id"), columns=question_ids)

        def frame_columns():
            rows = records()
            extras = [{k: v for k, v in row.items() if k not in _JSONL_FIELDS} for row in rows]
            return pd.DataFrame(extras, index=pd.Index([row["id"] for row in rows], name="response_id")) \
                if any(extras) else None

        def wave_labels():
            rows = records()
            return pd.Series([row.get("wave") for row in rows], index=pd.Index([row["id"] for row in rows],
                             name="response_id"), dtype=object)

        return Version(entry["version"], entry["hash"], survey, entry["responses"], payload_counter(counted), framer,
                       auxiliary=frame_columns, wave_labels=wave_labels if survey.repeated is not None else None)

    return LoadedSurvey([version(e) for e in _choose(base, stored, survey_id, current, **chosen)], f"server:{base}")


# --- export files ---------------------------------------------------------------------------------

def _from_file(path: Path, spec, spec_hash) -> LoadedSurvey:
    if spec is None:
        raise LoadError(f"{path}: an export needs its spec (spec=path or Survey)")
    if not path.exists():
        raise LoadError(f"{path}: no such file")
    if isinstance(spec, (list, tuple)):
        return _from_file_versions(path, [s if isinstance(s, Survey) else Survey.from_file(s) for s in spec])
    survey = spec if isinstance(spec, Survey) else Survey.from_file(spec)
    if path.suffix.lower() == ".csv":
        return _from_table(pd.read_csv(path, dtype=str, keep_default_na=False), survey, spec_hash, str(path),
                           f"file:{path}")
    return _from_records(_jsonl_records(path), survey, spec_hash, str(path), f"file:{path}")


def _jsonl_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _from_records(records: list[dict], survey: Survey, spec_hash, path: str, source: str) -> LoadedSurvey:
    """A JSONL export's records (one response each), or some of them."""
    frame = pd.DataFrame([{qid: r["reports"].get(qid) for qid in survey.questions} for r in records],
                         index=[r.get("id") for r in records])
    waves = [r.get("wave") for r in records] if any("wave" in r for r in records) else None
    days = [r.get("received_on") for r in records]
    hashes = {r.get("spec_hash") for r in records}
    extras = [{name: value for name, value in r.items() if name not in _JSONL_FIELDS} for r in records]
    auxiliary = pd.DataFrame(extras, index=frame.index) if any(extras) else None
    return _loaded(frame, survey, spec_hash, waves, days, hashes, auxiliary, path, source)


def _from_file_versions(path: Path, surveys: list) -> LoadedSurvey:
    """An export of several versions (``deniable export --all-versions``) with the spec of each: one loaded version
    per spec hash in the file, pooled as a database's versions are."""
    by_hash = {survey.hash: survey for survey in surveys}
    if path.suffix.lower() == ".csv":
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
        parts = {h: raw[raw["spec_hash"] == h] for h in dict.fromkeys(raw.get("spec_hash", []))}
    else:
        parts = {}
        for record in _jsonl_records(path):
            parts.setdefault(record.get("spec_hash"), []).append(record)
    missing = [h for h in parts if h not in by_hash]
    if missing:
        raise LoadError(f"{path}: responses of version(s) {', '.join(str(h)[:12] for h in missing)} have no spec among "
                        f"those given ({', '.join(h[:12] for h in by_hash)}); pass spec=[...] with every version's spec "
                        "(the codebook beside the export lists them)", "spec")
    versions = []
    for number, survey in enumerate(surveys, 1):
        if survey.hash not in parts:
            continue
        read = _from_table if path.suffix.lower() == ".csv" else _from_records
        loaded = read(parts[survey.hash], survey, survey.hash, str(path), f"file:{path}")
        version = loaded.versions[0]
        version.number = number
        versions.append(version)
    if not versions:
        raise LoadError(f"{path}: no responses", "spec")
    return LoadedSurvey(versions, f"file:{path}")


def _from_table(raw: pd.DataFrame, survey: Survey, spec_hash, name: str, source: str) -> LoadedSurvey:
    """A CSV export's rows (strings, "" for empty), or a DataFrame laid out as one."""
    rows = raw.to_dict("records")
    frame = pd.DataFrame({qid: [_from_csv_row(question, r) for r in rows] for qid, question in survey.questions.items()},
                         index=raw.get("id"))
    waves = list(raw[WAVE_COLUMN]) if WAVE_COLUMN in raw and survey.repeated is not None else None
    days = list(raw["received_on"]) if "received_on" in raw else None
    hashes = set(raw["spec_hash"]) if "spec_hash" in raw else set()
    own = _export_columns(survey)
    extra = [column for column in raw.columns if column not in own]
    auxiliary = raw[extra].set_axis(frame.index) if extra else None
    return _loaded(frame, survey, spec_hash, waves, days, hashes, auxiliary, name, source)


def _loaded(frame, survey, spec_hash, waves, days, hashes, auxiliary, path: str, source: str) -> LoadedSurvey:
    """One version's reports from an export (or a table laid out as one): ``path`` names it in messages."""
    hashes.discard(None)
    wanted = spec_hash or survey.hash
    if hashes and hashes != {wanted}:
        raise LoadError(f"{path}: reports were randomized under {sorted(h[:12] for h in hashes)}, "
                        f"but the spec given is version {survey.hash[:12]}")

    def counter(question_id, by):
        space = survey.questions[question_id].report_space
        if by is None:
            return {None: tally(space, frame[question_id])}
        out = {}
        if by == WAVES:
            if waves is None:
                raise LoadError(f"{path}: no wave column: only a repeated survey's export has one", "by")
            labels = pd.Series(waves, index=frame.index)
            return {_key(level): tally(space, frame.loc[labels == level, question_id])
                    for level in dict.fromkeys(waves) if level not in (None, "")}
        for level, part in frame.groupby(frame[by].map(_key)):
            out[level] = tally(space, part[question_id])
        return out

    version = Version(None, wanted, survey, len(frame), counter, lambda ids: frame[list(ids)].copy(),
                      auxiliary=auxiliary,
                      wave_labels=None if waves is None else lambda: pd.Series(waves, index=frame.index, dtype=object))
    if waves is not None:  # an export lists responses by random id: order the waves by their first day, then label
        first: dict = {}
        for wave, day in zip(waves, days or [""] * len(waves)):
            if wave not in (None, ""):
                first[wave] = min(first.get(wave, day or ""), day or "")
        version.waves = sorted(first, key=lambda wave: (first[wave], wave))
    return LoadedSurvey([version], source)


#: The fields of a JSONL export's record that are the response's own; any other is an auxiliary column.
_JSONL_FIELDS = ("id", "spec_hash", "version", "received_on", "wave", "reports")


def _export_columns(survey: Survey) -> set:
    """Every column a CSV export of ``survey`` writes for its responses; any other column of the file (design
    variables, data the researcher joined) is kept as an auxiliary column (`LoadedSurvey.auxiliary`)."""
    columns = {"id", "spec_hash", "version", "received_on", WAVE_COLUMN}
    for qid, question in survey.questions.items():
        columns |= {qid, group_column(qid), arm_column(qid), direct_column(qid)}
        if question.type == "multi_select":
            columns |= {option_column(qid, option) for option in question.options}
    return columns


def _from_csv_row(question, row: dict):
    """A question's report from a CSV export row: a multi-select one from its 0/1 option columns
    (``question.option``; older exports held the list as JSON text in one column); a grouped one from
    ``question.group`` and the answer; a split ballot's with its arm from ``question.arm``."""
    row = {from_spreadsheet(key): from_spreadsheet(value) for key, value in row.items()}
    if question.split_ballot is not None:
        arm = row.get(arm_column(question.id), "")
        if arm == "direct":
            return {"arm": arm, "report": row.get(direct_column(question.id), "")}
        text = row.get(question.id, "")
        return None if text == "" and arm == "" else SplitBallot.wrap(arm, _design_report(question, row, text))
    if question.type == "multi_select" and question.id not in row:
        bits = [row.get(option_column(question.id, option), "") for option in question.options]
        if all(bit == "" for bit in bits):
            return None
        return [option for option, bit in zip(question.options, bits) if bit == "1"]
    text = row.get(question.id, "")
    if text == "":
        return None
    return _design_report(question, row, text)


def _design_report(question, row: dict, text: str):
    if isinstance(question.mechanism, GroupedMechanism):  # cheating detection, lie detector: the group shown, then the answer
        return {"group": row.get(group_column(question.id), ""), "report": text}
    if question.type == "multi_select":
        try:
            return json.loads(text)
        except ValueError:
            raise LoadError(f"{question.id}: {text[:40]!r} is not a multi-select report (a JSON list of options, or "
                            "one 0/1 column per option)", question.id) from None
    if question.type == "number":
        value = float(text)
        return int(value) if value.is_integer() else value
    return text
