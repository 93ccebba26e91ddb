"""A repeated survey end to end, on both engines: waves opened and closed from the CLI, the API and the
dashboard; each response records its wave (and nothing else that links a person's waves); bad input is
refused naming the field with nothing stored; the estimates wave by wave and the change between waves are the
same numbers in Python, the CLI, the dashboard and a CSV export read back."""

import csv
import io
import json
import random
import re
import secrets

import pytest

from deniable import storage
from deniable.analysis import AnalysisError, SampleDesign, estimate_table, load
from deniable.client import Survey
from deniable.client.memo import Memo
from deniable.client.reports import WAVES
from deniable.server.cli import main
from tests.conftest import EXAMPLES, SeededSource
from tests.server.conftest import sign_in, table_rows

pytestmark = pytest.mark.both_engines


def answers(rng, burned: bool) -> dict:
    return {"team": rng.choice(["Sales", "Engineering", "Support"]), "burnout": "yes" if burned else "no",
            "looking": "no", "workload": "Mostly"}


@pytest.fixture
def panel(store, pulse):
    """300 people answer two waves, each with their own memo; burnout rises from 20% to 40%. Seeded throughout,
    the instantaneous layer included: the estimated change has a spread of about 0.06 over surveys, so an unseeded
    one fell outside the test's window in 3.5% of 200 simulated panels."""
    rng = random.Random(21)
    layer = SeededSource(22)
    people = [(Memo.from_secret(rng.randbytes(32)), rng.random()) for _ in range(300)]
    store.open_wave("pulse", "2026-10")
    for memo, u in people:
        store.submit("pulse", pulse.hash, secrets.token_hex(16), pulse.randomize(answers(rng, u < 0.2), rng=layer, memo=memo))
    store.open_wave("pulse", "2026-11")
    for memo, u in people:
        store.submit("pulse", pulse.hash, secrets.token_hex(16), pulse.randomize(answers(rng, u < 0.4), rng=layer, memo=memo),
                     wave="2026-11")
    return people


def test_each_response_records_its_wave_and_nothing_links_a_persons_waves(store, panel):
    rows = table_rows(store, "responses")
    assert sorted({r["wave"] for r in rows}) == ["2026-10", "2026-11"]
    assert sum(r["wave"] == "2026-11" for r in rows) == 300
    # a response row holds what it held before plus its wave: no memo, no device id, no person key
    assert set(rows[0]) == {"id", "survey_id", "spec_hash", "received_on", "idempotency_key", "fingerprint", "wave",
                            "frame_cell", "seconds", "paradata"}
    waves = store.waves("pulse")
    assert [(w["label"], w["responses"], w["closed_on"] is None) for w in waves] == \
        [("2026-10", 300, False), ("2026-11", 300, True)]


def test_bad_waves_are_refused_naming_the_field_and_nothing_is_stored(store, client, pulse, admin_headers):
    body = {"spec_hash": pulse.hash, "reports": pulse.randomize(answers(random.Random(1), True), memo=Memo.new())}

    def post(**extra):
        return client.post("/api/v1/surveys/pulse/responses", json={**body, "idempotency_key": secrets.token_hex(8), **extra})

    refused = post()
    assert refused.status_code == 409 and refused.json["error"]["field"] == "wave"
    assert "no wave is open" in refused.json["error"]["message"]
    store.open_wave("pulse", "w1")
    store.open_wave("pulse", "w2")
    for extra, status, words in [({"wave": "w1"}, 410, "wave 'w1' of survey 'pulse' is closed"),
                                 ({"wave": "w9"}, 422, "has no wave 'w9'"),
                                 ({"wave": 3}, 422, "must be the label of a wave")]:
        refused = post(**extra)
        assert refused.status_code == status and refused.json["error"]["field"] == "wave", extra
        assert words in refused.json["error"]["message"]
    assert table_rows(store, "responses") == []
    stored = post(wave="w2")
    assert stored.status_code == 201 and stored.json["wave"] == "w2"
    served = client.get("/api/v1/surveys/pulse").json
    assert served["wave"] == "w2"
    # a survey asked once takes no wave, and opens none
    demo = Survey.from_file(EXAMPLES / "tax.yaml")
    store.add_survey(demo)
    once = client.post("/api/v1/surveys/tax/responses", json={"spec_hash": demo.hash, "idempotency_key": "k" * 12,
                                                               "reports": demo.simulate({"dodged": "yes"}), "wave": "w2"})
    assert once.status_code == 422 and once.json["error"]["field"] == "wave"
    refused = client.post("/api/v1/surveys/tax/waves", json={"label": "w1"}, headers=admin_headers)
    assert refused.status_code == 422 and "not repeated" in refused.json["error"]["message"]
    for label, status in [("", 422), ("a/b", 422), ("x" * 65, 422), ("w2", 409)]:
        refused = client.post("/api/v1/surveys/pulse/waves", json={"label": label}, headers=admin_headers)
        assert refused.status_code == status and refused.json["error"]["field"] == "wave", label
    assert len(table_rows(store, "responses")) == 1 and len(store.waves("pulse")) == 2


def test_a_retry_after_its_wave_closed_gets_the_first_acknowledgement(store, client, pulse):
    store.open_wave("pulse", "w1")
    body = {"spec_hash": pulse.hash, "idempotency_key": "retry-key-1", "wave": "w1",
            "reports": pulse.randomize(answers(random.Random(2), False), memo=Memo.new())}
    first = client.post("/api/v1/surveys/pulse/responses", json=body)
    store.open_wave("pulse", "w2")
    again = client.post("/api/v1/surveys/pulse/responses", json=body)
    assert (first.status_code, again.status_code) == (201, 200) and again.json == first.json
    assert len(table_rows(store, "responses")) == 1


def test_waves_from_the_api_and_the_batch_path(store, client, pulse, admin_headers):
    assert client.get("/api/v1/surveys/pulse/waves").status_code == 401
    opened = client.post("/api/v1/surveys/pulse/waves", json={"label": "2026-12"}, headers=admin_headers)
    assert opened.status_code == 201 and opened.json["label"] == "2026-12" and opened.json["closed_on"] is None
    rng = random.Random(3)
    items = [{"spec_hash": pulse.hash, "idempotency_key": secrets.token_hex(8), "wave": "2026-12",
              "reports": pulse.randomize(answers(rng, True), memo=Memo.new())} for _ in range(3)]
    items.append({**items[0], "idempotency_key": secrets.token_hex(8), "wave": "2026-01"})
    batch = client.post("/api/v1/surveys/pulse/responses:batch", json={"items": items}).json
    assert [r["status"] for r in batch["results"]] == [201, 201, 201, 422]
    closed = client.post("/api/v1/surveys/pulse/waves/close", headers=admin_headers)
    assert closed.status_code == 200 and closed.json["responses"] == 3
    listed = client.get("/api/v1/surveys/pulse/waves", headers=admin_headers).json["waves"]
    assert [(w["label"], w["responses"]) for w in listed] == [("2026-12", 3)]
    assert client.post("/api/v1/surveys/pulse/waves/close", headers=admin_headers).status_code == 409
    assert [e["action"] for e in store.audit_log(10)][:2] == ["wave closed", "wave opened"]


def test_the_cli_opens_lists_and_closes_waves(runner, db_path, store, pulse):
    opened = runner.invoke(main, ["survey", "wave", "pulse", "--open", "2026-11", "--db", db_path])
    assert opened.exit_code == 0 and "Wave '2026-11' of survey 'pulse' is open" in opened.output
    listed = runner.invoke(main, ["survey", "wave", "pulse", "--db", db_path])
    assert "2026-11" in listed.output and "OPEN" in listed.output
    closed = runner.invoke(main, ["survey", "wave", "pulse", "--close", "--db", db_path])
    assert closed.exit_code == 0 and "is closed (0 responses)" in closed.output
    store.add_survey(Survey.from_file(EXAMPLES / "tax.yaml"))
    refused = runner.invoke(main, ["survey", "wave", "tax", "--open", "w1", "--db", db_path])
    assert refused.exit_code != 0 and "not repeated" in refused.output and "Traceback" not in refused.output
    both = runner.invoke(main, ["survey", "wave", "pulse", "--open", "x", "--close", "--db", db_path])
    assert both.exit_code == 2
    shown = runner.invoke(main, ["survey", "show", "pulse", "--db", db_path])
    assert "REPEATED" in shown.output and "all waves ε∞ = 1.0986" in shown.output and "Waves:" in shown.output


def test_the_change_between_waves_is_the_same_number_on_every_surface(runner, db_path, store, panel, client, tmp_path):
    data = load(db=db_path, survey_id="pulse")
    assert data.waves == ["2026-10", "2026-11"]
    by_wave = data.by_wave("burnout")
    change = data.compare_waves("burnout", "2026-10", "2026-11")
    before, after = (by_wave[w].table.at["yes", "estimate"] for w in data.waves)
    assert change.difference == pytest.approx(after - before)
    assert change.ci.low <= change.difference <= change.ci.high
    assert "conservative" in change.note
    assert 0.1 < after - before < 0.35  # 20% → 40% in truth; 300 people
    cli = runner.invoke(main, ["estimate", "pulse", "--by-wave", "--question", "burnout", "--db", db_path])
    assert cli.exit_code == 0, cli.output
    assert f"{change.difference:+.4f}" in cli.output and f"[{change.ci.low:.4f}, {change.ci.high:.4f}]" in cli.output
    as_json = json.loads(runner.invoke(main, ["estimate", "pulse", "--by-wave", "--question", "burnout", "--format", "json",
                                              "--db", db_path]).output)
    rows = {(r["wave"], r["answer"]): r["estimate"] for r in as_json}
    assert rows[("2026-11", "yes")] == pytest.approx(after, abs=5e-5)
    sign_in(client)
    page = client.get("/admin/surveys/pulse").get_data(as_text=True)
    assert f"{change.difference:+.3f}" in page and f"[{change.ci.low:.3f}, {change.ci.high:.3f}]" in page
    assert f"{after:.3f}" in page and "Open a new wave" in page and "responses-per-day" in page
    # the CSV export carries the wave; read back with the spec, the same estimates
    record = store.get_survey("pulse")
    exported = sign_and_export(client, record)
    assert "wave" in next(csv.reader(io.StringIO(exported)))
    path = tmp_path / "pulse.csv"
    path.write_text(exported)
    again = load(path, spec=record.survey)
    assert again.waves == data.waves  # by their first day, then by label
    assert again.compare_waves("burnout", "2026-10", "2026-11").difference == pytest.approx(change.difference)


def sign_and_export(client, record) -> str:
    return client.get(f"/admin/surveys/pulse/versions/{record.version}/export.csv").get_data(as_text=True)


def test_the_dashboard_opens_and_closes_waves(client, store, pulse):
    sign_in(client)
    page = client.get("/admin/surveys/pulse").get_data(as_text=True)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    opened = client.post("/admin/surveys/pulse/waves", data={"csrf": csrf, "label": "autumn"})
    assert opened.status_code == 303
    assert store.open_wave_label("pulse") == "autumn"
    refused = client.post("/admin/surveys/pulse/waves", data={"csrf": csrf, "label": "autumn"})
    assert refused.status_code == 409
    assert client.post("/admin/surveys/pulse/waves/close", data={"csrf": "wrong"}).status_code in (400, 403)
    closed = client.post("/admin/surveys/pulse/waves/close", data={"csrf": csrf})
    assert closed.status_code == 303 and store.open_wave_label("pulse") is None


def test_the_page_of_a_repeated_survey_says_when_no_wave_is_open(client, store, pulse):
    closed = client.get("/s/pulse")
    assert closed.status_code == 409 and "no wave is open" in closed.get_data(as_text=True)
    store.open_wave("pulse", "w1")
    page = client.get("/s/pulse").get_data(as_text=True)
    data = json.loads(re.search(r'<script type="application/json" id="survey-data">(.*?)</script>', page, re.S).group(1))
    assert data["wave"] == "w1"
    assert "asked again in later waves" in page
    # without JavaScript only the public question can be answered: a memo lives in the browser
    assert 'name="team"' in page and 'name="burnout"' not in page


def test_responses_per_day_are_daily_counts(store, panel):
    days = store.responses_per_day("pulse")
    assert sum(n for _, n in days) == 600 and all(re.fullmatch(r"\d{4}-\d\d-\d\d", day) for day, _ in days)


def test_grouping_by_wave_of_a_survey_asked_once_is_refused(store, client, admin_headers):
    store.add_survey(Survey.from_file(EXAMPLES / "tax.yaml"))
    refused = client.get(f"/api/v1/surveys/tax/counts?by={WAVES}", headers=admin_headers)
    assert refused.status_code == 422 and refused.json["error"]["field"] == "by"
    with pytest.raises(storage.StorageError):
        store.open_wave("tax", "w1")


def test_a_version_that_would_redraw_an_answered_question_from_the_same_memo_is_refused(runner, db_path, store, pulse,
                                                                                          client, admin_headers, tmp_path):
    """Devices that answered a repeated survey hold their permanent reports: a new version that changes a question's
    design (or answer list, or split ballot) would draw the new one from the same memo randomness, and the pair can give
    the answer away (tests/client/test_panels.py). Until the survey has responses anything goes; after, the CLI, the
    API and the dashboard refuse it naming the question, and store nothing; rewording, or a new id, is accepted."""
    spec = pulse.to_dict()
    redesigned = json.loads(json.dumps(spec))
    redesigned["questions"][1]["privacy"] = {"design": "warner", "p": "3/4"}
    assert store.add_survey(Survey.from_dict(redesigned))[1] == "new version"  # nobody has answered yet
    store.add_survey(pulse)
    store.open_wave("pulse", "2026-10")
    store.submit("pulse", pulse.hash, secrets.token_hex(16), pulse.randomize(answers(random.Random(4), True), memo=Memo.new()))
    before = store.versions("pulse")

    path = tmp_path / "redesigned.json"
    path.write_text(json.dumps(redesigned))
    refused = runner.invoke(main, ["survey", "add", str(path), "--db", db_path])
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert "questions.burnout" in refused.output and "same memo randomness" in refused.output
    via_api = client.post("/api/v1/surveys", json=redesigned, headers=admin_headers)
    assert via_api.status_code == 409 and via_api.json["error"]["field"] == "questions.burnout"
    sign_in(client)
    page = client.get("/admin/").get_data(as_text=True)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    via_dashboard = client.post("/admin/surveys", data={"spec": json.dumps(redesigned), "csrf": csrf})
    shown = via_dashboard.get_data(as_text=True)
    assert via_dashboard.status_code == 409 and "same memo randomness" in shown and "warner" in shown  # the spec kept
    assert store.versions("pulse") == before and store.get_survey("pulse").hash == pulse.hash

    reworded = json.loads(json.dumps(spec))
    reworded["questions"][1]["text"] = "Have you felt burned out at work in the last four weeks?"
    assert client.post("/api/v1/surveys", json=reworded, headers=admin_headers).status_code == 201
    renamed = json.loads(json.dumps(redesigned))
    renamed["questions"][1]["id"] = "burnout_warner"
    path.write_text(json.dumps(renamed))
    added = runner.invoke(main, ["survey", "add", str(path), "--db", db_path])
    assert added.exit_code == 0 and "NEW VERSION" in added.output, added.output


def test_a_wave_in_which_a_question_went_unanswered_is_left_out_and_named(runner, db_path, store, pulse):
    """'looking' answered in the first wave only: its estimates by wave hold that wave, the change names why the second
    has none, and the CLI's --by-wave estimates the rest and says so (it used to fail for the whole survey)."""
    rng, layer = random.Random(5), SeededSource(6)
    for wave, asked in (("2026-10", True), ("2026-11", False)):
        store.open_wave("pulse", wave)
        for _ in range(40):
            answers = {"burnout": rng.choice(["yes", "no"]), **({"looking": rng.choice(["yes", "no"])} if asked else {})}
            store.submit("pulse", pulse.hash, secrets.token_hex(16), pulse.randomize(answers, rng=layer, memo=Memo.new()),
                         wave=wave)
    data = load(db=db_path, survey_id="pulse")
    assert list(data.by_wave("looking")) == ["2026-10"] and list(data.by_wave("burnout")) == ["2026-10", "2026-11"]
    with pytest.raises(AnalysisError, match=r"wave='2026-11': no reports yet"):
        data.compare_waves("looking", "2026-10", "2026-11")
    shown = runner.invoke(main, ["estimate", "pulse", "--by-wave", "--db", db_path])
    assert shown.exit_code == 0, shown.output
    assert "Not estimated: looking among wave = 2026-11: no reports yet" in shown.output
    assert "change 2026-10 → 2026-11 in the share of 'yes'" in shown.output  # burnout's, as before


def test_waves_are_domains_of_the_sample_design_on_every_loader_and_the_cli(store, panel, db_path, runner, tmp_path):
    """With a design each wave is a domain (every PSU kept): the database's, an export's and the CLI's figures are
    the same, and the change between the waves is the domains' joint linearization."""
    design = SampleDesign(strata="team")
    with load(db=db_path, survey_id="pulse") as data:
        from_db = data.by_wave("burnout", design=design)
        change = data.compare_waves("burnout", "2026-10", "2026-11", answer="yes", design=design)
    out = tmp_path / "pulse.csv"
    assert runner.invoke(main, ["export", "pulse", "--db", db_path, "--format", "csv", "--output", str(out)]).exit_code == 0
    from_file = load(out, spec=Survey.from_file(EXAMPLES / "panel.yaml")).by_wave("burnout", design=design)
    assert list(from_db) == list(from_file) == ["2026-10", "2026-11"]
    for wave in from_db:
        assert from_db[wave].table["se"].to_numpy() == pytest.approx(from_file[wave].table["se"].to_numpy(), rel=1e-12)
        assert "design-based: strata 'team'" in " ".join(from_db[wave].notes)
    assert change.difference == pytest.approx(from_db["2026-11"].table.loc["yes", "estimate"]
                                              - from_db["2026-10"].table.loc["yes", "estimate"], abs=1e-12)
    assert "joint linearization" in change.note and change.ci.low < change.difference < change.ci.high
    with load(db=db_path, survey_id="pulse") as data:  # the long table the CLI and the dashboard print
        table = estimate_table(data, ["burnout"], by=WAVES, design=design)
    assert "joint linearization" in " ".join(table.texts) and table.frame["se"].to_numpy() == pytest.approx(
        [from_db[w].table.loc[a, "se"] for w in from_db for a in ("yes", "no")], rel=1e-12)


def test_a_panel_s_groups_are_bounded_over_the_waves_on_every_surface(runner, db_path, store, panel):
    """Each team pools its people's two waves, so its figures are bounded over the waves as the whole survey's are:
    from the database (its per-response frame gives each team's counts wave by wave), the same numbers in Python and
    the CLI."""
    from deniable.analysis import subgroups

    data = load(db=db_path, survey_id="pulse")
    groups = subgroups(data, "burnout", "team")
    assert set(groups) == {"Sales", "Engineering", "Support"}
    frame = data.frame().join(data.design_frame("burnout", [WAVES])[[WAVES]])
    for team, result in groups.items():
        assert any(note.startswith("pooled over 2 waves") for note in result.notes)
        counts = {wave: frame.loc[(frame["team"] == team) & (frame[WAVES] == wave), "burnout"].value_counts()
                  for wave in data.waves}
        assert result.n == sum(int(part.sum()) for part in counts.values())
        assert result.fit.method.endswith("the smallest p of 2 waves; Bonferroni")
    listed = json.loads(runner.invoke(main, ["estimate", "pulse", "--by", "team", "--question", "burnout", "--format",
                                             "json", "--db", db_path]).output)
    assert {(row["group"], row["answer"]) for row in listed} == {(t, a) for t in groups for a in ("yes", "no")}
    for row in listed:
        table = groups[row["group"]].table
        assert row["se"] == pytest.approx(table.at[row["answer"], "se"], abs=5e-5)
        assert row["ci_low"] == pytest.approx(table.at[row["answer"], "ci_low"], abs=5e-5)
