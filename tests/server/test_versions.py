"""A new version must not hide the old responses: versions named by number or hash
prefix on every surface, per-version counts, estimates per version and pooled where the
randomization of a question is the same, a refusal naming the change where it is not."""

from __future__ import annotations

import json
import random
import re

import pytest

from deniable import storage
from deniable.analysis import LoadError, PoolingError, estimate, load, subgroups
from deniable.client import Survey
from deniable.client.versions import VersionError, resolve_version
from deniable.server.cli import main
from tests.conftest import EXAMPLES, SeededSource
from tests.server.conftest import ADMIN, sign_in

pytestmark = pytest.mark.both_engines

TRUTH = {"dodged": 0.3}
FIRST, SECOND = 400, 300


def _second_version(first: Survey) -> Survey:
    """A typo fix in one question's wording, a changed ε for another, one new question."""
    spec = first.to_dict()
    for question in spec["questions"]:
        if question["id"] == "dodged":
            question["text"] = "Have you ever dodged paying your taxes?"
        if question["id"] == "hours":
            question["privacy"] = {"design": "laplace", "epsilon": "0.5"}  # stronger: no confirmation needed
    spec["questions"].append({"id": "audited", "type": "yes_no", "text": "Have you ever been audited?",
                              "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}})
    return Survey.from_dict(spec)


def _answers(survey: Survey, rng: random.Random) -> dict:
    answers = {"dodged": "yes" if rng.random() < TRUTH["dodged"] else "no", "region": rng.choice(["North", "South"]),
               "cash": "Salary", "fairness": "Agree", "undeclared": [], "hours": 5}
    if "audited" in survey.questions:
        answers["audited"] = "no"
    return answers


def _respond(store, survey: Survey, count: int, rng: random.Random) -> list[dict]:
    items, reported = [], []
    source = SeededSource(rng.getrandbits(32))
    for _ in range(count):
        reports = survey.randomize(_answers(survey, rng), source)
        reported.append(reports)
        items.append((survey.hash, f"key-{rng.getrandbits(64):016x}", reports, None))
    outcomes = store.submit_many(survey.id, items)
    assert all(not isinstance(o, Exception) for o in outcomes)
    return reported


@pytest.fixture
def study(db_path):
    """Survey "tax": 400 responses under version 1, then 300 under version 2."""
    rng = random.Random(2026_11_23)
    first = Survey.from_file(EXAMPLES / "tax.yaml")
    second = _second_version(first)
    with storage.Store(db_path) as store:
        store.add_survey(first)
        reports_1 = _respond(store, first, FIRST, rng)
        assert store.add_survey(second, confirm_redesign=True)[1] == "new version"
        reports_2 = _respond(store, second, SECOND, rng)
    return {"db": db_path, "first": first, "second": second, "reports": (reports_1, reports_2)}


def test_versions_are_named_by_number_or_unique_prefix(study):
    first, second = study["first"], study["second"]
    with storage.Store(study["db"], read_only=True) as store:
        assert [v["responses"] for v in store.versions("tax")] == [FIRST, SECOND]
        assert store.find_version("tax").hash == second.hash
        assert store.find_version("tax", version=1).hash == first.hash
        assert store.find_version("tax", version="1").hash == first.hash
        assert store.find_version("tax", first.hash[:12]).hash == first.hash
        assert store.find_version("tax", first.hash.upper()[:8]).responses == FIRST
        with pytest.raises(storage.NotFound, match="no version 3"):
            store.find_version("tax", version=3)
        with pytest.raises(storage.Invalid, match="at least 4 characters"):
            store.find_version("tax", first.hash[:3])
        with pytest.raises(storage.NotFound, match="starts with 'zzzz'"):
            store.find_version("tax", "zzzz")
        # Submitting names the full hash: a prefix is not a version to randomize under.
        with pytest.raises(storage.StorageError):
            store.submit("tax", second.hash[:12], "k" * 16, {"dodged": "yes"})


def test_a_prefix_shared_by_two_versions_is_refused_naming_both():
    versions = [{"version": 1, "hash": "abcd1111" + "0" * 56}, {"version": 2, "hash": "abcd2222" + "0" * 56}]
    with pytest.raises(VersionError, match=r"starts more than one version .*1 abcd11110000, 2 abcd22220000"):
        resolve_version(versions, "tax", "abcd")
    assert resolve_version(versions, "tax", "abcd2")["version"] == 2
    assert resolve_version(versions, "tax")["version"] == 2
    with pytest.raises(VersionError, match="not both"):
        resolve_version(versions, "tax", "abcd2", 2)


def test_per_version_and_pooled_estimates(study):
    first, second = study["first"], study["second"]
    current = load(db=study["db"], survey_id="tax")
    old = load(db=study["db"], survey_id="tax", version=1)
    by_prefix = load(db=study["db"], survey_id="tax", spec_hash=first.hash[:12])
    pooled = load(db=study["db"], survey_id="tax", all_versions=True)
    assert (current.n, old.n, by_prefix.n, pooled.n) == (SECOND, FIRST, FIRST, FIRST + SECOND)
    assert current.estimate("dodged").versions == [f"2 {second.hash[:12]}"]
    assert estimate(old, "dodged").estimate.equals(estimate(by_prefix, "dodged").estimate)

    # The typo fix pools: the same figures as an estimate from both versions' reports put together.
    result = pooled.estimate("dodged")
    assert result.n == FIRST + SECOND
    assert result.versions == [f"1 {first.hash[:12]}", f"2 {second.hash[:12]}"]
    assert "Pooled over versions 1" in result.summary().as_text()
    everything = [r["dodged"] for part in study["reports"] for r in part]
    independent = estimate(second.questions["dodged"], everything)
    assert result.table.equals(independent.table)
    low, high = result.table.loc["yes", ["ci_low", "ci_high"]]
    assert low <= TRUTH["dodged"] <= high
    # Pooled subgroups count both versions too.
    assert sum(r.n for r in subgroups(pooled, "dodged", "region").values()) == FIRST + SECOND

    # A changed ε is not pooled, and the refusal names the change.
    with pytest.raises(PoolingError, match=r"hours: cannot pool versions 1 \w+ and 2 \w+: ε changed from 1 to 0.5"):
        pooled.estimate("hours")
    # A question new in version 2 is estimated from version 2 alone.
    assert pooled.estimate("audited").versions == [f"2 {second.hash[:12]}"]
    assert pooled.estimate("audited").n == SECOND
    assert len(pooled.frame(["dodged", "audited"])) == FIRST + SECOND
    with pytest.raises(LoadError, match="not both"):
        load(db=study["db"], survey_id="tax", version=1, all_versions=True)
    with pytest.raises(LoadError, match="no version 7"):
        load(db=study["db"], survey_id="tax", version=7)


def test_the_cli_estimates_any_version_and_pools(runner, study):
    first, second = study["first"], study["second"]
    db = ["--db", study["db"]]

    def run(*args):
        return runner.invoke(main, ["estimate", "tax", *db, *args])

    current = run("--question", "dodged", "--format", "json")
    assert current.exit_code == 0, current.output
    assert json.loads(current.output)[0]["n"] == SECOND
    for args in (["--version", "1"], ["--spec-hash", first.hash[:12]]):
        out = run("--question", "dodged", "--format", "json", *args)
        rows = json.loads(out.output)
        assert rows[0]["n"] == FIRST and rows[0]["versions"] == f"1 {first.hash[:12]}", out.output

    pooled = run("--all-versions")
    assert pooled.exit_code == 0, pooled.output
    assert f"versions 1 {first.hash[:12]}, 2 {second.hash[:12]} pooled, {FIRST + SECOND} responses" in pooled.output
    assert "Pooled over versions 1" in pooled.output
    assert re.search(r"Not pooled: hours: cannot pool versions .*ε changed from 1 to 0.5", pooled.output)
    as_json = json.loads(runner.invoke(main, ["estimate", "tax", *db, "--all-versions", "--format", "json"],
                                       catch_exceptions=False).stdout)
    dodged = [row for row in as_json if row["question"] == "dodged"]
    assert dodged[0]["n"] == FIRST + SECOND and dodged[0]["versions"].count(";") == 1
    assert not [row for row in as_json if row["question"] == "hours"]

    asked = run("--all-versions", "--question", "hours")
    assert asked.exit_code == 1 and "ε changed from 1 to 0.5" in asked.output
    assert "one of --version" in run("--version", "1", "--all-versions").output
    too_short = run("--spec-hash", first.hash[:2])
    assert too_short.exit_code == 1 and "at least 4 characters" in too_short.output


def test_export_list_and_show_count_per_version(runner, study, tmp_path):
    first = study["first"]
    output = tmp_path / "v1.csv"
    result = runner.invoke(main, ["export", "tax", "--db", study["db"], "--version", "1", "--output", str(output)])
    assert result.exit_code == 0, result.output
    assert f"Wrote {FIRST} responses of version 1" in result.output
    assert len(output.read_text().splitlines()) == FIRST + 1
    by_prefix = runner.invoke(main, ["export", "tax", "--db", study["db"], "--spec-hash", first.hash[:12], "--format", "jsonl"])
    assert len(by_prefix.stdout.splitlines()) == FIRST
    listed = runner.invoke(main, ["survey", "list", "--db", study["db"]]).output
    assert re.search(rf"tax\s+2\s+{FIRST + SECOND}\s+{SECOND}\s", listed), listed
    shown = runner.invoke(main, ["survey", "show", "tax", "--db", study["db"]]).output
    assert f"version 1 {first.hash[:12]}" in shown and f"{FIRST} responses" in shown


def test_the_api_reads_any_version(client, study):
    first = study["first"]
    headers = {"Authorization": f"Bearer {ADMIN}"}
    for query in ("version=1", f"spec_hash={first.hash[:12]}"):
        body = client.get(f"/api/v1/surveys/tax/counts?{query}", headers=headers).get_json()
        assert body["version"] == 1 and body["responses"] == FIRST
        export = client.get(f"/api/v1/surveys/tax/export?{query}", headers=headers)
        assert len(export.get_data(as_text=True).splitlines()) == FIRST
    missing = client.get("/api/v1/surveys/tax/counts?version=9", headers=headers)
    assert missing.status_code == 404 and missing.get_json()["error"]["field"] == "version"
    wrong = client.get("/api/v1/surveys/tax/counts?version=two", headers=headers)
    assert wrong.status_code == 422 and wrong.get_json()["error"]["field"] == "version"
    listed = client.get("/api/v1/surveys", headers=headers).get_json()["surveys"][0]
    assert (listed["responses"], listed["version_responses"]) == (FIRST + SECOND, SECOND)
    versions = client.get("/api/v1/surveys/tax/versions?specs=1", headers=headers).get_json()["versions"]
    assert Survey.from_dict(versions[0]["spec"]).hash == first.hash


def test_load_from_a_server_reads_old_versions_and_pools(live_server, study):
    remote = load(url=live_server, survey_id="tax", token=ADMIN, all_versions=True)
    local = load(db=study["db"], survey_id="tax", all_versions=True)
    assert remote.estimate("dodged").table.equals(local.estimate("dodged").table)
    assert load(url=live_server, survey_id="tax", token=ADMIN, version=1).n == FIRST


def test_the_dashboard_reaches_every_version(client, study):
    first = study["first"]
    sign_in(client)
    listing = client.get("/admin/").get_data(as_text=True)
    assert f"{FIRST + SECOND} <span class=\"note\">({SECOND} in version 2)</span>" in listing
    # Two versions hold responses: the survey's page lands on them pooled, each version a tab.
    landing = client.get("/admin/surveys/tax").get_data(as_text=True)
    assert f"<strong>{FIRST + SECOND}</strong> responses" in landing and "All versions pooled (" in landing
    assert re.search(r'pooled" aria-current="page">All versions pooled \(700\)', landing)
    assert "/admin/surveys/tax/versions/1" in landing and "/admin/surveys/tax/versions/2" in landing
    current = client.get("/admin/surveys/tax/versions/2").get_data(as_text=True)
    assert "Other versions hold responses too" in current and "/admin/surveys/tax/versions/1" in current
    assert re.search(r'versions/2" aria-current="page">Version 2 \(current\) \(300\)', current)
    old = client.get("/admin/surveys/tax/versions/1")
    page = old.get_data(as_text=True)
    assert old.status_code == 200 and f"Version 1 <code>{first.hash[:12]}</code> (not the current version)" in page
    assert f"<strong>{FIRST}</strong> responses" in page and "no responses yet" not in page
    pooled = client.get("/admin/surveys/tax/pooled").get_data(as_text=True)
    assert f"<strong>{FIRST + SECOND}</strong> responses" in pooled
    assert "Not pooled: hours: cannot pool" in pooled and "Pooled over versions 1" in pooled
    assert client.get("/admin/surveys/tax/versions/5").status_code == 404


# --- every version in one export ------------------------------------------------------

def _third_version(second: Survey) -> Survey:
    """`cash` offers one more answer, listed first: every old code of it moves."""
    spec = second.to_dict()
    for question in spec["questions"]:
        if question["id"] == "cash":
            question["options"] = ["Tips", *question["options"]]
    return Survey.from_dict(spec)


def test_export_all_versions_in_every_format(runner, study, tmp_path):
    import csv

    import pyreadstat

    first, second = study["first"], study["second"]
    third = _third_version(second)
    rng = random.Random(3)
    with storage.Store(study["db"]) as store:
        store.add_survey(third, confirm_redesign=True)
        _respond(store, third, 50, rng)
    total = FIRST + SECOND + 50
    db = ["--db", study["db"]]

    lines = runner.invoke(main, ["export", "tax", *db, "--all-versions", "--format", "jsonl"]).stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == total
    assert [r["version"] for r in rows].count(1) == FIRST and [r["version"] for r in rows].count(3) == 50
    assert list(rows[0])[:4] == ["id", "spec_hash", "version", "received_on"]
    by_id = {r["id"]: r for r in rows}
    one = [json.loads(line) for line in runner.invoke(main, ["export", "tax", *db, "--version", "1", "--format",
                                                               "jsonl"]).stdout.splitlines()]
    assert all(by_id[r["id"]]["reports"] == r["reports"] and by_id[r["id"]]["spec_hash"] == first.hash for r in one)

    output = tmp_path / "all.csv"
    result = runner.invoke(main, ["export", "tax", *db, "--all-versions", "--output", str(output)])
    assert result.exit_code == 0, result.output
    assert f"Wrote {total} responses of versions 1, 2, 3" in result.output
    table = list(csv.DictReader(output.read_text().splitlines()))
    header = output.read_text().splitlines()[0].split(",")
    assert header[:4] == ["id", "spec_hash", "version", "received_on"] and "audited" in header
    assert len(table) == total
    for row in table:
        source = by_id[row["id"]]
        assert int(row["version"]) == source["version"]
        assert row["dodged"] == source["reports"]["dodged"]
        # A question version 1 did not ask is empty in its rows, and only there.
        assert (row["audited"] == "") == (source["version"] == 1)
    assert "(codebook: " in result.output
    book = (tmp_path / "all.codebook.md").read_text()
    assert "versions 1, 2, 3 pooled" in book and book.index("## Version 3") < book.index("## Version 1")
    assert "### `audited`" in book

    sav = tmp_path / "all.sav"
    assert runner.invoke(main, ["export", "tax", *db, "--all-versions", "--format", "sav", "--output", str(sav)]).exit_code == 0
    frame, meta = pyreadstat.read_sav(str(sav))
    assert len(frame) == total and list(frame["version"].value_counts().sort_index()) == [FIRST, SECOND, 50]
    labels = meta.variable_value_labels["cash"]
    # The newest version's codes (Tips = 1, …), older rows recoded by value, never by their old position.
    assert labels[1.0] == "Tips" and sorted(labels.values()) == sorted(third.questions["cash"].options)
    for position, response_id in enumerate(frame["id"]):
        assert labels[frame["cash"][position]] == by_id[response_id]["reports"]["cash"]
    assert "cash_v1" not in frame.columns and "cash_v2" not in frame.columns
    assert frame["audited"].isna().sum() == FIRST

    # read back with every version's spec, the export pools as the database does (load() refused a list of specs)
    from deniable.analysis import estimate, load
    from deniable.analysis.errors import LoadError

    stored = load(db=study["db"], survey_id="tax", all_versions=True)
    jsonl = tmp_path / "all.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    for path in (output, jsonl):
        read = load(path, spec=[first, second, third])
        assert [v.n for v in read.versions] == [FIRST, SECOND, 50]
        for qid in ("dodged", "fairness"):
            assert estimate(read, qid).table.equals(estimate(stored, qid).table), (path.suffix, qid)
        with pytest.raises(LoadError, match="have no spec among those given.*pass spec=\\[\\.\\.\\.\\] with every"):
            load(path, spec=[first, second])

    refused = runner.invoke(main, ["export", "tax", *db, "--all-versions", "--version", "1"])
    assert refused.exit_code == 2 and "--all-versions" in refused.output


def test_a_column_whose_meaning_changed_keeps_each_versions_own_variable(runner, db_path, tmp_path):
    import pyreadstat

    first = Survey.from_dict({"id": "s", "title": "S", "questions": [
        {"id": "q", "type": "number", "text": "How many?", "min": 0, "max": 3, "privacy": "none"}]})
    second = Survey.from_dict({"id": "s", "title": "S", "questions": [
        {"id": "q", "type": "choice", "text": "Which?", "options": ["a", "b"], "privacy": "none"}]})
    with storage.Store(db_path) as store:
        store.add_survey(first)
        store.submit("s", first.hash, "key-00000001", {"q": 2})
        store.add_survey(second, confirm_redesign=True)
        store.submit("s", second.hash, "key-00000002", {"q": "b"})
    sav = tmp_path / "s.sav"
    result = runner.invoke(main, ["export", "s", "--db", db_path, "--all-versions", "--format", "sav", "--output", str(sav)])
    assert result.exit_code == 0, result.output
    frame, meta = pyreadstat.read_sav(str(sav))
    by_version = frame.set_index("version")
    assert by_version.loc[2, "q"] == 2 and meta.variable_value_labels["q"][2] == "b"
    assert by_version.loc[1, "q_v1"] == 2 and by_version.loc[2, ["q_v1"]].isna().all()
    assert by_version.loc[1, ["q"]].isna().all()


def test_the_api_and_dashboard_export_every_version(client, study):
    headers = {"Authorization": f"Bearer {ADMIN}"}
    export = client.get("/api/v1/surveys/tax/export?all_versions=1", headers=headers)
    assert export.status_code == 200, export.get_data(as_text=True)
    assert 'filename="tax-all-versions.jsonl"' in export.headers["Content-Disposition"]
    rows = [json.loads(line) for line in export.get_data(as_text=True).splitlines()]
    assert len(rows) == FIRST + SECOND and {r["version"] for r in rows} == {1, 2}
    both = client.get("/api/v1/surveys/tax/export?all_versions=1&version=1", headers=headers)
    assert both.status_code == 422 and both.get_json()["error"]["field"] == "all_versions"
    odd = client.get("/api/v1/surveys/tax/export?all_versions=maybe", headers=headers)
    assert odd.status_code == 422 and odd.get_json()["error"]["field"] == "all_versions"
    sign_in(client)
    page = client.get("/admin/surveys/tax/pooled").get_data(as_text=True)
    assert "/admin/surveys/tax/pooled/export.csv" in page
    download = client.get("/admin/surveys/tax/pooled/export.csv")
    assert download.status_code == 200 and len(download.get_data(as_text=True).splitlines()) == FIRST + SECOND + 1
    with storage.Store(study["db"], read_only=True) as store:
        details = [line["detail"] for line in store.audit_log() if line["action"] == "responses exported"]
    assert details.count("versions 1, 2, jsonl") == 1 and details.count("versions 1, 2, csv") == 1
