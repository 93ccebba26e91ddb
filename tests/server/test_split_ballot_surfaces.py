"""A split-ballot study end to end, on both engines: reports with their arm go in through the API (bad ones refused
naming the field, nothing stored), and the comparison is the same on every surface: Python, the CLI (text and
JSON), the dashboard, a CSV export read back; SPSS and Stata files keep the arm and the direct answer apart."""

import json
import random
import secrets

import pyreadstat
import pytest

from deniable.analysis import estimate, load
from deniable.client import Survey
from deniable.server.cli import main
from tests.conftest import EXAMPLES
from tests.server.conftest import sign_in

pytestmark = pytest.mark.both_engines


@pytest.fixture
def study(store):
    """800 respondents: 30% have left early; asked directly, 40% of those deny it."""
    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    store.add_survey(survey)
    rng = random.Random(5)

    class Source:
        randbelow = staticmethod(lambda n: rng.randrange(n))

    for i in range(800):
        truth = "yes" if rng.random() < 0.3 else "no"
        reports = survey.simulate({"region": "North" if i % 2 else "South", "dodged": truth}, Source())
        if reports["dodged"]["arm"] == "direct" and truth == "yes" and rng.random() < 0.4:
            reports["dodged"] = {"arm": "direct", "report": "no"}
        store.submit("validation", survey.hash, secrets.token_hex(16), reports)
    return survey


@pytest.mark.parametrize("bad,message", [
    ({"arm": "direct", "report": "maybe"}, "direct answer 'maybe' is not one of yes, no"),
    ({"arm": "both", "report": "yes"}, "arm 'both' is not one of direct, randomized"),
    ("yes", "must be an object with the respondent's 'arm'"),
    ({"arm": "randomized", "group": "a", "report": "yes"}, "is not one of"),
])
def test_a_report_without_a_valid_arm_is_refused_and_nothing_is_stored(client, study, store, bad, message):
    before = store.response_count("validation")
    response = client.post("/api/v1/surveys/validation/responses",
                           json={"spec_hash": study.hash, "idempotency_key": secrets.token_hex(8), "reports": {"dodged": bad}})
    assert response.status_code == 422
    assert response.json["error"]["field"] == "reports.dodged" and message in response.json["error"]["message"]
    assert store.response_count("validation") == before


def test_a_direct_report_where_there_is_no_split_ballot_is_refused(client, store):
    survey = Survey.from_file(EXAMPLES / "respondent.yaml")
    store.add_survey(survey)
    response = client.post("/api/v1/surveys/conduct/responses",
                           json={"spec_hash": survey.hash, "idempotency_key": "k" * 16,
                                 "reports": {"took": {"arm": "direct", "report": "yes"}}})
    assert response.status_code == 422 and response.json["error"]["field"] == "reports.took"
    assert store.response_count("conduct") == 0


def test_the_same_comparison_on_every_surface(study, db_path, runner, client, tmp_path):
    result = estimate(load(db=db_path, survey_id="validation"), "dodged")
    table = result.split_ballot
    assert table.loc["direct", "n"] + table.loc["randomized", "n"] == 800
    assert table.loc["randomized", "n"] == result.n  # the design's estimate is the randomized arm's
    line = next(text for text in str(result.summary()).splitlines() if text.startswith("Split ballot ('yes')"))

    printed = runner.invoke(main, ["estimate", "validation", "--db", db_path, "--question", "dodged"])
    assert printed.exit_code == 0, printed.output
    assert line in printed.output
    [yes] = [row for row in json.loads(runner.invoke(main, ["estimate", "validation", "--db", db_path, "--question",
                                                              "dodged", "--format", "json"]).output) if row["answer"] == "yes"]
    assert yes["direct"] == table.loc["direct", "estimate"] and yes["difference"] == table.loc["difference", "estimate"]
    assert yes["difference_p_value"] == table.loc["difference", "p_value"] and yes["direct_n"] == table.loc["direct", "n"]

    sign_in(client)
    page = client.get("/admin/surveys/validation").get_data(as_text=True)
    assert "Split ballot: share of “yes”, asked directly and through the design" in page
    assert f"{table.loc['difference', 'estimate']:+.3f}" in page and f"{table.loc['difference', 'p_value']:.3g}" in page
    assert "dodged: split ballot, 250" in " ".join(page.split()) and "n to detect 5% cheaters" in page

    exported = tmp_path / "validation.csv"
    assert runner.invoke(main, ["export", "validation", "--db", db_path, "--output", str(exported)]).exit_code == 0
    header = exported.read_text().splitlines()[0].split(",")
    assert header[header.index("dodged.arm"):header.index("dodged.arm") + 3] == ["dodged.arm", "dodged", "dodged.direct"]
    assert header[header.index("cheated.arm"):header.index("cheated.arm") + 4] == \
        ["cheated.arm", "cheated.group", "cheated", "cheated.direct"]
    again = estimate(load(str(exported), spec=study), "dodged")
    assert again.split_ballot.fillna(-1).to_numpy() == pytest.approx(table.fillna(-1).to_numpy(), abs=1e-12)
    codebook = (tmp_path / "validation.codebook.md").read_text()
    assert "Split ballot: 0.25 of respondents were asked directly" in codebook and "`dodged.direct`" in codebook


def test_labelled_files_keep_the_arm_and_the_direct_answer_apart(study, db_path, runner, tmp_path, store):
    target = tmp_path / "validation.sav"
    assert runner.invoke(main, ["export", "validation", "--db", db_path, "--format", "sav", "--output", str(target)]).exit_code == 0
    frame, meta = pyreadstat.read_sav(str(target))
    values = meta.variable_value_labels
    assert values["dodged_arm"] == {1.0: "direct", 2.0: "randomized"} and values["dodged_direct"] == {1.0: "yes", 0.0: "no"}
    labels = dict(zip(meta.column_names, meta.column_labels))
    assert labels["dodged_direct"].startswith("[asked directly]") and labels["dodged"].startswith("[randomized]")
    stored = {row["id"]: row["reports"]["dodged"] for row in store.export("validation")}
    for _, row in frame.iterrows():
        report = stored[row["id"]]
        if report["arm"] == "direct":
            assert row["dodged_arm"] == 1 and row["dodged_direct"] == (report["report"] == "yes") and row["dodged"] != row["dodged"]
        else:
            assert row["dodged_arm"] == 2 and row["dodged"] == (report["report"] == "yes") and row["dodged_direct"] != row["dodged_direct"]


def test_versions_pool_through_the_design_and_the_direct_arm_stays_apart(study, store, db_path):
    """Version 2 drops the split ballot of `dodged` and rewords `cheated` (a cheating-detection question): pooled,
    each question is estimated from every version's reports through its design, the direct answers of version 1
    only beside it; the grouped question pools like any other."""
    spec = study.to_dict()
    for question in spec["questions"]:
        if question["id"] == "dodged":
            del question["split_ballot"]
        if question["id"] == "cheated":
            question["text"] = "Have you ever claimed an expense you did not have?"
    second = Survey.from_dict(spec)
    store.add_survey(second)
    rng = random.Random(6)
    for _ in range(300):
        reports = second.simulate({"dodged": "yes" if rng.random() < 0.3 else "no", "cheated": "no"})
        store.submit("validation", second.hash, secrets.token_hex(16), reports)
    first = estimate(load(db=db_path, survey_id="validation", version=1), "dodged")
    pooled_data = load(db=db_path, survey_id="validation", all_versions=True)
    pooled = estimate(pooled_data, "dodged")
    assert pooled.n == first.n + 300 and pooled.versions == [v.label for v in pooled_data.versions]
    assert pooled.split_ballot.loc["direct", "n"] == first.split_ballot.loc["direct", "n"]
    assert pooled.split_ballot.loc["randomized", "n"] == pooled.n
    cheated = estimate(pooled_data, "cheated")
    answered = [r["reports"].get("cheated") for v in (1, 2) for r in store.export("validation", version=v)]
    assert cheated.n == sum(1 for r in answered if r and r["arm"] == "randomized") > 150
    assert list(cheated.table.index) == ["yes", "no", "cheater"] and cheated.converged


def test_a_formula_models_the_randomized_arm(study, db_path):
    from deniable.analysis import logistic

    data = load(db=db_path, survey_id="validation")
    fit = logistic("dodged ~ C(region)", data)
    assert fit.nobs == estimate(data, "dodged").n < 800
    assert list(fit.params.index) == ["Intercept", "C(region)[T.South]"]


def test_the_dashboard_says_when_only_the_direct_arm_has_answered(client, store):
    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    store.add_survey(survey)
    for answer in ("yes", "no"):
        store.submit("validation", survey.hash, secrets.token_hex(16), {"dodged": {"arm": "direct", "report": answer}})
    sign_in(client)
    page = client.get("/admin/surveys/validation").get_data(as_text=True)
    assert "no reports from the randomized arm yet (2 from the direct arm)" in page
