"""A wide number's publication (`analysis.ranges`): bins, quartiles with intervals by test inversion, per-value rows
on request, and the same figures on every surface."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import calibration, channels, estimate, load, ranges
from deniable.analysis.errors import AnalysisError
from deniable.analysis.from_counts import estimate_counts
from deniable.analysis.tables import estimate_table
from deniable.client import Survey
from deniable.client.errors import SpecError
from tests.support.wide_coverage import number_question


def _counts(k: int, epsilon: float, n: int, truth: np.ndarray, seed: int):
    mechanism = number_question(k, epsilon).mechanism
    q = channels.channel_matrix(mechanism)
    return mechanism, q, np.random.default_rng(seed).multinomial(n, channels.apply(q, truth))


def _lumpy(k: int) -> np.ndarray:
    truth = np.zeros(k)
    truth[[2, 3, 9, 20]] = [0.3, 0.2, 0.3, 0.2]
    return truth


def test_default_bins_are_about_ten_of_a_round_width_and_cover_the_grid_once():
    cases = {(0, 100, 1): ["0–9", "10–19", "20–29", "30–39", "40–49", "50–59", "60–69", "70–79", "80–89", "90–100"],
             (18, 99, 1): ["18–19", "20–29", "30–39", "40–49", "50–59", "60–69", "70–79", "80–89", "90–99"],
             (0, 30, 1): ["0–4", "5–9", "10–14", "15–19", "20–24", "25–30"],
             (0, 10, Fraction(1, 2)): ["0–0.5", "1–1.5", "2–2.5", "3–3.5", "4–4.5", "5–5.5", "6–6.5", "7–7.5",
                                       "8–8.5", "9–10"],
             (-5, 60, 1): ["-5 to -1", "0–9", "10–19", "20–29", "30–39", "40–49", "50–60"]}
    for (low, high, step), labels in cases.items():
        values = np.arange(low, high + step / 2, float(step))
        found = ranges.groups(values, ranges.default_edges(Fraction(low), Fraction(high), Fraction(step)))
        assert [label for label, _ in found] == labels
        assert np.array_equal(np.concatenate([members for _, members in found]), np.arange(len(values)))


def test_the_spec_s_bins_are_lower_edges_on_the_grid_checked_and_read_back_from_xlsform(tmp_path):
    from deniable.client.xlsform import read_xlsform
    from deniable.client.xlsform_writer import write_xlsform

    question = {"id": "h", "text": "Hours?", "type": "number", "min": 0, "max": 100, "bins": [0, 1, 5, 10, 20, 50],
                "privacy": {"design": "laplace", "epsilon": 1}}
    survey = Survey.from_dict({"id": "b", "title": "b", "questions": [question]})
    plain = Survey.from_dict({"id": "b", "title": "b", "questions": [{k: v for k, v in question.items() if k != "bins"}]})
    assert survey.to_dict()["questions"][0]["bins"] == [0, 1, 5, 10, 20, 50] and survey.hash != plain.hash
    write_xlsform(survey, tmp_path / "b.xlsx")
    assert Survey.from_dict(read_xlsform(tmp_path / "b.xlsx")).hash == survey.hash
    values = np.arange(101.0)
    assert [label for label, _ in ranges.groups(values, survey.questions["h"].bins)] == \
        ["0", "1–4", "5–9", "10–19", "20–49", "50–100"]
    for bad, said in (([5, 1], "bins[1]: the edges must increase"), ([0, 101], "bins[1]: 101 is outside"),
                      ([0, 0.5], "bins[1]: 0.5 is not on the grid"), ([], "bins: must be a list"),
                      ("0 1", "bins: must be a list"), ([True], "bins[0]: must be a number")):
        with pytest.raises(SpecError, match=re_escape(said)):
            Survey.from_dict({"id": "b", "title": "b", "questions": [{**question, "bins": bad}]})
    with pytest.raises(SpecError, match="only number questions"):
        Survey.from_dict({"id": "b", "title": "b", "questions": [
            {"id": "y", "text": "?", "type": "yes_no", "bins": [0], "privacy": {"design": "warner", "p": 0.75}}]})


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_quartile_intervals_are_the_test_inversion_read_at_every_grid_point():
    """The search reads a few bounds; the interval is the one every bound gives: F's upper and lower profile bounds at
    all 31 values (each rising with the value, as the search assumes), inverted directly."""
    mechanism, q, counts = _counts(31, 1.0, 800, _lumpy(31), 3)
    result = estimate_counts(mechanism, counts, 0.95, None, "q")
    pi = result.answer_shares
    calibrated = calibration.at_estimate(q, counts, pi)
    upper, lower = [], []
    for index in range(31):
        functional = (np.arange(31) <= index).astype(float)
        upper.append(calibration.end(q, counts, pi, functional, 0.95, calibrated, 1.0))
        lower.append(calibration.end(q, counts, pi, functional, 0.95, calibrated, -1.0))
    assert np.all(np.diff(upper) >= -1e-9) and np.all(np.diff(lower) >= -1e-9)
    for p, row in result.quantiles.iterrows():
        assert row["ci_low"] == min(v for v in range(31) if upper[v] >= p - 1e-12)
        assert row["ci_high"] == min(v for v in range(31) if lower[v] >= p - 1e-12)
        assert row["estimate"] == ranges.quantile_index(np.cumsum(pi), p)
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]


def test_bins_are_sums_of_the_value_shares_with_that_sum_s_standard_error_and_interval():
    mechanism, q, counts = _counts(41, 2.0, 2_000, _lumpy(41), 4)
    result = estimate_counts(mechanism, counts, 0.95, None, "q")
    full = estimate_counts(mechanism, counts, 0.95, None, "q", values=True)
    assert len(full.table) == 41 and full.quantiles is None
    assert result.table["estimate"].sum() == pytest.approx(1, abs=1e-12)
    for label, row in result.table.iterrows():
        indicator = np.zeros(41)
        indicator[result.bin_members[label]] = 1.0
        assert row["estimate"] == pytest.approx(indicator @ full.table["estimate"].to_numpy(), abs=1e-12)
        assert row["se"] == pytest.approx(math.sqrt(max(indicator @ full.covariance @ indicator, 0)), rel=1e-9, abs=1e-12)
        assert row["unbiased"] == pytest.approx(indicator @ full.table["unbiased"].to_numpy(), abs=1e-9)
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
    assert result.mean == full.mean  # the mean is published either way, the same figure
    rows = result.value_rows([0, 9, 40])  # only the rows read: the same figures as the whole per-value table's
    pd.testing.assert_frame_equal(rows, full.table.loc[[0, 9, 40]], check_index_type=False, check_exact=False,
                                  rtol=1e-9, atol=1e-12)


def test_values_is_refused_where_there_are_no_values_and_off_grid_values_are_named():
    survey = Survey.from_dict({"id": "s", "title": "s", "questions": [
        {"id": "y", "text": "?", "type": "yes_no", "privacy": {"design": "warner", "p": 0.75}},
        {"id": "h", "text": "?", "type": "number", "min": 0, "max": 40, "privacy": {"design": "laplace", "epsilon": 2}}]})
    with pytest.raises(AnalysisError, match="not a number question") as raised:
        estimate(survey.questions["y"], ["yes", "no", "yes"], values=True)
    assert raised.value.field == "values"
    result = estimate(survey.questions["h"], [3, 5, 8, 12, 3, 2] * 20)
    with pytest.raises(ValueError, match="2.5 is not on the grid 0..40 step 1"):
        result.value_rows([2.5])
    with pytest.raises(ValueError, match="only number questions"):
        estimate(survey.questions["y"], ["yes", "no"] * 10).value_rows()


def test_every_surface_shows_the_same_bins_quartiles_and_mean(tmp_path):
    survey = Survey.from_dict({"id": "s", "title": "s", "questions": [
        {"id": "h", "text": "Hours?", "type": "number", "min": 0, "max": 60, "bins": [0, 1, 10, 20, 40],
         "privacy": {"design": "laplace", "epsilon": 2}}]})
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"h": [survey.questions["h"].mechanism.randomize(int(v), rng=_Seeded(rng))
                                for v in rng.choice([0, 4, 12, 25], size=400, p=[0.4, 0.3, 0.2, 0.1])]})
    data = load(frame, spec=survey)
    result = data.estimate("h")
    assert list(result.table.index) == ["0", "1–9", "10–19", "20–39", "40–60"]
    pd.testing.assert_frame_equal(result.to_frame(), result.table)
    text = result.summary().as_text()
    median = result.quantiles.loc[0.5]
    assert f"Median: {median['estimate']:g} [{median['ci_low']:g}, {median['ci_high']:g}]" in text
    assert "0–9" not in text and "1–9" in text
    long = estimate_table(data).frame
    assert list(long["answer"]) == list(result.table.index)
    np.testing.assert_array_equal(long["estimate"], result.table["estimate"])
    assert (long["median"] == median["estimate"]).all() and (long["median_ci_high"] == median["ci_high"]).all()
    assert (long["lower_quartile_ci_low"] == result.quantiles.at[0.25, "ci_low"]).all()
    assert (long["mean"] == result.mean.estimate).all()
    per_value = estimate_table(data, values=True).frame
    assert len(per_value) == 61 and "median" not in per_value


class _Seeded:
    """A numpy Generator read as the client's random source (`randbelow`)."""

    def __init__(self, rng):
        self.rng = rng

    def randbelow(self, n: int) -> int:
        return int(self.rng.integers(n))


def test_quartiles_and_bins_cover_at_their_level_over_seeded_surveys():
    """A point mass on a 0..29 grid (its bin's share at 1: the face the interval's end is tested at), 40 surveys:
    every quartile's and bin's coverage within three Monte Carlo errors of 95% (3·√(0.95·0.05/40) = 0.103); the study
    over the random space's kinds, near a face included, is in docs/validation.md ("Wide numbers")."""
    from tests.support.wide_coverage import wide_cell

    row = wide_cell((0, (30, 1.0, 300, "point mass", np.eye(30)[12]), 40))
    for figure in ("q0.25", "q0.5", "q0.75", "bins (min)"):
        assert row[figure] >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 40), (figure, row)


def test_a_quantile_at_a_point_mass_is_that_value_and_its_interval_holds_it():
    mechanism, q, counts = _counts(51, 1.0, 5_000, np.eye(51)[30], 7)
    result = estimate_counts(mechanism, counts, 0.95, None, "q")
    assert (result.quantiles["ci_low"] <= 30).all() and (30 <= result.quantiles["ci_high"]).all()


def test_groups_compare_a_wide_number_s_bin_with_and_without_the_design():
    """A bin is an answer of the published table: compared between groups as a share, and with a design through the
    sum of its values' shares (the functional over the grid, not over the table's rows)."""
    from deniable.analysis import compare
    from deniable.analysis.sample_design import SampleDesign

    survey = Survey.from_dict({"id": "s", "title": "s", "questions": [
        {"id": "g", "text": "Group?", "type": "choice", "options": ["a", "b"], "privacy": "none"},
        {"id": "h", "text": "Hours?", "type": "number", "min": 0, "max": 40, "privacy": {"design": "laplace", "epsilon": 3}}]})
    rng = np.random.default_rng(8)
    groups = rng.choice(["a", "b"], size=600)
    hours = np.where(groups == "a", rng.choice([2, 12], size=600, p=[0.7, 0.3]), rng.choice([2, 12], size=600))
    mechanism = survey.questions["h"].mechanism
    frame = pd.DataFrame({"g": groups, "h": [mechanism.randomize(int(v), rng=_Seeded(rng)) for v in hours],
                          "w": rng.choice([1.0, 2.0], size=600)})
    data = load(frame, spec=survey)
    plain = compare(data, "h", "g", "a", "b", answer="0–4")
    first, second = plain.results
    assert plain.difference == pytest.approx(first.table.at["0–4", "estimate"] - second.table.at["0–4", "estimate"])
    weighted = compare(data, "h", "g", "a", "b", answer="0–4", design=SampleDesign(weights="w"))
    assert weighted.se > 0 and math.isfinite(weighted.se) and weighted.ci.low <= weighted.difference <= weighted.ci.high
    with pytest.raises(AnalysisError, match="'0–9' is not one of"):
        compare(data, "h", "g", "a", "b", answer="0–9")


def test_at_a_bin_holding_everyone_the_statistic_s_law_is_drawn_on_that_face():
    """A bin's share at 1 is a face of the simplex: the shares of the other values sit on their bounds and the
    likelihood-ratio statistic runs above χ²₁ (a bin holding a point mass was covered 90% of 100 surveys at χ²₁'s
    cut, 99% with this test); its law is a bootstrap at the counts' best point on the face, remembered."""
    from deniable.analysis import likelihood

    mechanism, q, counts = _counts(41, 1.0, 3_000, np.eye(41)[22], 11)
    face = np.zeros(41, dtype=bool)
    face[20:25] = True
    best = likelihood.maximise(q, counts, face=face)[0]
    surveys = calibration.FaceSurveys.at(q, counts, face, best)
    assert surveys is calibration.FaceSurveys.at(q, counts, face, best)
    assert surveys.quantile(0.95) > 2 * likelihood.likelihood_cut(0.95)  # above χ²₁'s 3.84
    assert np.all(best[~face] == 0) and best.sum() == pytest.approx(1)
