"""The estimate on every surface a researcher meets it (the CLI's table, CSV and JSON, the dashboard's bars and whiskers, the notebook's plot) is the same certified figure, with the same population."""

import json
import re
import secrets

import numpy as np
import pytest
from click.testing import CliRunner

from deniable import storage
from deniable.analysis import estimate, likelihood, load
from deniable.server import create_app
from deniable.server.cli import main
from deniable.server.demo import demo_survey, simulated_answers
from tests.conftest import SeededSource
from tests.server.conftest import sign_in


def test_cli_estimate_table_csv_json(demo_db):
    runner = CliRunner()
    table = runner.invoke(main, ["estimate", "tax", "--db", demo_db])
    assert table.exit_code == 0, table.output
    assert "4000 responses" in table.output and "clopper-pearson" in table.output and "Mean:" in table.output
    as_json = json.loads(runner.invoke(main, ["estimate", "tax", "--db", demo_db, "--format", "json"]).output,
                         parse_constant=lambda name: pytest.fail(f"invalid JSON constant {name}"))
    dodged = [row for row in as_json if row["question"] == "dodged" and row["answer"] == "yes"][0]
    expected = estimate(load(db=demo_db, survey_id="tax"), "dodged").table.loc["yes"]
    assert dodged["estimate"] == expected["estimate"] and dodged["ci_high"] == expected["ci_high"]
    csv_text = runner.invoke(main, ["estimate", "tax", "--db", demo_db, "--by", "region", "--question", "dodged",
                                    "--format", "csv"]).output
    header, *rows = csv_text.splitlines()
    assert header.startswith("question,group,answer,estimate,se,ci_low,ci_high")
    assert len(rows) == 8  # 4 regions × yes/no


def test_cli_estimate_errors(demo_db, tmp_path):
    runner = CliRunner()
    for args, message in [(["estimate", "nope", "--db", demo_db], "no survey 'nope'"),
                          (["estimate", "tax", "--db", str(tmp_path / "x.db")], "no such database"),
                          (["estimate", "tax", "--db", demo_db, "--by", "dodged"], "group only by a public question"),
                          (["estimate", "tax", "--db", demo_db, "--question", "zzz"], "no question 'zzz'")]:
        result = runner.invoke(main, args)
        assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


def test_dashboard_shows_live_estimates_with_a_chart_per_question(demo_db):
    app = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": "t"})
    client = app.test_client()
    assert client.get("/admin/surveys/tax").status_code == 303  # to the sign-in page
    sign_in(client, "t")
    page = client.get("/admin/surveys/tax").data.decode()
    # One chart per question (a number too noisy value by value: its ranges, its per-value chart folded away),
    # and the responses per day.
    folded = page.count("<details><summary>Each of the")
    assert folded == 1 and 'id="binned-hours"' in page  # 0–40 in steps of 5 at ε = 1
    assert page.count('class="bars"') == len(demo_survey().questions) + folded
    assert page.count("<svg") == len(demo_survey().questions) + folded + 1
    assert "4000</strong> responses" in page
    expected = estimate(load(db=demo_db, survey_id="tax"), "dodged").table.loc["yes"]
    assert f"[{expected['ci_low']:.3f}, {expected['ci_high']:.3f}]" in page
    assert "Mean:" in page


@pytest.fixture(scope="module")
def issue_db(tmp_path_factory):
    """The demo survey with the issue's `cash` report counts: Salary 201, Self-employed 114, Cash in hand 110,
    Other 76 (the other questions randomized from simulated answers)."""
    path = str(tmp_path_factory.mktemp("issue9") / "cash.db")
    survey, rng = demo_survey(), SeededSource(5)
    cash = ["Salary"] * 201 + ["Self-employed"] * 114 + ["Cash in hand"] * 110 + ["Other"] * 76
    with storage.Store(path) as store:
        store.add_survey(survey)
        record = store.get_survey("tax")
        with store.transaction():
            for value in cash:
                # cash is asked of those who worked: every respondent here did
                answers = {"hours": 0, **simulated_answers(rng), "worked": "yes"}
                reports = survey.randomize(answers, rng)
                reports["cash"] = value
                store.submit("tax", record.hash, secrets.token_hex(16), reports)
    return path


def dashboard(db):
    client = create_app({"DATABASE": db, "ADMIN_TOKEN": "t"}).test_client()
    sign_in(client, "t")
    return client.get("/admin/surveys/tax").data.decode()


def test_the_dashboard_bars_are_the_certified_estimate_inside_their_whiskers(issue_db):
    page = dashboard(issue_db)
    section = page[page.index('id="chart-cash"'):page.index('id="chart-undeclared"')]
    widths = [float(w) for w in re.findall(r'<rect x="6" y="[\d.]+" width="([\d.]+)"', section)]
    whiskers = [(float(a), float(b)) for a, b in re.findall(r'<line x1="([\d.]+)" x2="([\d.]+)" y1="[\d.]+" y2="[\d.]+" '
                                                            r'stroke="#123"', section)][::3]  # each row: the whisker, then its two caps
    expected = estimate(load(db=issue_db, survey_id="tax"), "cash").table
    assert widths == pytest.approx(list(328 * expected["estimate"]), abs=1e-9)
    assert [round(w / 328, 3) for w in widths] == [0.682, 0.171, 0.147, 0.0]  # not 95% / 0 / 0 / 5% any more
    for width, (low, high) in zip(widths, whiskers):
        assert low <= 6 + width <= high
    for answer, row in expected.iterrows():
        assert f"<td>{row['estimate']:.3f}</td>" in section
        assert f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]" in section
        assert f": {row['estimate'] * 100:.1f}% [{row['ci_low'] * 100:.1f}, {row['ci_high'] * 100:.1f}]</text>" in section
    assert "Not certified" not in page and "Constrained" not in page


def test_an_uncertified_estimate_is_marked_on_the_dashboard(issue_db, monkeypatch):
    def corner(q, counts, **_):
        pi = np.zeros(q.shape[1])
        pi[0] = 1.0
        return pi, likelihood.Certificate(0.0, 0.0, 1)

    monkeypatch.setattr(likelihood, "maximise", corner)
    with pytest.warns(likelihood.ConvergenceWarning):
        page = dashboard(issue_db)
    assert page.count('role="alert"><strong>Not certified:</strong>') >= 1


def test_every_surface_shows_the_same_headline(issue_db):
    data = load(db=issue_db, survey_id="tax")
    result = estimate(data, "cash")
    runner = CliRunner()
    rows = json.loads(runner.invoke(main, ["estimate", "tax", "--db", issue_db, "--question", "cash", "--format", "json"]).output)
    assert [r["estimate"] for r in rows] == list(result.table["estimate"])
    assert [r["ci_high"] for r in rows] == list(result.table["ci_high"]) and all(r["converged"] for r in rows)
    text = runner.invoke(main, ["estimate", "tax", "--db", issue_db, "--question", "cash"]).output
    assert "0.6824" in text and "certified" in text
    assert "0.6824" in result.summary().as_html() and "0.68235" in result.summary().as_csv()
    from deniable.analysis import subgroup_frame, subgroups

    frame = subgroup_frame(subgroups(data, "cash", by="region"))
    for region, part in subgroups(data, "cash", by="region").items():
        assert (frame.xs(region, level="group")["estimate"] == part.table["estimate"]).all()
    import matplotlib

    matplotlib.use("Agg")
    ax = result.plot()
    plotted = ax.lines[0].get_xdata() if ax.lines else ax.collections[0].get_offsets()[:, 0]
    assert list(plotted) == pytest.approx(list(result.table["estimate"]))


def test_a_question_asked_of_some_is_estimated_among_them_on_every_surface(demo_db):
    """The demo's work section is shown to those who worked: its estimates say so, with their n."""
    data = load(db=demo_db, survey_id="tax")
    worked = int(data.question_counts("worked")[data.survey.questions["worked"].mechanism.reports.index("yes")])
    result = estimate(data, "cash", language="es")
    assert result.n == worked < data.n
    assert result.population == "respondents with worked = 'yes'"
    assert f"Asked of: respondents with worked = 'yes'; the estimates describe them (n = {worked})" in str(result.summary())
    frame = result.to_frame()
    assert frame.attrs["population"] == result.population and frame.attrs["n"] == worked
    assert list(frame["label"]) == ["Sueldo", "Por cuenta propia", "En efectivo", "Otro"]
    assert list(frame.index) == ["Salary", "Self-employed", "Cash in hand", "Other"]  # option names stay stable
    assert result.text == "¿Cómo le pagaron principalmente el año pasado?"
    assert estimate(data, "region").population is None
    assert set(data.estimate_all()) == set(data.survey.questions)

    rows = json.loads(CliRunner().invoke(main, ["estimate", "tax", "--db", demo_db, "--format", "json"]).output)
    cash = [r for r in rows if r["question"] == "cash"]
    assert {r["population"] for r in cash} == {"respondents with worked = 'yes'"} and {r["n"] for r in cash} == {worked}
    assert {r["population"] for r in rows if r["question"] == "region"} == {None}
    table = CliRunner().invoke(main, ["estimate", "tax", "--db", demo_db, "--question", "cash"]).output
    assert "Asked of: respondents with worked = 'yes'" in table
    page = dashboard(demo_db)
    chart = page[page.index('id="chart-cash"'):page.index('id="chart-undeclared"')]
    assert f"Asked of respondents with worked = &#39;yes&#39;: the estimates describe them (n = {worked})" in chart


def test_plot_keeps_long_answer_labels_inside_the_figure():
    import matplotlib

    matplotlib.use("Agg")
    from deniable.analysis import estimate
    from deniable.client import Survey

    question = Survey.from_dict({"id": "v", "title": "v", "questions": [
        {"id": "tenure", "type": "choice", "text": "How long have you worked here?", "privacy": {"design": "k_rr", "epsilon": 2},
         "options": [{"value": "lt1", "label": "Less than a year"}, {"value": "1to5", "label": "Between one and five years"},
                     {"value": "gt5", "label": "More than five years, a very long time indeed"}]}]}).questions["tenure"]
    result = estimate(question, [question.mechanism.randomize("1to5") for _ in range(200)], language="en")
    ax = result.plot()
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    labels = ax.get_yticklabels()
    assert [label.get_text() for label in labels][0] == "Less than a year"  # the label, not the code lt1
    assert all(label.get_window_extent(renderer).x0 >= 0 for label in labels)
