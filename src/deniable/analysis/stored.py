"""Load a survey from a deployment's database, through `deniable.storage` (the one code that knows the tables).

A loaded survey is one moment of the database, though responses keep arriving while it is read: counts, flags and
the number of responses are read together at `load`, in one read transaction (`Store.snapshot`), with the ids of the
responses the version held then (its roster) while the survey is open. Every later read (the per-response rows a
design, a regression or a grouped count needs) is its own short read transaction that first asks whether the version
still holds as many responses; responses are only ever added, so the same number is the same responses. When more
have arrived, the rows read are cut to the roster and a grouped count is made from them rather than by the database,
so the answers, the frame rows and the counts of one loaded survey always describe the same respondents. No read
transaction stays open between reads: a notebook left open would keep SQLite's log from being reset and PostgreSQL's
vacuum from removing old row versions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from deniable import storage
from deniable.client.reports import WAVES, ReportError, grouping_question
from deniable.storage import decoded_report

from .counting import key, level_keys, payload_counter, tally
from .errors import LoadError
from .loaded_survey import LoadedSurvey
from .survey_data import Version


def from_database(url: str, survey_id, leave_out_flagged: bool = False, choose=None, **chosen) -> LoadedSurvey:
    """A deployment's database, SQLite or PostgreSQL, read-only: the running totals for counts, the long reports
    table for per-response frames. Nothing is migrated or written."""
    if survey_id is None:
        raise LoadError("survey_id: required with db=", "survey_id")
    try:
        store = storage.Store(url, read_only=True)
    except storage.StorageError as error:  # storage says why: no such file, not a database, unreachable
        where = describe(store=None, url=url)
        raise LoadError(error.message if error.message.startswith(where) else f"{where}: {error.message}", "db") from None
    return read_store(store, survey_id, owned=True, leave_out_flagged=leave_out_flagged, choose=choose, **chosen)


def describe(store, url: str | None = None) -> str:
    url = str(store.url if store is not None else url)
    return storage.describe_database(url) if storage.is_postgres(url) else storage.sqlite_path(url)


def read_store(store, survey_id, owned: bool, leave_out_flagged: bool = False, choose=None, **chosen) -> LoadedSurvey:
    """The versions asked for (``choose(where, stored versions, survey id, current hash, **chosen)``), read through an
    open store at one moment; ``owned``: the loaded survey closes the store (`LoadedSurvey.close`)."""
    if survey_id is None:
        raise LoadError("survey_id: required with db= or store=", "survey_id")
    where = describe(store)
    closed: list = []  # set by LoadedSurvey.close: what was not read by then cannot be

    def reading():
        if closed:
            raise LoadError(f"{where}: this loaded survey was closed; load it again to read more", "db")
        return store

    try:
        with store.snapshot():
            current = store.get_survey(survey_id)
            records = [store.find_version(survey_id, entry["hash"])
                       for entry in choose(where, store.versions(survey_id), survey_id, current.hash, **chosen)]
            versions = [_StoredVersion(reading, where, record, current.closed, leave_out_flagged).version()
                        for record in records]
    except storage.StorageError as error:
        if owned:
            store.close()
        raise LoadError(f"{where}: {error.message}", error.field) from None
    except LoadError:
        if owned:
            store.close()
        raise

    def close():
        closed.append(True)
        if owned:
            store.close()

    return LoadedSurvey(versions, f"{store.engine.dialect}:{where}", close=close)


class _StoredVersion:
    """One version as it stood at `load` (made inside the load's read transaction), and its later reads."""

    def __init__(self, reading, where: str, record, survey_closed: bool, leave_out_flagged: bool):
        store = reading()
        self.reading, self.where, self.record, self.leave_out_flagged = reading, where, record, leave_out_flagged
        self.total = store.responses_of(record.hash)
        self.flags = store.quality_flags(record.id, record.hash)
        # Left out (leave_out_flagged): counted without them in SQL; the per-response rows read here drop their ids.
        self.dropped = (store.flagged_responses(record.id, record.hash) if leave_out_flagged and self.flags["flagged"]
                        else set())
        self.by_group = {None: store.counts(record.id, record.hash, None, leave_out_flagged=leave_out_flagged)}
        # A closed survey takes no responses, so needs no roster; reopened and answered after the load, it says so.
        self.roster = None if survey_closed else _sorted_ids(store.response_ids(record.hash), self.total)
        self.from_rows: dict = {}  # by → {question: {group: counts}}, made from the rows when responses arrived

    def version(self) -> Version:
        record = self.record
        n = self.total - (self.flags["flagged"] if self.leave_out_flagged else 0)
        counted = payload_counter(lambda by: self.by_group[by])
        return Version(record.version, record.hash, record.survey, n, self.counter(counted), self.frame,
                       auxiliary=self.frame_columns,
                       wave_labels=self.wave_labels if record.survey.repeated is not None else None,
                       flags=self.flags, left_out=self.leave_out_flagged)

    def _arrived(self, store) -> bool:
        """Have responses arrived since the load (read inside the caller's read transaction)?"""
        if store.responses_of(self.record.hash) == self.total:
            return False
        if self.roster is None:
            raise LoadError(f"{self.where}: survey {self.record.id!r} was closed when it was loaded and has taken "
                            "responses since (it was reopened): load it again", "db")
        return True

    def _rows(self, read) -> list:
        """The rows ``read(store)`` yields (response id first) of the responses the version held at the load and
        not left out, read at one moment. A list: a reader may go over the rows twice (ids, then values)."""
        store = self.reading()
        with store.snapshot():
            arrived = self._arrived(store)
            rows = list(read(store))
        if arrived and rows:
            roster = self.roster
            assert roster is not None  # responses arrived: the survey was open at the load (`_arrived`)
            ids = np.array([row[0].encode() for row in rows], dtype="S")
            at = np.minimum(np.searchsorted(roster, ids), max(len(roster) - 1, 0))
            held = roster[at] == ids if len(roster) else np.zeros(len(ids), dtype=bool)
            rows = [row for row, kept in zip(rows, held) if kept]
        return [row for row in rows if row[0] not in self.dropped] if self.dropped else rows

    def frame(self, question_ids) -> pd.DataFrame:
        question_ids = list(question_ids)
        return wide(self._rows(lambda store: store.report_rows(self.record.hash, question_ids)), question_ids)

    def frame_columns(self) -> pd.DataFrame | None:
        """The invitations' frame rows its responses carry (design variables), if any."""
        rows = self._rows(lambda store: store.frame_rows(self.record.hash))
        return pd.DataFrame([values for _, values in rows], index=pd.Index([response_id for response_id, _ in rows],
                            name="response_id")) if rows else None

    def wave_labels(self) -> pd.Series:
        rows = self._rows(lambda store: store.response_waves(self.record.hash))
        return pd.Series([wave for _, wave in rows], index=pd.Index([i for i, _ in rows], name="response_id"),
                         dtype=object)

    def counter(self, counted):
        """Counts by a public question or by wave: by the database while nothing has arrived since the load, else
        from the rows of the responses the load saw."""
        def counter(question_id, by):
            if by is None or by in self.by_group:
                return counted(question_id, by)
            if by in self.from_rows:
                return self.from_rows[by][question_id]
            store = self.reading()
            with store.snapshot():
                if not self._arrived(store):
                    self.by_group[by] = store.counts(self.record.id, self.record.hash, by,
                                                     leave_out_flagged=self.leave_out_flagged)
                    return counted(question_id, by)
            self.from_rows[by] = self._counts_from_rows(by)
            return self.from_rows[by][question_id]

        return counter

    def _counts_from_rows(self, by) -> dict:
        """{question: {group key: {report key: count}}} of the responses the load saw, grouped as `Store.counts`
        groups them (levels in the question's order, or the waves' order; a level nobody reported left out)."""
        survey = self.record.survey
        questions = list(survey.questions)
        if by != WAVES:
            try:
                grouping_question(survey, by)
            except ReportError as error:
                raise LoadError(f"{self.where}: {error.message}", error.field) from None
        answers = self.frame(questions)
        if by == WAVES:
            labels = self.wave_labels().reindex(answers.index)
            levels = [wave["label"] for wave in self.reading().waves(self.record.id)]
        else:
            labels = answers[by]
            levels = survey.questions[by].mechanism.reports
        keys = level_keys(labels)
        counts: dict = {qid: {} for qid in questions}
        for level in map(key, levels):
            chosen = (keys == level).to_numpy()
            if chosen.any():
                for qid in questions:
                    counts[qid][level] = tally(survey.questions[qid].report_space, answers.loc[chosen, qid])
        return counts


def _sorted_ids(joined: str, count: int) -> np.ndarray:
    """The ids of ``joined`` (`Store.response_ids`) as a sorted array of bytes: cut at fixed places when every id is
    as long (as every id deniable has made is), a million in 50 ms, else split."""
    if not joined:
        return np.array([], dtype="S1")
    text = (joined + ",").encode("ascii")
    width = len(text) // count if count else 0
    if width > 1 and width * count == len(text):
        table = np.frombuffer(text, dtype=np.uint8).reshape(count, width)
        if (table[:, -1] == ord(",")).all():
            return np.sort(np.ascontiguousarray(table[:, :-1]).view(f"S{width - 1}").ravel())
    return np.sort(np.array(joined.encode("ascii").split(b","), dtype="S"))


def wide(rows, question_ids) -> pd.DataFrame:
    """One row per response (by id, in id order), one column per question, from (response id, question id, stored
    text) rows, each text decoded once (`storage.decoded_report`); no long table is ever built, which at 10⁵
    responses held ~10× the frame."""
    position: dict = {}
    columns: dict = {qid: [] for qid in question_ids}
    decoded: dict = {}
    missing = float("nan")
    for response_id, qid, text in rows:
        at = position.get(response_id)
        if at is None:
            at = position[response_id] = len(position)
            for column in columns.values():
                column.append(missing)
        value = decoded.get(text)
        columns[qid][at] = value if value is not None else decoded_report(decoded, text)
    frame = pd.DataFrame(columns, index=pd.Index(list(position), name="response_id"), dtype=object)
    frame.columns.name = "question_id"
    return frame.sort_index()
