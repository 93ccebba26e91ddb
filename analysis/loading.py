"""Load reports for analysis: from the server's database, a running server, or an export file.

A database (SQLite or PostgreSQL, any schema from 1 on) is read through `deniable.storage`'s
read-only reader, the one code that knows the tables; counting happens where the data sit (the
running totals, or one GROUP BY), by the server for a URL, with pandas for a file. A million
responses never become a million Python objects unless row-level data are asked for
(`LoadedSurvey.frame`, for regression).
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from deniable.client import ReportError, Survey, grouping_question
from deniable.client.versions import VersionError, resolve_version
from deniable.client.versions import label as version_label

from .counting import count_reports
from .counting import key as _key
from .errors import LoadError, PoolingError


@dataclass
class Version:
    """One stored version of a survey as loaded: its number (None for an export file), spec hash,
    spec, response count, and how to count and frame its reports."""

    number: int | None
    spec_hash: str
    survey: Survey
    n: int
    counter: Callable = field(repr=False)  # (question_id, by) -> {group_key_or_None: {report_key: count}}
    framer: Callable = field(repr=False)  # question ids -> DataFrame, one row per response

    @property
    def label(self) -> str:
        return version_label(self.number, self.spec_hash)


class LoadedSurvey:
    """One version of a survey with its reports, or several pooled (``load(..., all_versions=True)``).
    Build with `load`.

    Pooled, each question is estimated over the versions that ask it, provided its randomization
    (design, answers, exact channel) and whom skip logic asks it of are the same in all of them: a
    reworded question keeps its data, a changed design refuses with `PoolingError` naming the change.
    """

    def __init__(self, versions: list[Version], source: str):
        self.versions = sorted(versions, key=lambda v: (v.number is None, v.number or 0))
        newest = self.versions[-1]
        self.survey = newest.survey  # the newest version: texts, order and conditions shown
        self.spec_hash = newest.spec_hash
        self.source = source
        self.n = sum(v.n for v in self.versions)
        self._cache = {}
        self._pools = {}

    @property
    def pooled(self) -> bool:
        return len(self.versions) > 1

    def versions_for(self, question_id: str) -> list[Version]:
        """The versions whose reports of ``question_id`` are counted together (all of them, unless
        some do not ask it); `PoolingError` when its randomization differs between them."""
        if question_id not in self._pools:
            asking = [v for v in self.versions if question_id in v.survey.questions]
            if not asking:
                raise LoadError(f"no question {question_id!r} in survey {self.survey.id!r}", "question")
            first = asking[0]
            for other in asking[1:]:
                difference = channel_difference(first.survey, other.survey, question_id)
                if difference:
                    raise PoolingError(f"{question_id}: cannot pool versions {first.label} and {other.label}: "
                                       f"{difference}; estimate each version on its own")
            self._pools[question_id] = asking
        return self._pools[question_id]

    def question(self, question_id: str):
        """The question as the newest version that asks it has it."""
        return self.versions_for(question_id)[-1].survey.questions[question_id]

    def population(self, question_id: str) -> str | None:
        from .results import population

        return population(self.versions_for(question_id)[-1].survey, question_id)

    def _raw_counts(self, question_id: str, by: str | None) -> dict:
        if (question_id, by) not in self._cache:
            wanted = self.versions_for(question_id)
            if by is not None:
                grouping = {v.spec_hash for v in self.versions_for(by)}
                wanted = [v for v in wanted if v.spec_hash in grouping]
            total: dict = {}
            for version in wanted:
                for group, counts in version.counter(question_id, by).items():
                    into = total.setdefault(group, {})
                    for report, count in counts.items():
                        into[report] = into.get(report, 0) + count
            self._cache[question_id, by] = total
        return self._cache[question_id, by]

    def question_counts(self, question_id: str, by: str | None = None, level=None) -> np.ndarray:
        """Counts of each report value of a question, in the mechanism's report order (summed over
        the pooled versions)."""
        question = self.question(question_id)
        raw = self._raw_counts(question_id, by).get(None if by is None else _key(level), {})
        return np.array([raw.get(_key(r), 0) for r in question.mechanism.reports], dtype=np.int64)

    def levels(self, by: str) -> list:
        """The values of a public question present in the data, in the question's order."""
        try:
            question = grouping_question(self.versions_for(by)[-1].survey, by)
        except ReportError as error:
            raise LoadError(error.message, error.field) from None
        present = self._raw_counts(by, by)
        return [value for value in question.mechanism.reports if _key(value) in present]

    def frame(self, question_ids=None) -> pd.DataFrame:
        """One row per response, one column per question (reports as values); pooled, the rows of every
        version (a question a version does not ask is empty there)."""
        ids = list(question_ids or self.survey.questions)
        asked = {qid: {v.spec_hash for v in self.versions_for(qid)} for qid in ids}
        parts = []
        for version in self.versions:
            own = [qid for qid in ids if version.spec_hash in asked[qid]]
            if own:
                parts.append(version.framer(own).reindex(columns=ids))
        return pd.concat(parts) if len(parts) != 1 else parts[0]

    def estimate(self, question_id: str, level: float = 0.95, method: str | None = None, simultaneous: bool = False,
                 language: str | None = None):
        from .results import estimate

        return estimate(self, question_id, level=level, method=method, simultaneous=simultaneous, language=language)

    def estimate_all(self, level: float = 0.95, simultaneous: bool = False, language: str | None = None) -> dict:
        """Every question with reports (each on its own n: skip logic asks some of some respondents only)."""
        return {qid: self.estimate(qid, level, simultaneous=simultaneous, language=language)
                for qid in self.survey.questions if self.question_counts(qid).sum() > 0}

    def __repr__(self):
        which = ("versions " + ", ".join(v.label for v in self.versions)) if self.pooled else \
            f"version {self.versions[0].label}"
        return f"<LoadedSurvey {self.survey.id} {which} n={self.n} from {self.source}>"


def channel_difference(first: Survey, second: Survey, question_id: str) -> str | None:
    """How ``question_id`` is randomized or asked differently in two versions (None: the same), in words."""
    a, b = first.questions[question_id], second.questions[question_id]
    m, n = a.mechanism, b.mechanism
    if a.type != b.type:
        return f"the question type changed from {a.type} to {b.type}"
    if m.design != n.design:
        return f"the design changed from {m.design} to {n.design}"
    if m.answers != n.answers:
        return f"the answers changed from {_listed(m.answers)} to {_listed(n.answers)}"
    if m.reports != n.reports:
        return f"the reports changed from {_listed(m.reports)} to {_listed(n.reports)}"
    if m.exp_epsilon != n.exp_epsilon:
        return f"ε changed from {m.epsilon:.4g} to {n.epsilon:.4g}"
    if not m.same_channel(n):
        return f"the randomization probabilities changed ({_params(m)} to {_params(n)})"
    before, after = first.condition(question_id), second.condition(question_id)
    if before != after:
        from deniable.client import skiplogic

        def whom(condition):
            return "everyone" if condition is None else f"respondents with {skiplogic.to_text(condition)}"

        return f"it was asked of {whom(before)}, then of {whom(after)}"
    return None


def _listed(values) -> str:
    shown = ", ".join(map(str, values[:6])) + (", …" if len(values) > 6 else "")
    return f"[{shown}]"


def _params(mechanism) -> str:
    return ", ".join(f"{k}: {v}" for k, v in mechanism.params.items() if k != "design") or "defaults"


def load(source=None, survey_id: str | None = None, *, db=None, url=None, token=None, spec=None, spec_hash=None,
         version=None, all_versions: bool = False) -> LoadedSurvey:
    """Load a survey's reports.

    * ``load(db="deniable.db", survey_id="tax")``: the server's database (a SQLite file, read only,
      or a ``postgresql://`` URL);
    * ``load(url="https://…", survey_id="tax", token="<admin token>")``: a running server;
    * ``load("tax.csv", spec="tax.yaml")`` or ``.jsonl``: an export plus its spec.

    Which version: the current one by default; ``version=2``, or ``spec_hash=`` with the full hash or a
    unique prefix of it (the 12 characters shown everywhere); ``all_versions=True`` pools every version,
    question by question where its randomization is the same (see `LoadedSurvey`).
    """
    if all_versions and (spec_hash is not None or version is not None):
        raise LoadError("all_versions: give it, or one version (spec_hash= or version=), not both")
    if db is None and url is None and source is not None:
        path = Path(source)
        if path.suffix.lower() in (".csv", ".jsonl", ".ndjson", ".json"):
            return _from_file(path, spec, spec_hash)
        db = source
    chosen = {"spec_hash": spec_hash, "version": version, "all_versions": all_versions}
    if url is not None:
        return _from_server(url, survey_id, token, **chosen)
    from deniable.storage import StorageError, resolve_database

    try:
        db = resolve_database(db, default=None)
    except StorageError:
        raise LoadError("load() needs db=… (a SQLite file or a database URL), url=… or an export file with spec=…; "
                        "or set $DENIABLE_DATABASE_URL", "db") from None
    return _from_store(db, survey_id, **chosen)


def _choose(source: str, versions: list[dict], survey_id: str, current: str, spec_hash, version, all_versions) -> list[dict]:
    """The stored versions asked for: all of them, or the one named (the current one by default)."""
    if all_versions:
        return versions
    try:
        return [resolve_version(versions, survey_id, spec_hash if spec_hash or version is not None else current, version)]
    except VersionError as error:
        raise LoadError(f"{source}: {error.message}") from None


def _pivot(long: pd.DataFrame, question_ids) -> pd.DataFrame:
    long = long.assign(value=long["value"].map(json.loads))
    wide = long.pivot(index="response_id", columns="question_id", values="value")
    return wide.reindex(columns=question_ids)


def _from_counts(counted: Callable) -> Callable:
    """A counter over the server's counts payload (`Store.counts`, or the API's): ``counted(by)``."""
    def counter(question_id, by):
        if by is None:
            return {None: {_key(c["report"]): c["count"] for c in counted(None)["counts"][question_id] if c["count"]}}
        return {_key(g["value"]): {_key(c["report"]): c["count"] for c in g["counts"][question_id] if c["count"]}
                for g in counted(by)["groups"]}

    return counter


# --- a database, through storage's read-only reader ---------------------------------------------

def _from_store(url: str, survey_id, **chosen) -> LoadedSurvey:
    """A deployment's database, SQLite or PostgreSQL, read through `deniable.storage` (the one code
    that knows the schema, every older one included): the running totals for counts, the long
    reports table for per-response frames. Nothing is migrated or written."""
    if survey_id is None:
        raise LoadError("survey_id: required with db=", "survey_id")
    try:
        from deniable import storage
    except ImportError:  # pragma: no cover - the analysis extra installs storage's driver
        raise LoadError("reading a database needs sqlite-utils: pip install 'deniable[analysis]'") from None
    where = storage.describe(url) if storage.is_postgres(url) else storage.sqlite_path(url)
    try:
        store = storage.Store(url, read_only=True)
    except storage.StorageError as error:
        raise LoadError(error.message if error.message.startswith(where) else f"{where}: {error.message}", "db") from None
    except Exception as error:  # psycopg's connection errors, a file that is no database
        raise LoadError(f"{where}: cannot read the database ({error})", "db") from None
    try:
        current = store.get_survey(survey_id)
        records = [store.find_version(survey_id, entry["hash"])
                   for entry in _choose(where, store.versions(survey_id), survey_id, current.hash, **chosen)]
    except storage.StorageError as error:
        store.close()
        raise LoadError(f"{where}: {error.message}", error.field) from None
    except LoadError:
        store.close()
        raise

    def version(record) -> Version:
        by_group: dict = {}

        def counted(by):
            if by not in by_group:
                by_group[by] = store.counts(survey_id, record.hash, by)
            return by_group[by]

        def framer(question_ids):
            rows = store.report_rows(record.hash, list(question_ids))
            return _pivot(pd.DataFrame(rows, columns=["response_id", "question_id", "value"]), question_ids)

        return Version(record.version, record.hash, record.survey, record.responses, _from_counts(counted), framer)

    return LoadedSurvey([version(r) for r in records], f"{store.engine.dialect}:{where}")


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

        def framer(question_ids):
            text = _get(f"{base}/export?format=jsonl&spec_hash={entry['hash']}", token).decode("utf-8")
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            return pd.DataFrame([{qid: row["reports"].get(qid) for qid in question_ids} for row in rows],
                                index=pd.Index([row["id"] for row in rows], name="response_id"), columns=question_ids)

        return Version(entry["version"], entry["hash"], survey, entry["responses"], _from_counts(counted), framer)

    return LoadedSurvey([version(e) for e in _choose(base, stored, survey_id, current, **chosen)], f"server:{base}")


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
        frame = pd.DataFrame({qid: [_from_csv_row(question, r) for r in rows] for qid, question in survey.questions.items()},
                             index=raw.get("id"))
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

    return LoadedSurvey([Version(None, wanted, survey, len(frame), counter, lambda ids: frame[list(ids)].copy())],
                        f"file:{path}")


def _count_dict(mechanism, series) -> dict:
    counts = count_reports(mechanism, [v for v in series if v is not None and not (isinstance(v, float) and np.isnan(v))])
    return {_key(r): int(c) for r, c in zip(mechanism.reports, counts) if c}


def _from_csv_row(question, row: dict):
    """A question's report from a CSV export row: a multi-select one from its 0/1 option columns
    (``question.option``; older exports held the list as JSON text in one column)."""
    if question.type == "multi_select" and question.id not in row:
        bits = [row.get(f"{question.id}.{option}", "") for option in question.options]
        if all(bit == "" for bit in bits):
            return None
        return [option for option, bit in zip(question.options, bits) if bit == "1"]
    text = row.get(question.id, "")
    if text == "":
        return None
    if question.type == "multi_select":
        return json.loads(text)
    if question.type == "number":
        value = float(text)
        return int(value) if value.is_integer() else value
    return text
