"""The data `load` reads: a survey's versions with their reports, pooled question by question where the randomization
is the same (`SurveyData`), and the words for a change that forbids pooling. What `load` returns, `LoadedSurvey`, is
this with the estimates as methods (`loaded_survey`): the modules that estimate read this one, never that one."""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from deniable.client import ReportError, Survey, grouping_question, skiplogic
from deniable.client.reports import WAVES
from deniable.client.versions import channel_difference
from deniable.client.versions import label as version_label

from .counting import key as _key
from .counting import level_keys, tally
from .errors import LoadError, PoolingError

#: How a split ballot's direct-arm counts are keyed among a question's counts: (DIRECT, answer).
DIRECT = "direct"


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
    waves: list | None = None  # an export file's wave labels (a database or server lists its own)
    #: Columns that are no question's, one row per response by id: an export's own (design variables, data the
    #: researcher joined) or the invitations' frame, for `SampleDesign` to name. None: there are none. A callable
    #: reads them when first asked (`columns`).
    auxiliary: pd.DataFrame | Callable | None = field(default=None, repr=False)
    #: A repeated survey's wave label per response (a Series by response id), read when a design needs it.
    wave_labels: Callable | None = field(default=None, repr=False)
    #: What the spec's quality checks flag among its responses (`client.quality`): {flagged, failed_check, too_fast};
    #: None where the source does not say (an export file, a server).
    flags: dict | None = None
    #: Whether the flagged responses are left out of every count, frame and n.
    left_out: bool = False

    def columns(self) -> pd.DataFrame | None:
        """`auxiliary`, read once."""
        if callable(self.auxiliary):
            self.auxiliary = self.auxiliary()
        return self.auxiliary if isinstance(self.auxiliary, pd.DataFrame) else None

    def column(self, name: str) -> pd.Series:
        """One column of the rows its responses carry (`SurveyData.versions_grouped_by` names the versions that
        carry it)."""
        columns = self.columns()
        if columns is None or name not in columns.columns:
            raise LoadError(f"version {self.spec_hash}: its responses carry no column {name!r}", "by")
        return columns[name]

    @property
    def label(self) -> str:
        return version_label(self.number, self.spec_hash)


class SurveyData:
    """One version of a survey with its reports, or several pooled (``load(..., all_versions=True)``).
    Build with `load` (which gives its `LoadedSurvey`).

    Pooled, each question is estimated over the versions that ask it, provided its randomization
    (design, answers, exact channel) and whom skip logic asks it of are the same in all of them: a
    reworded question keeps its data, a changed design refuses with `PoolingError` naming the change.
    """

    def __init__(self, versions: list[Version], source: str, close=None):
        # What it opened (a database connection; on PostgreSQL one of the process's pool) is closed by `close`, at the
        # end of a ``with`` block, or when it is garbage-collected, whichever comes first: a pooled connection never
        # closed made a process's 33rd `load` wait for the pool and fail.
        self._closer = weakref.finalize(self, close) if close is not None else None
        if self._closer is not None:
            self._closer.atexit = False  # at exit the process's connections go with it (the server may be gone first)
        self.versions = sorted(versions, key=lambda v: (v.number is None, v.number or 0))
        newest = self.versions[-1]
        self.survey = newest.survey  # the newest version: texts, order and conditions shown
        self.spec_hash = newest.spec_hash
        self.source = source
        self.n = sum(v.n for v in self.versions)
        #: The responses the quality checks flag, over the versions loaded; ``left_out``: whether they are left out.
        known = [v.flags for v in self.versions if v.flags is not None]
        self.flags = {key: sum(f[key] for f in known) for key in ("flagged", "failed_check", "too_fast")} \
            if known else None
        self.left_out = any(v.left_out for v in self.versions)
        self._cache: dict = {}
        self._pools: dict = {}
        self._auxiliary: pd.DataFrame | None = None  # `auxiliary`, once read
        self._wave_order: list | None = None  # the waves' count keys, in the order they opened (`waves`)

    def flagged_words(self) -> str | None:
        """How many responses the spec's quality checks flag and why, in words (None: none flagged, or the source does
        not say): "70 responses flagged by the quality checks (70 answered an attention check otherwise)"."""
        flags = self.flags
        if not flags or not flags["flagged"]:
            return None
        why = "; ".join(part for part in (
            f"{flags['failed_check']} answered an attention check otherwise" if flags["failed_check"] else "",
            f"{flags['too_fast']} took less than the spec's min_seconds in all" if flags["too_fast"] else "") if part)
        return f"{flags['flagged']} responses flagged by the quality checks ({why})"

    def close(self):
        """Release what `load` opened for this survey (nothing for a file, a server, or a store passed in); what was
        read stays readable, anything else is a `LoadError`. Closing twice is harmless."""
        if self._closer is not None:
            self._closer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

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

    def versions_grouped_by(self, by: str) -> list[Version]:
        """The versions whose responses can be grouped by ``by``: those that ask that public question, the repeated
        ones for WAVES, those whose responses carry that column (`is_column`)."""
        if by == WAVES:
            return [v for v in self.versions if v.survey.repeated is not None]
        if self.is_column(by):
            return [v for v in self.versions if (columns := v.columns()) is not None and by in columns.columns]
        return self.versions_for(by)

    def is_column(self, by: str) -> bool:
        """Whether ``by`` is a column of the data that no version asks as a question: a column of the sampling frame
        the invitations carried (a spec forbids a frame column named like a question), or of an export (a design
        variable, data joined). Its values group responses as a public question's do."""
        if by == WAVES or any(by in v.survey.questions for v in self.versions):
            return False
        return by in self.auxiliary().columns

    def question(self, question_id: str):
        """The question as the newest version that asks it has it."""
        return self.versions_for(question_id)[-1].survey.questions[question_id]

    def population(self, question_id: str) -> str | None:
        return population(self.versions_for(question_id)[-1].survey, question_id)

    @property
    def repeated(self) -> bool:
        """Whether the survey is a panel (repeated: true): its responses carry the wave they arrived in."""
        return any(v.survey.repeated is not None for v in self.versions)

    @property
    def pools_waves(self) -> bool:
        """Whether a figure of every response pools a panel's waves: one person's memoized reports in several of them
        are correlated, which its standard errors and tests must allow for (`pooled`, `Sample.over_waves`)."""
        return self.repeated and len(self.waves) > 1

    @property
    def waves(self) -> list[str]:
        """The labels of the waves with responses, in the order they opened."""
        if not self.repeated:
            return []
        return [json.loads(k) for k in self._wave_keys()]

    def _wave_keys(self) -> list:
        if self._wave_order is None:
            ordered: dict = {}
            for version in self.versions:
                if version.survey.repeated is None:
                    continue
                first = next(iter(version.survey.questions))
                for key in (version.counter(first, WAVES) if version.waves is None else map(_key, version.waves)):
                    ordered[key] = None
            self._wave_order = list(ordered)
        return self._wave_order

    def _raw_counts(self, question_id: str, by: str | None) -> dict:
        if (question_id, by) not in self._cache:
            wanted = self.versions_for(question_id)
            if by == WAVES:
                if not self.repeated:
                    raise LoadError(f"survey {self.survey.id!r} is not repeated: its responses have no waves", "by")
                wanted = [v for v in wanted if v.survey.repeated is not None]
            elif by is not None:
                grouping = {v.spec_hash for v in self.versions_grouped_by(by)}
                wanted = [v for v in wanted if v.spec_hash in grouping]
            column = by is not None and self.is_column(by)
            total: dict = {}
            for version in wanted:
                split = version.survey.questions[question_id].split_ballot
                counted = (_column_counts(version, question_id, by) if column and by is not None
                           else version.counter(question_id, by))
                for group, counts in counted.items():
                    into = total.setdefault(group, {})
                    for report, count in counts.items():
                        if split is not None:  # the randomized arm counts as the design's reports, the direct one apart
                            arm, inner = split.key_of(report)
                            report = inner if arm == "randomized" else (DIRECT, inner)
                        into[report] = into.get(report, 0) + count
            self._cache[question_id, by] = total
        return self._cache[question_id, by]

    def fingerprint(self, question_id: str, design=None) -> tuple:
        """What an estimate of ``question_id`` (and what is shown beside it) is a function of, as a hashable key: the
        newest spec, the versions that ask it, its report counts (both arms of a split ballot), wave by wave for a
        repeated survey, and whether flagged responses are left out. With a sample ``design``, which reads every
        response's own row, also the source and each version's number of responses (any new response may move the
        weights). Two loads with the same fingerprint give the same estimate; a response that does not answer the
        question leaves its fingerprint unchanged (without a design)."""
        versions = self.versions_for(question_id)
        key = [self.spec_hash, question_id, tuple((v.number, v.spec_hash) for v in versions), self.left_out,
               _frozen(self._raw_counts(question_id, None))]
        if self.repeated:
            key.append(_frozen(self._raw_counts(question_id, WAVES)))
        if design is not None:
            key += [self.source, repr(design), tuple(v.n for v in self.versions)]
        return tuple(key)

    def question_counts(self, question_id: str, by: str | None = None, level=None) -> np.ndarray:
        """Counts of each report value of a question, in the mechanism's report order (summed over
        the pooled versions). A split ballot's randomized arm only: its direct arm is `direct_counts`."""
        question = self.question(question_id)
        raw = self._raw_counts(question_id, by).get(None if by is None else _key(level), {})
        return np.array([raw.get(_key(r), 0) for r in question.mechanism.reports], dtype=np.int64)

    def direct_counts(self, question_id: str, by: str | None = None, level=None) -> np.ndarray:
        """A split ballot's direct arm: counts of each answer as given, in the question's answer order (zeros
        where no version asks it directly)."""
        question = self.question(question_id)
        raw = self._raw_counts(question_id, by).get(None if by is None else _key(level), {})
        return np.array([raw.get((DIRECT, _key(a)), 0) for a in question.mechanism.answers], dtype=np.int64)

    def has_split_ballot(self, question_id: str) -> bool:
        """Whether some version asks ``question_id`` with a split ballot."""
        return any(v.survey.questions[question_id].split_ballot is not None for v in self.versions_for(question_id))

    def levels(self, by: str) -> list:
        """The values of a public question present in the data, in the question's order (the waves, for WAVES)."""
        if by == WAVES:
            return self.waves
        if self.is_column(by):
            return _column_levels(pd.concat([v.column(by) for v in self.versions_grouped_by(by)]))
        if not any(by in v.survey.questions for v in self.versions):
            columns = list(self.auxiliary().columns)
            raise LoadError(f"by: no question or column {by!r} in survey {self.survey.id!r}" +
                            (f" (its data's columns: {', '.join(map(str, columns))})" if columns else ""), "by")
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

    def auxiliary(self) -> pd.DataFrame:
        """The columns that are no question's (an export's design variables or joined data, the invitations' frame
        rows), by response id."""
        if self._auxiliary is None:
            parts = [columns for v in self.versions if (columns := v.columns()) is not None]
            self._auxiliary = pd.concat(parts) if parts else pd.DataFrame()
        return self._auxiliary

    def design_frame(self, question_id: str, names) -> pd.DataFrame:
        """One row per response: ``question_id``'s reports and the columns ``names`` (public questions, or columns
        of `auxiliary`), indexed by response id: what a `sample_design.SampleDesign` is resolved against."""
        questions = [name for name in names if name in self.survey.questions and name != question_id]
        frame = self.frame([question_id, *questions])
        if WAVES in names:  # each response's wave: the waves as domains of the sample
            labels = [v.wave_labels() for v in self.versions if v.wave_labels is not None]
            if not labels:
                raise LoadError("waves: this data has no wave per response (a repeated survey's database, server "
                                "or export has)", "by")
            frame[WAVES] = pd.concat(labels).reindex(frame.index)
        others = [name for name in names if name not in self.survey.questions and name != WAVES]
        if others:
            extra = self.auxiliary()
            missing = [name for name in others if name not in extra.columns]
            if missing:
                available = [*self.survey.questions, *extra.columns]
                raise LoadError(f"no column {', '.join(map(repr, missing))} in the data (questions and columns: "
                                f"{', '.join(map(str, available))})", missing[0])
            frame = frame.join(extra[others], how="left")
        return frame

    def __repr__(self):
        which = ("versions " + ", ".join(v.label for v in self.versions)) if self.pooled else \
            f"version {self.versions[0].label}"
        return f"<LoadedSurvey {self.survey.id} {which} n={self.n} from {self.source}>"


def nothing_to_estimate(loaded, question_id: str, by: str | None = None, level=None) -> str | None:
    """Why a loaded question has no estimate yet (None: it has one), overall or among the respondents with ``by`` =
    ``level``: no reports at all, none from the people skip logic asks it of, or (a split ballot early in fieldwork)
    none from the randomized arm. Every surface says it in these words: `estimate` and `compare` refuse with them,
    the long table and the dashboard list the question (or the group) with them, `subgroups` leaves the group out."""
    if loaded.question_counts(question_id, by, level).sum() > 0:
        return None
    direct = int(loaded.direct_counts(question_id, by, level).sum()) if loaded.has_split_ballot(question_id) else 0
    if direct:
        return no_randomized_reports(direct)
    population = loaded.population(question_id)
    return "no reports yet" + (f" from {population}" if population else "")


def no_randomized_reports(direct: int) -> str:
    return f"no reports from the randomized arm yet ({direct} from the direct arm); the design's estimate needs at least one"


def population(survey, question_id: str) -> str | None:
    """Whom skip logic asks ``question_id`` of ("respondents with worked = 'yes'"); None: everyone."""
    condition = survey.condition(question_id)
    return None if condition is None else f"respondents with {skiplogic.to_text(condition)}"


def _column_counts(version: Version, question_id: str, by: str) -> dict:
    """{level key: {report key: count}} of one version's reports of ``question_id``, grouped by the column ``by``
    of the rows its responses carry (a response without a value there is in no group)."""
    answers = version.framer([question_id])[question_id]
    keys = level_keys(version.column(by).reindex(answers.index))
    space = version.survey.questions[question_id].report_space
    return {level: tally(space, answers[(keys == level).to_numpy()]) for level in dict.fromkeys(keys.dropna())}


def _column_levels(values: pd.Series) -> list:
    """The distinct values of a column, in order: numbers by size, anything else by its text."""
    present: dict = {}
    for value, level in zip(values, level_keys(values)):
        if level is not None:
            present.setdefault(level, value)
    found = list(present.values())
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in found)
    return sorted(found, key=(lambda v: v) if numeric else str)


def _frozen(counts: dict) -> tuple:
    """{group: {report: count}} as a sorted tuple (reports are strings, numbers or tuples of them)."""
    return tuple(sorted(((repr(group), tuple(sorted((repr(report), count) for report, count in reports.items())))
                         for group, reports in counts.items())))
