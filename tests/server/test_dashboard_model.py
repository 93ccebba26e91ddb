"""The dashboard's view-model (`server.dashboard`) as data, without Flask: every chart is the certified estimate
`deniable.analysis` gives for the same question, each bar inside its whiskers on the drawn axis; a question skip
logic asks of some is planned at the share asked so far; the responses-per-day chart keeps its size."""

import math
import secrets

import pytest

from deniable import storage
from deniable.analysis import SampleDesign, estimate, load
from deniable.server import dashboard
from deniable.server.demo import demo_survey, simulated_answers
from tests.conftest import SeededSource


@pytest.fixture
def answered(tmp_path):
    """The demo questionnaire with 300 simulated respondents' randomized reports."""
    survey, source = demo_survey(), SeededSource(20261126)
    with storage.Store(str(tmp_path / "dash.db")) as store:
        store.add_survey(survey)
        for _ in range(300):
            store.submit(survey.id, survey.hash, secrets.token_hex(16),
                         survey.randomize(simulated_answers(source), rng=source))
        yield store, survey


def test_each_chart_is_the_estimate_of_its_question_with_its_bars_inside_their_whiskers(answered):
    store, survey = answered
    data = load(store=store, survey_id=survey.id)
    charts = dashboard.estimate_charts(data, SampleDesign.of(data.survey))
    assert [chart["id"] for chart in charts] == list(survey.questions)
    drawn = [chart for chart in charts if chart["rows"]]
    assert len(drawn) >= len(charts) - 2  # a public question or two may have nothing to estimate
    for chart in drawn:
        result = estimate(data, chart["id"])
        assert chart["n"] == result.n and chart["certified"]
        assert [row["estimate"] for row in chart["rows"]] == pytest.approx(result.table["estimate"].dropna().tolist(),
                                                                           abs=1e-12)
        for row in chart["rows"]:
            assert row["low"] - 1e-12 <= row["estimate"] <= row["high"] + 1e-12
            assert row["x_low"] - 1e-9 <= dashboard.PLOT_LEFT + row["bar"] <= row["x_high"] + 1e-9
            assert dashboard.PLOT_LEFT <= row["x_low"] <= row["x_high"] <= dashboard.PLOT_LEFT + dashboard.PLOT_WIDTH


def test_a_question_asked_of_some_is_planned_at_the_share_asked_so_far(answered):
    store, survey = answered
    data = load(store=store, survey_id=survey.id)
    charts = dashboard.estimate_charts(data, SampleDesign.of(data.survey))
    shares = dashboard.asked_shares(data, charts)
    conditional = {qid for qid in survey.questions if survey.condition(qid) is not None
                   and survey.questions[qid].is_private}
    assert conditional and set(shares) == conditional
    for qid, share in shares.items():
        assert share == pytest.approx(float(data.question_counts(qid).sum()) / data.n)
        assert 0 < share < 1


def test_a_survey_without_responses_says_so_on_every_chart(tmp_path):
    survey = demo_survey()
    with storage.Store(str(tmp_path / "empty.db")) as store:
        store.add_survey(survey)
        data = load(store=store, survey_id=survey.id)
        charts = dashboard.estimate_charts(data, SampleDesign.of(data.survey))
    assert charts and all(chart["error"] == "no responses yet" and not chart["rows"] for chart in charts)


def test_the_responses_per_day_chart_is_at_least_a_month_wide_at_a_fixed_height():
    assert dashboard.day_bars([]) is None
    one = dashboard.day_bars([("2026-11-26", 5000)])
    assert one["width"] == dashboard.DAY_MIN_BARS * dashboard.DAY_BAR and one["height"] == dashboard.DAY_HEIGHT
    assert one["bars"][0]["height"] == dashboard.DAY_HEIGHT
    days = dashboard.day_bars([(f"2026-10-{d:02d}", d) for d in range(1, 32)] + [("2026-11-01", 0)])
    assert days["width"] == 32 * dashboard.DAY_BAR and min(bar["height"] for bar in days["bars"]) == 1.0
    assert math.isclose(days["bars"][30]["height"], dashboard.DAY_HEIGHT)


def test_a_long_grid_s_values_are_one_curve_each_column_the_envelope_of_its_values():
    """Past `PER_VALUE_BARS` values a number's per-value figures are one curve in its band, not a bar each: at most
    `CURVE_COLUMNS` columns, each the largest estimate and upper end and the smallest lower end of its values, on an
    axis up to the largest upper end. Read back from the paths against the table."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    estimates = rng.dirichlet(np.full(1001, 0.3))
    table = pd.DataFrame({"estimate": estimates, "ci_low": estimates * 0.5, "ci_high": estimates * 1.5 + 1e-4},
                         index=pd.Index(range(1001), name="value"))
    curve = dashboard.distribution(table)
    points = [tuple(map(float, p.split(","))) for p in curve["line"][1:].split(" L")]
    band = [tuple(map(float, p.split(","))) for p in curve["band"][1:-2].split(" L")]
    columns = dashboard.CURVE_COLUMNS
    assert len(points) == columns and len(band) == 2 * columns and curve["count"] == 1001
    assert curve["top"] == pytest.approx(table["ci_high"].max())
    groups = np.array_split(np.arange(1001), columns)
    height = dashboard.CURVE_HEIGHT
    share = lambda y: (1 - y / height) * curve["top"]  # noqa: E731
    for column, members in enumerate(groups):
        assert share(points[column][1]) == pytest.approx(estimates[members].max(), abs=curve["top"] / height)
        assert share(band[column][1]) == pytest.approx(table["ci_high"].to_numpy()[members].max(),
                                                       abs=curve["top"] / height)
        assert share(band[-1 - column][1]) == pytest.approx(table["ci_low"].to_numpy()[members].min(),
                                                            abs=curve["top"] / height)
    xs = [x for x, _ in points]
    assert xs == sorted(xs) and dashboard.PLOT_LEFT <= xs[0] and xs[-1] <= dashboard.PLOT_LEFT + dashboard.PLOT_WIDTH
    short = dashboard.distribution(table.iloc[:40])  # fewer values than columns: a point per value
    assert len(short["line"][1:].split(" L")) == 40
