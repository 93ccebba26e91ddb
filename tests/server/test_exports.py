"""Exports people open: CSV with one 0/1 column per multi-select option, labelled SPSS and
Stata files that round-trip through pyreadstat and pandas, a SQLite file Datasette serves, and the codebook beside
them."""

from __future__ import annotations

import asyncio
import sqlite3
import sys

import pandas as pd
import pyreadstat
import pytest
from datasette.app import Datasette

from deniable.analysis import load
from deniable.server.cli import main
from deniable.server.export_formats import EXPORT_FORMATS
from tests.server.conftest import ADMIN, ANSWERS, sign_in

RESPONSES = [
    {**ANSWERS},
    {**ANSWERS, "dodged": "no", "region": "South", "undeclared": ["Tips", "Side jobs"], "hours": 40},
    {**ANSWERS, "region": "West", "undeclared": [], "cash": "Other", "fairness": "Strongly agree"},
]


@pytest.fixture
def filled(store, survey, rng):
    """Three responses with known reports (randomized with a seeded source)."""
    stored = []
    for number, answers in enumerate(RESPONSES):
        reports = survey.randomize(answers, rng)
        store.submit("tax", survey.hash, f"export-{number:04d}", reports)
        stored.append(reports)
    return stored


def test_csv_has_one_0_1_column_per_option_and_loads_back(runner, db_path, filled, tmp_path):
    target = tmp_path / "tax.csv"
    result = runner.invoke(main, ["export", "tax", "--db", db_path, "--output", str(target)])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(target, dtype=str, keep_default_na=False)
    options = ["Tips", "Rental income", "Side jobs", "Foreign accounts"]
    assert [f"undeclared.{o}" for o in options] == [c for c in frame.columns if c.startswith("undeclared")]
    assert "undeclared" not in frame.columns
    exported = {tuple(frame.loc[i, [f"undeclared.{o}" for o in options]]) for i in frame.index}
    assert exported == {tuple(str(int(o in r["undeclared"])) for o in options) for r in filled}
    assert (tmp_path / "tax.codebook.md").exists()
    # The analysis reads the columns back into the reports that were stored.
    from_file = load(target, spec=_spec_file(runner, db_path, tmp_path))
    from_db = load(db=db_path, survey_id="tax")
    for qid in from_db.survey.questions:
        assert from_file.question_counts(qid).tolist() == from_db.question_counts(qid).tolist(), qid


def test_a_version_without_responses_exports_its_header(runner, db_path, survey, tmp_path):
    target = tmp_path / "empty.csv"
    result = runner.invoke(main, ["export", "tax", "--db", db_path, "--output", str(target)])
    assert result.exit_code == 0 and "Wrote 0 responses" in result.output, result.output
    frame = pd.read_csv(target, dtype=str)
    assert frame.empty and list(frame.columns)[:3] == ["id", "spec_hash", "received_on"] and "dodged" in frame.columns
    assert runner.invoke(main, ["export", "tax", "--db", db_path]).output.startswith("id,spec_hash,received_on,")


def _spec_file(runner, db_path, tmp_path):
    path = tmp_path / "tax.json"
    assert runner.invoke(main, ["survey", "export", "tax", "--db", db_path, "--format", "json", "--output", str(path)]).exit_code == 0
    return path


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_labelled_files_round_trip_with_their_labels(runner, db_path, filled, tmp_path, fmt):
    target = tmp_path / f"tax.{fmt}"
    result = runner.invoke(main, ["export", "tax", "--db", db_path, "--format", fmt, "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert "codebook" in result.output and (tmp_path / "tax.codebook.md").exists()
    read = pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta
    frame, meta = read(str(target))
    assert len(frame) == len(RESPONSES)
    labels = dict(zip(meta.column_names, meta.column_labels))
    assert labels["dodged"] == "[randomized] Have you ever dodged your taxes?"
    assert labels["region"] == "Which region do you live in?"  # public: not marked
    assert labels["undeclared_Rental_income"].startswith("[randomized] Which of these have you ever left undeclared?: Rental")
    values = meta.variable_value_labels
    assert values["dodged"] == {1.0: "yes", 0.0: "no"}
    assert values["region"] == {1.0: "North", 2.0: "South", 3.0: "East", 4.0: "West"}
    assert values["undeclared_Tips"] == {0.0: "not in report", 1.0: "in report"}
    # The coded values are the stored reports.
    decoded = sorted(zip(frame["dodged"].map({1.0: "yes", 0.0: "no"}), frame["hours"],
                         frame["undeclared_Side_jobs"].astype(int)))
    assert decoded == sorted((r["dodged"], float(r["hours"]), int("Side jobs" in r["undeclared"])) for r in filled)
    if fmt == "sav":
        assert "deniable export: tax version 1" in meta.file_label
        assert "analyse them with deniable" in " ".join(meta.notes)
    else:
        with pd.io.stata.StataReader(target) as reader:  # pandas reads the labels too
            assert reader.variable_labels()["dodged"].startswith("[randomized]")
            assert reader.value_labels()[reader._lbllist[reader._varlist.index("region")]][2] == "South"
            assert "tax version 1" in reader.data_label


def test_the_codebook_documents_each_column_alphabet(runner, db_path, filled):
    text = runner.invoke(main, ["export", "tax", "--db", db_path, "--format", "codebook"]).output
    assert "tabulating them directly gives wrong shares" in text
    assert "## `hours` [randomized]" in text and "numbers from -40 to 80 in steps of 5" in text
    assert "reports outside that range are the randomization at work" in text
    assert "## `region`\n" in text and "public: sent as given" in text and "1 = North, 2 = South" in text
    assert "`undeclared.Side jobs`" in text and "undeclared_Side_jobs" in text


def _sqlite_export(runner, db_path, target, *options):
    result = runner.invoke(main, ["export", "tax", "--db", db_path, "--format", "sqlite", "--output", str(target), *options])
    assert result.exit_code == 0, result.output
    assert "Wrote 3 responses" in result.output and target.with_name(f"{target.stem}.codebook.md").exists()
    return sqlite3.connect(target)


def test_a_sqlite_export_holds_the_csv_cells_typed_and_keyed(runner, db_path, filled, tmp_path):
    csv = tmp_path / "tax.csv"
    assert runner.invoke(main, ["export", "tax", "--db", db_path, "--output", str(csv)]).exit_code == 0
    expected = pd.read_csv(csv, dtype=str, keep_default_na=False).set_index("id")
    with _sqlite_export(runner, db_path, tmp_path / "tax.sqlite") as db:
        assert {name for name, in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {
            "responses", "versions", "questions", "notes"}
        types = {name: kind for _, name, kind, *_ in db.execute("PRAGMA table_info(responses)")}
        assert list(types) == ["id", *expected.columns]  # the CSV's columns, in its order
        assert (types["hours"], types["undeclared.Tips"], types["dodged"], types["region"]) == ("REAL", "INTEGER", "TEXT", "TEXT")
        cursor = db.execute("SELECT * FROM responses")
        names = [column[0] for column in cursor.description]
        rows = {row[0]: dict(zip(names, row)) for row in cursor}
        assert set(rows) == set(expected.index)
        for response, cells in rows.items():
            for column, value in cells.items():
                written = expected.loc[response, column] if column != "id" else response
                # an empty CSV cell is NULL; a number the same number; text the same text
                assert (value is None and written == "") or (
                    float(written) == value if types[column] == "REAL" else str(value) == written), (column, value, written)
        assert db.execute("PRAGMA foreign_key_list(responses)").fetchall()[0][2:5] == ("versions", "spec_hash", "spec_hash")
        assert db.execute("SELECT version, responses FROM versions").fetchall() == [(1, 3)]
        questions = {row[0]: row[1:] for row in db.execute("SELECT question, randomized, epsilon, columns FROM questions")}
        assert questions["region"] == (0, None, "region")
        assert questions["dodged"][0] == 1 and questions["dodged"][1] > 0
        assert questions["undeclared"][2].startswith("undeclared.Tips, undeclared.Rental income")
        assert "tabulating them directly gives wrong shares" in db.execute(
            "SELECT text FROM notes WHERE topic = 'randomized columns'").fetchone()[0]


def test_a_sqlite_export_opens_in_datasette_with_each_response_linked_to_its_version(runner, db_path, filled, tmp_path):
    target = tmp_path / "tax.sqlite"
    _sqlite_export(runner, db_path, target, "--all-versions").close()

    async def read(path):
        datasette = Datasette([str(target)])
        await datasette.invoke_startup()
        return (await datasette.client.get(path)).json()

    rows = asyncio.run(read("/tax/responses.json?_shape=array&_labels=on"))
    assert len(rows) == 3 and {row["version"] for row in rows} == {1}  # pooled: the version is a number
    assert {row["spec_hash"]["value"] for row in rows} == {filled_hash(db_path)}  # a link to the versions row
    counted = asyncio.run(read("/tax.json?sql=select+count(*)+as+n+from+responses+where+dodged+%3D+'yes'&_shape=array"))
    assert counted[0]["n"] == sum(reports["dodged"] == "yes" for reports in filled)


def test_without_sqlite_utils_a_sqlite_export_is_refused_and_nothing_is_written(runner, db_path, filled, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sqlite_utils", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "deniable.storage.export_file", raising=False)
    target = tmp_path / "tax.sqlite"
    result = runner.invoke(main, ["export", "tax", "--db", db_path, "--format", "sqlite", "--output", str(target)])
    assert result.exit_code == 1 and "SQLite exports need sqlite-utils: pip install 'deniable[server]'" in result.output
    assert "Traceback" not in result.output and list(tmp_path.glob("tax*")) == []


def filled_hash(db_path) -> str:
    return load(db=db_path, survey_id="tax").survey.hash


def test_binary_formats_need_an_output_file(runner, db_path, filled):
    result = runner.invoke(main, ["export", "tax", "--db", db_path, "--format", "sav"])
    assert result.exit_code == 2 and "--output" in result.output


def test_the_api_and_dashboard_serve_every_format(client, filled, tmp_path):
    headers = {"Authorization": f"Bearer {ADMIN}"}
    response = client.get("/api/v1/surveys/tax/export?format=sav", headers=headers)
    assert response.status_code == 200 and response.mimetype == "application/x-spss-sav"
    assert 'filename="tax-v1.sav"' in response.headers["Content-Disposition"]
    (tmp_path / "api.sav").write_bytes(response.data)
    assert len(pyreadstat.read_sav(str(tmp_path / "api.sav"))[0]) == len(RESPONSES)
    assert client.get("/api/v1/surveys/tax/export?format=codebook", headers=headers).data.startswith(b"# Codebook")
    sign_in(client)
    page = client.get("/admin/surveys/tax").get_data(as_text=True)
    for fmt in EXPORT_FORMATS:
        link = f"/admin/surveys/tax/versions/1/export.{fmt}"
        assert link in page
        assert client.get(link).status_code == 200, fmt
    assert client.get("/admin/surveys/tax/versions/1/export.xlsx").status_code == 404


def test_an_option_named_none_is_a_value_in_the_csv_and_the_codebook_says_how_to_read_it(runner, db_path, store, tmp_path):
    from deniable.client import Survey
    from tests.conftest import SeededSource

    survey = Survey.from_dict({"id": "pets", "title": "Pets", "questions": [
        {"id": "pets", "type": "choice", "text": "Pets?", "options": ["None", "NA", "Some"], "privacy": "none"},
        {"id": "bitten", "type": "yes_no", "text": "Bitten?"}]})
    store.add_survey(survey)
    for i, pets in enumerate(["None", "NA", "Some", "None"]):
        store.submit("pets", survey.hash, f"key-{i:04d}", survey.randomize({"pets": pets, "bitten": "no"}, rng=SeededSource(i)))
    target = tmp_path / "pets.csv"
    assert runner.invoke(main, ["export", "pets", "--db", db_path, "--output", str(target)]).exit_code == 0
    codebook = (tmp_path / "pets.codebook.md").read_text()
    assert "keep_default_na=False" in codebook and "`None` and `NA` included" in codebook
    as_text = pd.read_csv(target, dtype=str, keep_default_na=False)
    assert sorted(as_text["pets"]) == ["NA", "None", "None", "Some"]
    with load(str(target), spec=survey) as data:
        assert data.levels("pets") == ["None", "NA", "Some"]
        assert data.question_counts("pets").tolist() == [2, 1, 1]
