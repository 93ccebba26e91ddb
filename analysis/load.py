"""Load reports for analysis: from the server's SQLite file, a running server, or an export file.

Counting happens where the data sit: in SQL for a database (one GROUP BY over the ``reports``
table), by the server for a URL, with pandas for a file. A million responses never become a
million Python objects unless row-level data are asked for (`LoadedSurvey.frame`, for regression).
"""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

from deniable.client import Survey

from .counting import count_reports, key as _key


class LoadError(ValueError):
    """The data could not be loaded; the message says which source and why."""


class LoadedSurvey:
    """One version of a survey with its reports. Build with `load`."""

    def __init__(self, survey: Survey, spec_hash: str, source: str, n: int, counter, framer):
        self.survey = survey
        self.spec_hash = spec_hash
        self.source = source
        self.n = n
        self._counter = counter  # (question_id, by) -> {group_key_or_None: {report_key: count}}
        self._framer = framer  # question ids -> DataFrame, one row per response
        self._cache = {}

    def _raw_counts(self, question_id: str, by: str | None):
        if (question_id, by) not in self._cache:
            self._cache[question_id, by] = self._counter(question_id, by)
        return self._cache[question_id, by]

    def question_counts(self, question_id: str, by: str | None = None, level=None) -> np.ndarray:
        """Counts of each report value of a question, in the mechanism's report order."""
        question = self._question(question_id)
        raw = self._raw_counts(question_id, by).get(None if by is None else _key(level), {})
        return np.array([raw.get(_key(r), 0) for r in question.mechanism.reports], dtype=np.int64)

    def levels(self, by: str) -> list:
        """The values of a public question present in the data, in the question's order."""
        question = self._question(by)
        if question.is_private:
            raise ValueError(f"by: {by!r} is randomized; group only by a public question (privacy: none)")
        present = self._raw_counts(by, by)
        return [value for value in question.mechanism.reports if _key(value) in present]

    def frame(self, question_ids=None) -> pd.DataFrame:
        """One row per response, one column per question (reports as values)."""
        ids = list(question_ids or self.survey.questions)
        for qid in ids:
            self._question(qid)
        return self._framer(ids)

    def _question(self, question_id: str):
        question = self.survey.questions.get(question_id)
        if question is None:
            raise ValueError(f"no question {question_id!r} in survey {self.survey.id!r}")
        return question

    def estimate(self, question_id: str, level: float = 0.95, method: str | None = None, simultaneous: bool = False,
                 language: str | None = None):
        from .results import estimate

        return estimate(self, question_id, level=level, method=method, simultaneous=simultaneous, language=language)

    def estimate_all(self, level: float = 0.95, simultaneous: bool = False, language: str | None = None) -> dict:
        """Every question with reports (each on its own n: skip logic asks some of some respondents only)."""
        return {qid: self.estimate(qid, level, simultaneous=simultaneous, language=language)
                for qid in self.survey.questions if self.question_counts(qid).sum() > 0}

    def __repr__(self):
        return f"<LoadedSurvey {self.survey.id} version {self.spec_hash[:12]} n={self.n} from {self.source}>"


def load(source=None, survey_id: str | None = None, *, db=None, url=None, token=None, spec=None, spec_hash=None) -> LoadedSurvey:
    """Load a survey's reports.

    * ``load(db="deniable.db", survey_id="tax")``: the server's SQLite file (read only);
    * ``load(url="https://…", survey_id="tax", token="<admin token>")``: a running server;
    * ``load("tax.csv", spec="tax.yaml")`` or ``.jsonl``: an export plus its spec.

    ``spec_hash`` picks a version (default: the current one, or the hash found in the file).
    """
    if db is None and url is None and source is not None:
        path = Path(source)
        if path.suffix.lower() in (".csv", ".jsonl", ".ndjson", ".json"):
            return _from_file(path, spec, spec_hash)
        db = source
    if db is not None:
        if str(db).startswith(("postgresql://", "postgres://")):
            return _from_store(str(db), survey_id, spec_hash)
        return _from_sqlite(str(db)[len("sqlite:///"):] if str(db).startswith("sqlite:///") else db, survey_id, spec_hash)
    if url is not None:
        return _from_server(url, survey_id, token, spec_hash)
    raise LoadError("load() needs db=…, url=… or an export file with spec=…")


# --- SQLite ---------------------------------------------------------------------------------------

def _from_sqlite(path, survey_id, spec_hash) -> LoadedSurvey:
    if survey_id is None:
        raise LoadError("survey_id: required with db=")
    if not Path(path).exists():
        raise LoadError(f"{path}: no such database file")
    try:
        connection = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        row = connection.execute("SELECT current_hash FROM surveys WHERE id = ?", [survey_id]).fetchone()
    except sqlite3.DatabaseError as error:
        raise LoadError(f"{path}: not a deniable database ({error})") from None
    if row is None:
        raise LoadError(f"{path}: no survey {survey_id!r}")
    spec_hash = spec_hash or row[0]
    spec_row = connection.execute("SELECT spec FROM survey_versions WHERE hash = ? AND survey_id = ?",
                                  [spec_hash, survey_id]).fetchone()
    if spec_row is None:
        raise LoadError(f"{path}: survey {survey_id!r} has no version {spec_hash!r}")
    survey = Survey.from_json(spec_row[0])
    # Schema 2 keeps running totals beside the rows (a lookup, whatever the number of responses);
    # schema 4 spreads each over a few shards, summed here.
    schema = connection.execute("PRAGMA user_version").fetchone()[0]
    totals = schema >= 2
    if schema >= 4:
        n = connection.execute("SELECT COALESCE(SUM(responses), 0) FROM version_counts WHERE spec_hash = ?",
                               [spec_hash]).fetchone()[0]
    elif totals:
        n = connection.execute("SELECT responses FROM survey_versions WHERE hash = ?", [spec_hash]).fetchone()[0]
    else:
        n = connection.execute("SELECT COUNT(*) FROM responses WHERE spec_hash = ?", [spec_hash]).fetchone()[0]

    def counter(question_id, by):
        if by is None and totals:
            rows = connection.execute("SELECT NULL, value, SUM(count) FROM report_counts WHERE spec_hash = ? "
                                      "AND question_id = ? GROUP BY value", [spec_hash, question_id])
        elif by is None:
            rows = connection.execute("SELECT NULL, value, COUNT(*) FROM reports WHERE spec_hash = ? AND question_id = ? "
                                      "GROUP BY value", [spec_hash, question_id])
        else:
            rows = connection.execute(
                "SELECT g.value, r.value, COUNT(*) FROM reports r JOIN reports g "
                "ON g.response_id = r.response_id AND g.question_id = ? "
                "WHERE r.spec_hash = ? AND r.question_id = ? GROUP BY g.value, r.value", [by, spec_hash, question_id])
        return _nest(rows)

    def framer(question_ids):
        marks = ",".join("?" * len(question_ids))
        long = pd.read_sql_query(f"SELECT response_id, question_id, value FROM reports WHERE spec_hash = ? "
                                 f"AND question_id IN ({marks})", connection, params=[spec_hash, *question_ids])
        return _pivot(long, question_ids)

    return LoadedSurvey(survey, spec_hash, f"sqlite:{path}", n, counter, framer)


def _nest(rows) -> dict:
    nested: dict = {}
    for group, value, count in rows:
        # the stored text is canonical JSON; re-key through _key so files and SQL agree
        group_key = None if group is None else _key(json.loads(group))
        nested.setdefault(group_key, {})[_key(json.loads(value))] = count
    return nested


def _pivot(long: pd.DataFrame, question_ids) -> pd.DataFrame:
    long = long.assign(value=long["value"].map(json.loads))
    wide = long.pivot(index="response_id", columns="question_id", values="value")
    return wide.reindex(columns=question_ids)


# --- PostgreSQL (through the server's storage layer) -----------------------------------------------

def _from_store(url: str, survey_id, spec_hash) -> LoadedSurvey:
    """A PostgreSQL deployment, read through `deniable.server.storage` (the one module that knows
    the schema): the running totals for counts, the long reports table for per-response frames."""
    if survey_id is None:
        raise LoadError("survey_id: required with db=")
    try:
        from deniable.server import storage
    except ImportError:
        raise LoadError("reading PostgreSQL needs the server extra: pip install 'deniable[server,postgresql]'") from None
    try:
        store = storage.Store(url, migrate=False)
        record = store.get_survey(survey_id, spec_hash)
    except storage.StorageError as error:
        raise LoadError(f"{storage.describe(url)}: {error.message}") from None
    except Exception as error:  # psycopg's connection errors
        raise LoadError(f"{storage.describe(url)}: cannot read the database ({error})") from None
    spec_hash = record.hash
    by_group: dict = {}

    def counted(by):
        if by not in by_group:
            by_group[by] = store.counts(survey_id, spec_hash, by)
        return by_group[by]

    def counter(question_id, by):
        if by is None:
            return {None: {_key(c["report"]): c["count"] for c in counted(None)["counts"][question_id] if c["count"]}}
        return {_key(g["value"]): {_key(c["report"]): c["count"] for c in g["counts"][question_id] if c["count"]}
                for g in counted(by)["groups"]}

    def framer(question_ids):
        rows = store.report_rows(spec_hash, list(question_ids))
        return _pivot(pd.DataFrame(rows, columns=["response_id", "question_id", "value"]), question_ids)

    return LoadedSurvey(record.survey, spec_hash, f"postgresql:{storage.describe(url)}", record.responses, counter, framer)


# --- a running server -----------------------------------------------------------------------------

def _get(url: str, token: str | None):
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


def _from_server(base, survey_id, token, spec_hash) -> LoadedSurvey:
    if survey_id is None:
        raise LoadError("survey_id: required with url=")
    base = base.rstrip("/") + f"/api/v1/surveys/{urllib.parse.quote(survey_id, safe='')}"
    served = json.loads(_get(base, None))
    suffix = f"?spec_hash={spec_hash}" if spec_hash else ""
    counts = json.loads(_get(f"{base}/counts{suffix}", token))
    spec_hash = counts["spec_hash"]
    if spec_hash == served["hash"]:
        survey = Survey.from_dict(served["spec"])
    else:
        raise LoadError(f"version {spec_hash[:12]} is not the current one; load its export file with its spec instead")
    if survey.hash != spec_hash:
        raise LoadError(f"{base}: the served spec does not hash to {spec_hash}")

    def counter(question_id, by):
        if by is None:
            return {None: {_key(c["report"]): c["count"] for c in counts["counts"][question_id]}}
        grouped = json.loads(_get(f"{base}/counts?by={urllib.parse.quote(by)}&spec_hash={spec_hash}", token))
        return {_key(g["value"]): {_key(c["report"]): c["count"] for c in g["counts"][question_id]}
                for g in grouped["groups"]}

    def framer(question_ids):
        text = _get(f"{base}/export?format=jsonl&spec_hash={spec_hash}", token).decode("utf-8")
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return pd.DataFrame([{qid: row["reports"].get(qid) for qid in question_ids} for row in rows],
                            index=pd.Index([row["id"] for row in rows], name="response_id"))

    return LoadedSurvey(survey, spec_hash, f"server:{base}", counts["responses"], counter, framer)


# --- export files ---------------------------------------------------------------------------------

def _from_file(path: Path, spec, spec_hash) -> LoadedSurvey:
    if spec is None:
        raise LoadError(f"{path}: an export needs its spec (spec=path or Survey)")
    survey = spec if isinstance(spec, Survey) else Survey.from_file(spec)
    if not path.exists():
        raise LoadError(f"{path}: no such file")
    if path.suffix.lower() == ".csv":
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
        rows = raw.to_dict("records")
        frame = pd.DataFrame({qid: [_from_csv_cell(survey.questions[qid], r.get(qid, "")) for r in rows]
                              for qid in survey.questions}, index=raw.get("id"))
        hashes = set(raw["spec_hash"]) if "spec_hash" in raw else set()
    else:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        frame = pd.DataFrame([{qid: r["reports"].get(qid) for qid in survey.questions} for r in records],
                             index=[r.get("id") for r in records])
        hashes = {r.get("spec_hash") for r in records}
    hashes.discard(None)
    wanted = spec_hash or survey.hash
    if hashes and hashes != {wanted}:
        raise LoadError(f"{path}: reports were randomized under {sorted(h[:12] for h in hashes)}, "
                        f"but the spec given is version {survey.hash[:12]}")

    def counter(question_id, by):
        mechanism = survey.questions[question_id].mechanism
        if by is None:
            return {None: _count_dict(mechanism, frame[question_id])}
        out = {}
        for level, part in frame.groupby(frame[by].map(_key)):
            out[level] = _count_dict(mechanism, part[question_id])
        return out

    return LoadedSurvey(survey, wanted, f"file:{path}", len(frame), counter, lambda ids: frame[list(ids)].copy())


def _count_dict(mechanism, series) -> dict:
    counts = count_reports(mechanism, [v for v in series if v is not None and not (isinstance(v, float) and np.isnan(v))])
    return {_key(r): int(c) for r, c in zip(mechanism.reports, counts) if c}


def _from_csv_cell(question, text: str):
    if text == "":
        return None
    if question.type == "multi_select":
        return json.loads(text)
    if question.type == "number":
        value = float(text)
        return int(value) if value.is_integer() else value
    return text
