"""Counting in-memory reports: each distinct value is counted by a vectorised or C-level tally, then
validated once against the mechanism's report alphabet (never once per report)."""

from __future__ import annotations

import collections
import math

import numpy as np
import pandas as pd

from deniable.client.json_text import canonical_json
from deniable.client.mechanisms import Mechanism

from .errors import AnalysisError

key = canonical_json  # counts are keyed by the same text the server stores


def is_missing(value) -> bool:
    """No report here (None, NaN, pandas' NA): a question not asked, skipped or left empty."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def randomized_report(split, value):
    """A split ballot's stored value, as the design's report: the randomized arm's report, None for the direct arm's
    answer (counted apart) and for no value."""
    if is_missing(value):
        return None
    arm, inner = split.unwrap(value)
    return inner if arm == "randomized" else None


def level_keys(values: pd.Series) -> pd.Series:
    """Each value's count key as a group's level, None where there is none (a missing value, an empty cell of a CSV)."""
    return values.map(lambda value: None if is_missing(value) or value == "" else key(value))


def tally(space, values) -> dict:
    """{report key: count} of the reports in ``values`` that are there (`is_missing`), zeros left out; ``space``: a
    question's report space (its mechanism, or its split ballot's two arms)."""
    counts = count_reports(space, [value for value in values if not is_missing(value)])
    return {key(report): int(count) for report, count in zip(space.reports, counts) if count}


def payload_counter(counted):
    """A counter over the server's counts payload (`Store.counts`, or the API's), read through ``counted(by)``:
    ``counter(question_id, by)`` → {group key, or None: {report key: count}}."""
    def counter(question_id, by):
        if by is None:
            return {None: {key(c["report"]): c["count"] for c in counted(None)["counts"][question_id] if c["count"]}}
        return {key(g["value"]): {key(c["report"]): c["count"] for c in g["counts"][question_id] if c["count"]}
                for g in counted(by)["groups"]}

    return counter


def rounded_counts(lam: np.ndarray, n: float) -> np.ndarray:
    """Counts out of ``n`` in the proportions ``lam``, whole numbers that add up to round(n) (largest remainders)."""
    total = max(int(round(n)), 1)
    exact = lam * total
    counts = np.floor(exact).astype(np.int64)
    short = total - int(counts.sum())
    if short > 0:
        counts[np.argsort(-(exact - counts))[:short]] += 1
    return counts


def count_reports(mechanism: Mechanism, reports) -> np.ndarray:
    """Counts over the mechanism's report alphabet, in its order, from a list, tuple, numpy array or pandas
    Series of report values. Missing values (None, NaN) are skipped. A value outside the alphabet raises
    ValueError naming its first position."""
    index = {key(r): i for i, r in enumerate(mechanism.reports)}
    counts = np.zeros(len(index), dtype=np.int64)
    for value, count in _tally(reports):
        try:
            position = index.get(key(mechanism.validate_report(value)))
        except (ValueError, TypeError):
            position = None
        if position is None:
            raise AnalysisError(f"reports[{_first_position(reports, value)}]: {value!r} is not a report this "
                             "mechanism can produce") from None
        counts[position] += count
    if _may_hide_booleans(mechanism, counts):
        _reject_booleans(reports)
    return counts


def _tally(reports):
    """(distinct value, count) pairs, missing values left out."""
    if isinstance(reports, pd.Series):
        if isinstance(reports.dtype, pd.CategoricalDtype):
            tallies = np.bincount(reports.cat.codes.to_numpy() + 1, minlength=len(reports.cat.categories) + 1)[1:]
            return [(category, int(c)) for category, c in zip(reports.cat.categories.tolist(), tallies) if c]
        reports = reports.to_numpy()
    if isinstance(reports, np.ndarray):
        if reports.ndim != 1:
            raise AnalysisError(f"reports: expected one dimension, got an array of shape {reports.shape}")
        if reports.dtype.kind == "b":
            return _tally(reports.tolist())  # validation rejects them by value
        if reports.dtype.kind in "iuf":
            values = reports[~np.isnan(reports)] if reports.dtype.kind == "f" else reports
            distinct, tallies = np.unique(values, return_counts=True)
            return [(v, int(c)) for v, c in zip(distinct.tolist(), tallies.tolist())]
        if reports.dtype.kind in "US":
            distinct, tallies = np.unique(reports, return_counts=True)
            return [(v, int(c)) for v, c in zip(distinct.tolist(), tallies.tolist())]
        reports = reports.tolist()
    if not isinstance(reports, (list, tuple)):
        reports = list(reports)
    if any(isinstance(value, np.generic) for value in reports):  # a list of numpy scalars: their Python values
        reports = [value.item() if isinstance(value, np.generic) else value for value in reports]
    try:
        counter = collections.Counter(reports)
    except TypeError:  # multi-select reports are lists, grouped ones mappings: count them by canonical text
        counter, first = collections.Counter(), {}
        for value in reports:
            tally = ("json", key(value)) if isinstance(value, (list, dict)) else value
            counter[tally] += 1
            first.setdefault(tally, value)
        return [(first[v], c) for v, c in counter.items()
                if first[v] is not None and not (isinstance(first[v], float) and math.isnan(first[v]))]
    return [(v, c) for v, c in counter.items() if v is not None and not (isinstance(v, float) and math.isnan(v))]


def _may_hide_booleans(mechanism, counts) -> bool:
    # True == 1 and False == 0 share a hash, so a tally can fold a boolean into the number 0 or 1; only
    # an alphabet holding those numbers needs the (slower) look at every value.
    return any(type(r) in (int, float) and r in (0, 1) and counts[i] for i, r in enumerate(mechanism.reports))


def _reject_booleans(reports):
    values = reports.tolist() if isinstance(reports, (pd.Series, np.ndarray)) else reports
    for position, value in enumerate(values):
        if isinstance(value, (bool, np.bool_)):
            raise AnalysisError(f"reports[{position}]: {value!r} is not a report this mechanism can produce")


def _first_position(reports, value) -> int:
    values = reports.tolist() if isinstance(reports, (pd.Series, np.ndarray)) else reports
    for position, candidate in enumerate(values):
        if candidate is value or (type(candidate) is type(value) and candidate == value):
            return position
        if isinstance(candidate, (list, tuple)) and isinstance(value, list) and list(candidate) == value:
            return position
    return next((p for p, c in enumerate(values) if c == value), -1)


def report_positions(mechanism: Mechanism, reports) -> np.ndarray:
    """Each report's index in the mechanism's report alphabet, -1 where there is none (None, NaN): per respondent,
    what `count_reports` tallies. A value outside the alphabet raises, as there."""
    # A column is factorized as it is (10⁶ reports in a fraction of a second: making each one a Python object first
    # took a second); anything else goes through a list.
    values = reports.astype(object) if isinstance(reports, pd.Series) else pd.Series(list(reports), dtype=object)
    try:  # scalars: the distinct values first, each keyed once
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        distinct, keys = [key(v) for v in uniques], None
    except TypeError:  # multi-select and grouped reports (lists, dicts: unhashable): by their canonical text
        keys = [None if v is None or (isinstance(v, float) and math.isnan(v)) else key(v) for v in values]
        codes, texts = pd.factorize(pd.Series(keys, dtype=object), use_na_sentinel=True)
        distinct = list(texts)
    index = {key(r): i for i, r in enumerate(mechanism.reports)}
    lookup = np.empty(len(distinct), dtype=np.int64)
    for code, text in enumerate(distinct):
        position = index.get(text)
        if position is None:
            first = keys.index(text) if keys is not None else int(np.flatnonzero(codes == code)[0])
            try:
                position = index.get(key(mechanism.validate_report(values.iloc[first])))
            except (ValueError, TypeError):
                position = None
            if position is None:
                raise AnalysisError(f"reports[{first}]: {values.iloc[first]!r} is not a report this mechanism can "
                                    "produce")
        lookup[code] = position
    return np.where(codes >= 0, lookup[np.maximum(codes, 0)] if len(lookup) else -1, -1)
