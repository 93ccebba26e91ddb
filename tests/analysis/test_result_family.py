"""Every result a user gets is one family (statsmodels' results in spirit): ``to_frame()`` gives a pandas frame that
says its level, ``summary()`` reads as text and as a notebook's HTML, ``repr`` is one line, a notebook shows HTML, and
the results with intervals plot them. Each member is made as a user makes it, from the docs' seeded workspace."""

import matplotlib
import pandas as pd
import pytest

from deniable.analysis import (
    compare,
    correlation,
    estimate,
    estimate_table,
    linear,
    load,
    logistic,
    mixed,
    plan,
    planned_design,
)

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def members(doc_workspace) -> dict:
    tax = load(db=str(doc_workspace / "deniable.db"), survey_id="tax")
    study = load(db=str(doc_workspace / "deniable.db"), survey_id="study")
    split = estimate(study, "dodged")
    plans = plan(tax.survey, 400)
    return {
        "estimate": estimate(tax, "dodged"),
        "mean": estimate(tax, "fairness").mean,
        "comparison": compare(tax, "dodged", "region", "West", "North"),
        "correlation": correlation(tax, "dodged", "fairness"),
        "regression": logistic("dodged ~ C(region)", tax),
        "latent class regression": logistic("cheated ~ C(region)", study),
        "predictor": linear("trust ~ dodged + age", study),
        "multilevel": mixed("dodged ~ 1 + (1 | region)", tax),
        "table": estimate_table(tax, ["dodged", "fairness"]),
        "plans": plans,
        "plan": plans[0],
        "design": planned_design(tax.survey, 400, assumed=1.5),
        "fit": split.fit,
        "assignment": split.assignment,
    }


WITH_INTERVALS = ("estimate", "mean", "comparison", "correlation", "regression", "latent class regression",
                  "predictor", "multilevel", "table", "plans", "plan")
PLOTTED = ("estimate", "mean", "comparison", "correlation", "multilevel", "table")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["estimate", "mean", "comparison", "correlation", "regression",
                                  "latent class regression", "predictor", "multilevel", "table", "plans", "plan",
                                  "design", "fit", "assignment"])
def test_a_result_reads_as_every_result_does(members, kind):
    result = members[kind]
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) >= 1 and frame.notna().any().any()
    summary = result.summary()
    text = str(summary)
    assert text.strip() and "object at 0x" not in text
    assert summary.as_html().startswith("<") and result._repr_html_().startswith("<")  # (statsmodels stamps the time)
    line = repr(result)
    assert "\n" not in line and len(line) <= 220 and "object at 0x" not in line, line
    if kind in WITH_INTERVALS:
        assert frame.attrs["level"] == 0.95, kind  # one name for the interval's level, everywhere
        assert result.to_frame().equals(frame)  # the same frame each time
    if kind in PLOTTED:
        axes = result.plot()
        assert axes.get_title() and len(axes.lines) + len(axes.collections) >= 1


@pytest.mark.slow
def test_the_figures_of_a_frame_are_the_results_own(members):
    comparison = members["comparison"].to_frame()
    assert comparison.iloc[-1]["estimate"] == pytest.approx(members["comparison"].difference)
    west = members["comparison"].results[0].table.loc["yes"]
    assert comparison.iloc[0][["estimate", "ci_low", "ci_high"]].tolist() == pytest.approx(west[["estimate", "ci_low", "ci_high"]].tolist())
    regression = members["regression"].to_frame(level=0.9)
    assert regression["estimate"].tolist() == pytest.approx(list(members["regression"].params))
    low, high = members["regression"].conf_int(alpha=0.1).to_numpy().T
    assert regression["ci_low"].tolist() == pytest.approx(list(low)) and regression["ci_high"].tolist() == pytest.approx(list(high))
    assert (regression["ci_low"] <= regression["estimate"]).all() and (regression["estimate"] <= regression["ci_high"]).all()
    mean = members["mean"]
    assert members["mean"].to_frame().loc["mean", "estimate"] == mean.estimate
    assert members["plans"].to_frame().index.tolist() == [p.question_id for p in members["plans"]]
    assert str(members["plans"].summary()) == __import__("deniable.analysis", fromlist=["describe_plan"]).describe_plan(members["plans"])
