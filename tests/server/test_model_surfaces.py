"""The multilevel model and its small areas on every surface: `deniable model` (table, CSV, JSON, a census file),
the dashboard's model page and its downloads, the page in real Chromium at phone and desktop width; every surface
gives the library's numbers, and bad input is a message naming what is wrong, never a traceback."""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest

from deniable.analysis import load
from deniable.analysis.mixed import mixed
from deniable.analysis.small_areas import small_areas
from deniable.server import create_app
from deniable.server.cli import main
from deniable.server.demo import TRUTH
from tests.server.conftest import ADMIN, sign_in, wait_for_background
from tests.server.test_browser import browser  # noqa: F401 - the module's Chromium fixture
from tests.server.test_dashboard_browser import signed_in_page
from tests.server.test_questionnaire_pages import DESKTOP, PHONE, no_violations
from tests.support.demo_data import demo_database
from tests.support.serving import served

FORMULA = "dodged ~ worked + (1 | region)"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    """The demo survey with 1,500 simulated respondents (its regions' true shares differ: `demo.TRUTH`)."""
    return demo_database(str(tmp_path_factory.mktemp("model") / "demo.db"), 1500, 62)


@pytest.fixture(scope="module")
def library(demo_db):
    """What the library gives for the formula: the fit and its areas over the sample's own cells."""
    fit = mixed(FORMULA, load(db=demo_db, survey_id="tax"))
    return fit, small_areas(fit, "sample")


def run(*args):
    from click.testing import CliRunner

    return CliRunner().invoke(main, list(args))


def test_the_command_prints_the_fit_and_exports_the_library_s_area_table(demo_db, library):
    fit, areas = library
    shown = run("model", "tax", FORMULA, "--db", demo_db, "--areas")
    assert shown.exit_code == 0, shown.output
    assert "Multilevel logistic regression of a randomized answer" in shown.output and "certified" in shown.output
    assert "sd(region)" in shown.output and "Small-area estimates by region: 4 areas" in shown.output
    table = run("model", "tax", FORMULA, "--db", demo_db, "--areas", "--format", "csv")
    assert table.exit_code == 0, table.output
    exported = pd.read_csv(io.StringIO(table.stdout)).set_index("region")
    expected = areas.table
    assert list(exported.index) == list(expected.index) == ["North", "South", "East", "West"]  # the question's order
    pd.testing.assert_frame_equal(exported, expected, check_names=False, check_index_type=False, rtol=1e-12)
    assert (exported["ci_low"] <= exported["estimate"]).all() and (exported["estimate"] <= exported["ci_high"]).all()
    # the demo's regions differ (10% to 30% dodged): every interval holds its region's truth here
    for region, row in exported.iterrows():
        assert row["ci_low"] <= TRUTH["dodged"][region] <= row["ci_high"], (region, row)
    as_json = json.loads(run("model", "tax", FORMULA, "--db", demo_db, "--areas", "--format", "json").stdout)
    assert as_json["converged"] and [row["region"] for row in as_json["rows"]] == list(expected.index)
    assert [row["estimate"] for row in as_json["rows"]] == pytest.approx(list(expected["estimate"]), rel=1e-12)
    terms = pd.read_csv(io.StringIO(run("model", "tax", FORMULA, "--db", demo_db, "--format", "csv").stdout))
    assert list(terms["term"]) == ["Intercept", "worked[T.yes]", "sd(region)"]
    assert terms["estimate"].tolist() == pytest.approx(fit.to_frame()["estimate"].tolist(), rel=1e-12)


def test_a_census_file_brings_an_area_without_respondents(demo_db, library, tmp_path):
    fit, _ = library
    census = pd.DataFrame({"region": ["North", "North", "South", "South", "East", "East", "West", "West", "Islands",
                                      "Islands"],
                           "worked": ["yes", "no"] * 5, "count": [700, 300, 800, 200, 500, 500, 600, 400, 90, 10]})
    path = tmp_path / "census.csv"
    census.to_csv(path, index=False)
    result = run("model", "tax", FORMULA, "--db", demo_db, "--areas", "--population", str(path), "--format", "csv")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(io.StringIO(result.stdout)).set_index("region")
    islands = table.loc["Islands"]
    assert islands["respondents"] == 0 and pd.isna(islands["direct"]) and islands["population"] == 100
    widths = table["ci_high"] - table["ci_low"]
    assert widths["Islands"] == widths.max()  # known from the covariates and τ alone: the widest interval
    assert "1 areas have no respondents (Islands)" in result.stderr


@pytest.mark.parametrize("args, says", [
    (["tax", "dodged ~ worked + (1 | county)"], "'county' is neither a public question nor a column"),
    (["tax", "dodged ~ worked + (worked | region)"], "(worked | region) is a random slope"),
    (["tax", "fairness ~ worked + (1 | region)"], "fairness: mixed() models a yes/no answer"),
    (["tax", "dodged ~ worked"], "no random intercept"),
    (["nosuch", FORMULA], "nosuch"),
])
def test_bad_formulas_are_one_line_messages_with_a_nonzero_exit(demo_db, args, says):
    result = run("model", *args, "--db", demo_db)
    assert result.exit_code == 1 and says in result.output and "Traceback" not in result.output, result.output


def test_a_population_that_does_not_match_is_refused_by_name(demo_db, tmp_path):
    path = tmp_path / "census.csv"
    pd.DataFrame({"region": ["North"], "count": [10]}).to_csv(path, index=False)
    result = run("model", "tax", FORMULA, "--db", demo_db, "--areas", "--population", str(path))
    assert result.exit_code == 1 and "population: its cells do not match the model's covariates" in result.output
    missing = run("model", "tax", FORMULA, "--db", demo_db, "--areas", "--population", str(tmp_path / "none.csv"))
    assert missing.exit_code == 1 and "cannot read it as CSV" in missing.output
    alone = run("model", "tax", FORMULA, "--db", demo_db, "--population", str(path))
    assert alone.exit_code == 2 and "give --areas too" in alone.output


def _fitted_page(client, formula: str):
    """The model page of ``formula``, once its fit (worked out in the background) is done."""
    for _ in range(3):
        page = client.get("/admin/surveys/tax/model", query_string={"formula": formula})
        if page.status_code != 202:
            return page
        wait_for_background()
    raise AssertionError("the model page never finished its fit")


def test_the_dashboard_shows_the_fit_and_its_ordered_areas_and_serves_the_table(demo_db, library):
    _, areas = library
    client = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": ADMIN, "TESTING": True,
                         "RATELIMIT_ENABLED": False}).test_client()
    sign_in(client)
    estimates = client.get("/admin/surveys/tax").get_data(as_text=True)
    assert "/admin/surveys/tax/model" in estimates
    blank = client.get("/admin/surveys/tax/model").get_data(as_text=True)
    assert 'value="dodged ~ 1 + (1 | region)"' in blank  # a first formula to edit
    page = _fitted_page(client, FORMULA)
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    rows = re.findall(r"<tr><td>(\w+)</td><td>(\d+)</td><td>([0-9.]+)</td>", html.split('id="area-table"')[1])
    ordered = areas.table.sort_values("estimate")
    assert [name for name, _, _ in rows] == list(ordered.index)  # ordered by estimate, as the chart
    assert [float(value) for _, _, value in rows] == pytest.approx(ordered["estimate"].round(3).tolist(), abs=1e-9)
    assert [int(n) for _, n, _ in rows] == ordered["respondents"].tolist()
    download = client.get("/admin/surveys/tax/model.csv", query_string={"formula": FORMULA})
    assert download.status_code == 200 and "attachment" in download.headers["Content-Disposition"]
    served_table = pd.read_csv(io.StringIO(download.get_data(as_text=True))).set_index("region")
    pd.testing.assert_frame_equal(served_table, areas.table, check_names=False, check_index_type=False, rtol=1e-12)
    as_json = client.get("/admin/surveys/tax/model.json", query_string={"formula": FORMULA}).get_json()
    assert [row["region"] for row in as_json] == list(areas.table.index)


def test_the_dashboard_refuses_a_bad_formula_with_its_reason(demo_db):
    client = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": ADMIN, "TESTING": True,
                         "RATELIMIT_ENABLED": False}).test_client()
    sign_in(client)
    page = _fitted_page(client, "dodged ~ worked + (worked | region)")
    assert page.status_code == 422 and "(worked | region) is a random slope" in page.get_data(as_text=True)
    long = client.get("/admin/surveys/tax/model", query_string={"formula": "dodged ~ " + "x + " * 200 + "(1 | region)"})
    assert long.status_code == 422 and "at most 500 characters" in long.get_data(as_text=True)
    assert client.get("/admin/surveys/tax/model.csv", query_string={"formula": "dodged ~ 1"}).status_code == 422
    assert client.get("/admin/surveys/tax/model.xlsx", query_string={"formula": FORMULA}).status_code == 404
    signed_out = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": ADMIN, "TESTING": True}).test_client()
    assert signed_out.get("/admin/surveys/tax/model").status_code in (302, 303)


@pytest.mark.slow
@pytest.mark.parametrize("screen", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_model_page_fits_the_screen_in_chromium(browser, demo_db, screen, tmp_path):  # noqa: F811
    app = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": ADMIN, "TESTING": True, "RATELIMIT_ENABLED": False})
    with served(app) as base:
        context, page = signed_in_page(browser, base, screen)
        page.goto(f"{base}/admin/surveys/tax")
        page.click("#model-link a")
        page.fill("#formula", FORMULA)
        page.click(".model-form button")
        page.wait_for_selector("#area-table", timeout=120_000)  # the page reloads itself until the fit is done
        width = page.evaluate("document.documentElement.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "the page scrolls sideways"
        labels = page.evaluate("[...document.querySelectorAll('#model-areas svg g text')].map(t => t.textContent)")
        shares = [float(re.search(r": ([0-9.]+)%", label).group(1)) for label in labels]
        assert len(shares) == 4 and shares == sorted(shares)
        box = page.locator("#formula").bounding_box()
        assert box["width"] >= 0.8 * min(width, 700) and box["height"] >= 40  # the formula takes the line
        no_violations(page, f"dashboard: model ({width} px)")
        page.screenshot(path=str(tmp_path / "model.png"), full_page=True)
        context.close()


def test_several_grouping_factors_show_each_variance_and_say_why_there_are_no_areas(demo_db):
    formula = "dodged ~ 1 + (1 | region) + (1 | worked)"
    shown = run("model", "tax", formula, "--db", demo_db)
    assert shown.exit_code == 0 and "Random intercepts of region" in shown.output
    assert "Random intercepts of worked" in shown.output and "Effects of worked" in shown.output
    areas = run("model", "tax", formula, "--db", demo_db, "--areas")
    assert areas.exit_code == 1 and "small_areas post-stratifies a fit with one grouping factor" in areas.output
    client = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": ADMIN, "TESTING": True,
                         "RATELIMIT_ENABLED": False}).test_client()
    sign_in(client)
    page = _fitted_page(client, formula)
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "Laplace approximation" in html and 'id="no-areas"' in html
    assert html.count("Random intercepts of") == 2
    assert client.get("/admin/surveys/tax/model.csv", query_string={"formula": formula}).status_code == 422


def test_a_public_outcome_with_a_randomized_covariate_is_fitted_without_shares():
    """The dashboard's figures of a linear model with a randomized covariate: its terms and variance, and why there
    are no area shares (they are shares of a randomized answer)."""
    import numpy as np

    from deniable.server.model_view import fit_model
    from tests.analysis import simulated_predictor as simulated

    data = simulated.loaded(simulated.survey(np.random.default_rng(5), n=400, clusters=20))
    view = fit_model(("test", "p", 1, 400, "linear"), data, "trust ~ dodged + age + (1 | psu)", 0.95)
    assert view["areas"] is None and "outcome is public" in view["no_areas"]
    assert view["model"] == "linear regression with a randomized covariate (dodged)"
    assert [term["term"] for term in view["terms"]][:3] == ["Intercept", "dodged[yes]", "age"]


def test_a_fit_that_fails_is_remembered_as_the_page_s_answer(demo_db, monkeypatch, caplog):
    """A numerical failure inside the fit is the page's message (and the log's), not a page that reloads for ever."""
    from deniable.server import model_view

    def failing(*_, **__):
        raise FloatingPointError("overflow in exp")

    monkeypatch.setattr(model_view, "mixed", failing)
    key = ("test", "tax", 1, 0, "failing")
    view = model_view.fit_model(key, load(db=demo_db, survey_id="tax"), FORMULA, 0.95)
    assert "the fit failed (FloatingPointError: overflow in exp)" in view["error"]
    assert model_view.remembered(key) is view and "the model" in caplog.text
