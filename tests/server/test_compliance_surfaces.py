"""A cheating-detection study end to end, on both engines: reports with their group go in through the API,
bad ones are refused naming the field, and the estimate with its test of compliance is the same on every
surface (Python, CLI, dashboard, CSV export read back)."""

import json
import random
import secrets

import pytest

from deniable.analysis import estimate, load
from deniable.client import Survey
from deniable.server.cli import main
from tests.conftest import EXAMPLES
from tests.server.conftest import sign_in

pytestmark = pytest.mark.both_engines


@pytest.fixture
def conduct(store):
    survey = Survey.from_file(EXAMPLES / "respondent.yaml")
    store.add_survey(survey)
    rng = random.Random(4)
    forced = {"a": 1 / 3, "b": 2 / 3}
    for _ in range(600):
        group, u = rng.choice("ab"), rng.random()
        typed = "yes" if u < 0.3 or (u < 0.85 and rng.random() < forced[group]) else "no"  # 15% cheaters
        store.submit("conduct", survey.hash, secrets.token_hex(16), {"cheated": {"group": group, "report": typed}})
    return survey


@pytest.mark.parametrize("bad,message", [
    ({"group": "c", "report": "no"}, "group 'c' is not one of this question's groups"),
    ({"group": "a", "report": "maybe"}, "report 'maybe' is not one of"),
    ("no", "must be an object with a 'group'"),
    ({"arm": "direct", "report": "no"}, "must be an object with a 'group'"),
])
def test_a_report_outside_the_groups_is_refused_and_nothing_is_stored(client, conduct, store, bad, message):
    before = store.response_count("conduct")
    response = client.post("/api/v1/surveys/conduct/responses",
                           json={"spec_hash": conduct.hash, "idempotency_key": secrets.token_hex(8), "reports": {"cheated": bad}})
    assert response.status_code == 422
    assert response.json["error"]["field"] == "reports.cheated" and message in response.json["error"]["message"]
    assert store.response_count("conduct") == before


def test_the_same_estimate_and_test_on_every_surface(conduct, db_path, runner, client, tmp_path):
    data = load(db=db_path, survey_id="conduct")
    result = estimate(data, "cheated")
    assert list(result.table.index) == ["yes", "no", "cheater"] and result.n == 600
    test_line = str(result.compliance_test)
    assert test_line.startswith("test of no cheating (γ = 0)")

    printed = runner.invoke(main, ["estimate", "conduct", "--db", db_path, "--question", "cheated"])
    assert printed.exit_code == 0, printed.output
    assert test_line in printed.output
    rows = json.loads(runner.invoke(main, ["estimate", "conduct", "--db", db_path, "--question", "cheated",
                                           "--format", "json"]).output)
    assert {row["answer"]: round(row["estimate"], 10) for row in rows} == \
        {answer: round(value, 10) for answer, value in result.estimate.items()}

    sign_in(client)
    page = client.get("/admin/surveys/conduct").get_data(as_text=True)
    assert test_line.replace("'", "&#39;") in page or test_line in page

    exported = tmp_path / "conduct.csv"
    assert runner.invoke(main, ["export", "conduct", "--db", db_path, "--output", str(exported)]).exit_code == 0
    header = exported.read_text().splitlines()[0].split(",")
    assert header[-2:] == ["cheated.group", "cheated"]
    again = estimate(load(str(exported), spec=conduct), "cheated")
    assert again.estimate.to_dict() == pytest.approx(result.estimate.to_dict(), abs=1e-12)
    codebook = (tmp_path / "conduct.codebook.md").read_text()
    assert "the group shown" in codebook and "cheated.group" in codebook


@pytest.mark.slow
def test_subgroups_and_compare_work_through_the_same_channel(store, db_path):
    """By a public question: each region's classes estimated on its own respondents, each interval covering
    that region's truth, and compare() testing the difference of honest "yes" shares."""
    from deniable.analysis import compare, subgroups

    survey = Survey.from_file(EXAMPLES / "respondent.yaml")
    store.add_survey(survey)
    rng = random.Random(2)
    truth = {"North": {"yes": 0.2, "cheater": 0.1}, "South": {"yes": 0.45, "cheater": 0.1}}
    for i in range(2000):
        region = "North" if i % 2 else "South"
        group, u = rng.choice("ab"), rng.random()
        honest, cheaters = truth[region]["yes"], truth[region]["cheater"]
        forced = {"a": 1 / 3, "b": 2 / 3}[group]
        typed = "yes" if u < honest or (u < 1 - cheaters and rng.random() < forced) else "no"
        store.submit("conduct", survey.hash, secrets.token_hex(8), {"region": region, "cheated": {"group": group, "report": typed}})
    data = load(db=db_path, survey_id="conduct")
    results = subgroups(data, "cheated", by="region")
    assert set(results) == {"North", "South"}
    for region, result in results.items():
        assert result.n == 1000 and list(result.table.index) == ["yes", "no", "cheater"]
        for row, value in truth[region].items():
            assert result.table.loc[row, "ci_low"] <= value <= result.table.loc[row, "ci_high"], (region, row, result.table)
    difference = compare(data, "cheated", "region", "North", "South", answer="yes")
    assert difference.difference < 0 and difference.ci.low <= -0.25 <= difference.ci.high
