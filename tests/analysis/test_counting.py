"""Counting in-memory reports: every container gives the same counts, bad reports are named by position."""

import math

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import estimate
from deniable.analysis.counting import count_reports
from deniable.client import Survey


def question(**spec):
    return Survey.from_dict({"id": "s", "title": "t", "questions": [{"id": "q", "text": "?", **spec}]}).questions["q"]


CHOICE = question(type="choice", options=["a", "b", "c"], privacy={"design": "k_rr", "epsilon": 1})
NUMBER = question(type="number", min=0, max=2, step=1, privacy={"design": "laplace", "epsilon": 1})
MULTI = question(type="multi_select", options=["x", "y"], privacy={"design": "unary", "epsilon": 1})


def test_every_container_gives_the_same_counts_and_missing_values_are_skipped():
    values = ["a", "b", "a", "c", "a", None]
    expected = [3, 1, 1]
    as_categorical = pd.Series(pd.Categorical(values, categories=["a", "b", "c", "unused"]))
    for container in (values, tuple(values), np.array(values, dtype=object), pd.Series(values), as_categorical,
                      np.array(values[:-1]), iter(values)):
        assert count_reports(CHOICE.mechanism, container).tolist() == expected, type(container)
    numbers = [0, 1, 1.0, 2, -2, 4, float("nan"), None]
    assert count_reports(NUMBER.mechanism, numbers).tolist() == [1, 0, 1, 2, 1, 0, 1]
    assert count_reports(NUMBER.mechanism, np.array([0, 1, 1, np.nan])).tolist() == [0, 0, 1, 2, 0, 0, 0]
    assert count_reports(MULTI.mechanism, [["x"], [], ["x", "y"], ["x"]]).tolist() == [1, 2, 0, 1]


def test_a_bad_report_is_named_by_its_first_position_whatever_the_container():
    for container in (["a", "b", "zz", "zz"], np.array(["a", "b", "zz"]), pd.Series(["a", "b", "zz"])):
        with pytest.raises(ValueError, match=r"reports\[2\]: 'zz' is not a report"):
            count_reports(CHOICE.mechanism, container)
    with pytest.raises(ValueError, match=r"reports\[1\]: \['z'\]"):
        count_reports(MULTI.mechanism, [["x"], ["z"]])
    with pytest.raises(ValueError, match=r"reports\[0\]: 7"):
        count_reports(NUMBER.mechanism, np.array([7, 0]))


def test_booleans_are_not_numbers_even_where_they_hash_like_them():
    with pytest.raises(ValueError, match=r"reports\[2\]: True"):
        count_reports(NUMBER.mechanism, [1, 0, True])
    with pytest.raises(ValueError, match=r"reports\[0\]: False"):
        count_reports(NUMBER.mechanism, np.array([False, True]))


def test_a_million_reports_in_any_container_give_one_estimate():
    rng = np.random.default_rng(4)
    labels = np.array(["a", "b", "c"])[rng.integers(0, 3, 1_000_000)]
    results = [estimate(CHOICE, container) for container in
               (labels.tolist(), labels, pd.Series(labels), pd.Series(pd.Categorical(labels)))]
    for result in results[1:]:
        assert (result.counts == results[0].counts).all()
        assert result.table.equals(results[0].table)
    assert math.isclose(results[0].n, 1_000_000)


def test_a_list_of_numpy_scalars_counts_as_their_values_and_a_numpy_boolean_is_still_refused():
    import numpy as np

    from deniable.analysis import AnalysisError, estimate
    from deniable.analysis.counting import count_reports
    from deniable.client import Survey

    number = Survey.from_dict({"id": "v", "title": "v", "questions": [
        {"id": "q", "type": "number", "text": "?", "min": 0, "max": 2, "privacy": {"design": "laplace", "epsilon": 1}}]}
    ).questions["q"].mechanism
    plain = count_reports(number, [0, 1, 1, 2, -2])
    assert (count_reports(number, [np.int64(v) for v in [0, 1, 1, 2, -2]]) == plain).all()
    assert (count_reports(number, [np.float32(v) for v in [0, 1, 1, 2, -2]]) == plain).all()
    with pytest.raises(AnalysisError, match="True is not a report"):
        count_reports(number, [np.bool_(True), 1])
    low, high = estimate(number, [np.int64(1)] * 50).mean.ci  # intervals unpack and index like scipy's
    assert estimate(number, [np.int64(1)] * 50).mean.ci[0] == low < high
