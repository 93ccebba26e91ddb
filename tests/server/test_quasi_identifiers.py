"""Quasi-identifiers judged together: an exact public age and a region single out respondents that neither does
alone. `export` says how many rows are unique in the combination, and its remedies (bands, a top code, a column left
out) bring that down; `survey show` says it too. Remedies that cannot apply are refused naming the column."""

import io
import random

import pandas as pd
import pytest

from deniable import storage
from deniable.client import Survey
from deniable.server.cli import main
from deniable.server.disclosure import Remedies, groups
from tests.conftest import SeededSource

SPEC = {"id": "q", "title": "Quasi", "questions": [
    {"id": "age", "type": "number", "text": "Age?", "min": 18, "max": 99, "privacy": "none"},
    {"id": "region", "type": "choice", "text": "Region?", "options": ["north", "south", "east", "west"],
     "privacy": "none"},
    {"id": "dodged", "type": "yes_no", "text": "Dodged?"}]}


@pytest.fixture
def answered(db_path):
    survey = Survey.from_dict(SPEC)
    rng, coins = random.Random(2), SeededSource(2)
    with storage.Store(db_path) as store:
        store.add_survey(survey)
        for i in range(300):
            answers = {"age": rng.randint(18, 99), "region": rng.choice(["north", "south", "east", "west"]),
                       "dodged": rng.choice(["yes", "no"])}
            store.submit("q", survey.hash, f"key-{i:06d}", survey.randomize(answers, rng=coins))
    return survey


def _unique(csv_text: str, columns) -> int:
    frame = pd.read_csv(io.StringIO(csv_text), dtype=str, keep_default_na=False)
    return int((frame.groupby(columns)["id"].transform("size") == 1).sum())


def test_the_export_says_how_many_rows_are_unique_and_its_remedies_bring_that_down(answered, runner, db_path):
    plain = runner.invoke(main, ["export", "q", "--db", db_path])
    assert plain.exit_code == 0, plain.output
    unique = _unique(plain.stdout, ["age", "region"])
    assert unique > 100  # 82 ages × 4 regions for 300 respondents
    assert f"Quasi-identifiers: {unique} of 300 responses are unique in their combination of age, region" in plain.stderr
    banded = runner.invoke(main, ["export", "q", "--db", db_path, "--coarsen", "age=20", "--top-code", "age=70"])
    assert banded.exit_code == 0, banded.output
    frame = pd.read_csv(io.StringIO(banded.stdout), dtype=str, keep_default_na=False)
    assert set(frame["age"]) <= {"0", "20", "40", "60"} and frame["dodged"].isin(["yes", "no"]).all()
    after = _unique(banded.stdout, ["age", "region"])
    assert after <= unique / 20  # the 18-19 band is the only thin one
    assert "Remedies: age in bands of 20 (each value its band's lower end); age top-coded at 70." in banded.stderr
    assert f"Quasi-identifiers: {after} of 300 responses are unique" in banded.stderr  # what the file holds
    left_out = runner.invoke(main, ["export", "q", "--db", db_path, "--suppress", "age"])
    assert left_out.exit_code == 0, left_out.output
    assert pd.read_csv(io.StringIO(left_out.stdout), dtype=str, keep_default_na=False)["age"].eq("").all()
    assert "0 of 300 responses are unique in their combination of region" in left_out.stderr
    shown = runner.invoke(main, ["survey", "show", "q", "--db", db_path])
    assert f"{unique} of 300 responses are unique" in shown.output


def test_the_api_export_says_it_in_its_headers(answered, client, admin_headers):
    response = client.get("/api/v1/surveys/q/export?format=csv", headers=admin_headers)
    assert response.status_code == 200
    unique = _unique(response.get_data(as_text=True), ["age", "region"])
    assert response.headers["X-Deniable-Quasi-Identifiers"] == "age, region"
    assert response.headers["X-Deniable-Unique-Rows"] == str(unique) and unique > 100


@pytest.mark.parametrize("option, words", [
    (["--coarsen", "dodged=10"], "'dodged' is not a public number question"),
    (["--coarsen", "region=10"], "'region' is not a public number question"),
    (["--coarsen", "age=0"], "must be positive"),
    (["--top-code", "age=old"], "give age=<number>"),
    (["--suppress", "nope"], "--suppress nope: not a frame column or public question"),
])
def test_a_remedy_that_cannot_apply_is_refused_naming_it(answered, runner, db_path, option, words):
    result = runner.invoke(main, ["export", "q", "--db", db_path, *option])
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output


def test_groups_count_the_smallest_combination_and_the_responses_alone():
    survey = Survey.from_dict(SPEC)
    rows = [{"id": str(i), "reports": {"age": age, "region": "north", "dodged": "yes"}}
            for i, age in enumerate([20, 20, 20, 31, 45])]
    found = groups(rows, survey)
    assert (found.responses, found.smallest, found.unique, found.small) == (5, 1, 2, 5)
    banded = groups(rows, survey, Remedies(coarsen={"age": 50.0}))
    assert (banded.smallest, banded.unique) == (5, 0)


def test_survey_check_says_before_fieldwork_how_many_respondents_share_a_combination(runner, tmp_path):
    spec = tmp_path / "ages.json"
    spec.write_text(__import__("json").dumps(SPEC), encoding="utf-8")
    checked = runner.invoke(main, ["survey", "check", str(spec), "--n", "400"])
    assert checked.exit_code == 0, checked.output
    assert ("WARNING: public answers: 328 combinations of age, region, 1.2 respondents each on average at n = 400"
            in checked.output) and "ask age in bands" in checked.output
    plenty = runner.invoke(main, ["survey", "check", str(spec), "--n", "100000"])
    assert "Public answers: 328 combinations of age, region, 305 respondents each" in plenty.output
    assert "WARNING: public answers" not in plenty.output
