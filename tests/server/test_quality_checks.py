"""Attention and speed checks that hold no answer (`client.quality`): instructed-response items (public) and section
times (tens of seconds, per section) flag responses; the analysis leaves them out only when asked, counts exactly the
rest and says how many it left out and why, on every surface (load, CLI, exports); the page sends the times, never per
question (real Chromium). Both engines."""

import json

import pytest

from deniable.analysis import estimate, load
from deniable.client import SpecError, Survey
from deniable.client.quality import MAX_SECTION_SECONDS, SECONDS_STEP
from deniable.server.cli import main
from tests.conftest import SeededSource
from tests.server.conftest import sign_in
from tests.server.test_browser import Recorder, browser  # noqa: F401 - the module's Chromium fixture

pytestmark = pytest.mark.both_engines

SPEC = {"id": "care", "title": "Care", "quality": {"section_times": True, "min_seconds": 60}, "sections": [
    {"id": "intro", "title": "About you", "questions": [
        {"id": "region", "type": "choice", "text": "Region?", "options": ["north", "south"], "privacy": "none",
         "required": True},
        {"id": "attention", "type": "choice", "text": "Choose 'often' to show you are reading.",
         "options": ["never", "sometimes", "often"], "privacy": "none", "check": "often"}]},
    {"id": "taxes", "title": "Taxes", "questions": [
        {"id": "dodged", "type": "yes_no", "text": "Have you ever dodged your taxes?", "required": True,
         "privacy": {"design": "warner", "p": "3/4"}}]}]}


@pytest.fixture
def careful(store):
    survey = Survey.from_dict(SPEC)
    store.add_survey(survey)
    return survey


def send(store, survey, key, dodged, attention="often", seconds=(60, 40)):
    paradata = None if seconds is None else {"seconds": {"intro": seconds[0], "taxes": seconds[1]}}
    return store.submit("care", survey.hash, f"key-{key:06d}", survey.randomize(
        {"region": "north", "attention": attention, "dodged": dodged}, rng=SeededSource(key)), paradata=paradata)


@pytest.mark.parametrize("change, error", [
    ({"check": "always"}, r"question 'attention'.check: 'always' is not an answer of 'attention'"),
])
def test_a_bad_check_or_quality_names_its_field(change, error):
    spec = json.loads(json.dumps(SPEC))
    spec["sections"][0]["questions"][1].update(change)
    with pytest.raises(SpecError, match=error):
        Survey.from_dict(spec)
    private = json.loads(json.dumps(SPEC))
    private["sections"][1]["questions"][0]["check"] = "no"
    with pytest.raises(SpecError, match="an attention check is a public question"):
        Survey.from_dict(private)
    for quality, message in (({"min_seconds": 60}, "needs section_times: true"), ({"section_times": "yes"}, "true or false"),
                             ({"min_seconds": 0, "section_times": True}, "a whole number of seconds")):
        with pytest.raises(SpecError, match=rf"survey\.quality\.\w+: .*{message}"):
            Survey.from_dict({**SPEC, "quality": quality})


def test_the_spec_s_checks_go_through_an_xlsform_to_the_same_hash(tmp_path):
    from deniable.client.xlsform import read_xlsform
    from deniable.client.xlsform_writer import write_xlsform

    survey = Survey.from_dict(SPEC)
    write_xlsform(survey, tmp_path / "form.xlsx")
    assert Survey.from_dict(read_xlsform(tmp_path / "form.xlsx")).hash == survey.hash


def test_section_times_are_checked_where_they_arrive_and_never_cost_the_response(client, store, careful, caplog):
    """Paradata the survey does not take are dropped, never the response: it is stored without them (a page that sent
    the same times again would fail forever), the acknowledgement says why and the server's log says so."""
    body = {"spec_hash": careful.hash, "idempotency_key": "times-key-0001",
            "reports": careful.randomize({"region": "north", "attention": "often", "dodged": "no"})}
    wrong = (({"seconds": {"intro": 15}}, "intro"), ({"seconds": {"dodged": 10}}, "dodged"),
             ({"seconds": {"intro": 5000}}, "intro"), ({"seconds": {"intro": 10}, "changes": 3}, "seconds"),
             ([10, 20], "seconds"), ({"seconds": {"all": 10}}, "all"))
    for number, (paradata, named) in enumerate(wrong):
        key = f"dropped-key-{number:04d}"
        with caplog.at_level("WARNING", logger="deniable.api"):
            taken = client.post("/api/v1/surveys/care/responses", json={**body, "idempotency_key": key, "paradata": paradata})
        assert taken.status_code == 201 and named in taken.get_json()["paradata_dropped"], paradata
        assert "stored without its paradata" in caplog.text and "care" in caplog.text
        caplog.clear()
        again = client.post("/api/v1/surveys/care/responses", json={**body, "idempotency_key": key, "paradata": paradata})
        assert again.status_code == 200 and again.get_json()["id"] == taken.get_json()["id"]  # the same response
    assert store.response_count("care") == len(wrong)
    assert [row["seconds"] for row in store.export("care")] == [{}] * len(wrong)  # no section timed
    stored = client.post("/api/v1/surveys/care/responses", json={**body, "paradata": {"seconds": {"intro": 30}}})
    assert stored.status_code == 201 and "paradata_dropped" not in stored.get_json()
    changed = client.post("/api/v1/surveys/care/responses", json={**body, "paradata": {"seconds": {"intro": 40}}})
    assert changed.status_code == 422 and "already used for a different response" in changed.get_json()["error"]["message"]
    plain = Survey.from_dict({k: v for k, v in SPEC.items() if k != "quality"} | {"id": "plain"})
    store.add_survey(plain)
    taken = client.post("/api/v1/surveys/plain/responses", json={
        **body, "spec_hash": plain.hash, "paradata": {"seconds": {"intro": 10}}})
    assert taken.status_code == 201 and "records no section times" in taken.get_json()["paradata_dropped"]
    wrong_in_batch = client.post("/api/v1/surveys/care/responses:batch", json={"items": [
        {**body, "idempotency_key": "batch-drop-0001", "paradata": {"seconds": {"all": 10}}}]})
    [result] = wrong_in_batch.get_json()["results"]
    assert result["status"] == 201 and "'all' is not a section" in result["response"]["paradata_dropped"]
    batch = client.post("/api/v1/surveys/care/responses:batch", json={"items": [
        {**body, "idempotency_key": f"batch-key-{i:04d}", "paradata": {"seconds": {"taxes": 10 * i}}} for i in range(3)]})
    assert [item["status"] for item in batch.get_json()["results"]] == [201, 201, 201]
    rows = {row["id"]: row["seconds"] for row in store.export("care") if row["seconds"]}
    assert sorted(map(json.dumps, rows.values())) == sorted(
        [json.dumps({"intro": 30}), *(json.dumps({"taxes": 10 * i}) for i in range(3))])


def test_flagged_responses_are_left_out_only_when_asked_and_counted_exactly(db_path, runner, store, careful, client):
    """60 attentive respondents answer truly (20 dodged); 15 fail the check and 15 speed through, all answering
    yes: kept in, they bias the share up; left out, the counts are exactly the attentive ones' and the estimate
    recovers the truth within its interval (seeded draws: the same reports every run)."""
    for i in range(60):
        send(store, careful, i, "yes" if i < 20 else "no")
    for i in range(60, 75):
        send(store, careful, i, "yes", attention="sometimes")
    for i in range(75, 90):
        send(store, careful, i, "yes", seconds=(20, 10))
    send(store, careful, 90, "no", seconds=None)  # no times sent (an app's client): not flagged as speeding
    assert store.quality_flags("care") == {"flagged": 30, "failed_check": 15, "too_fast": 15}
    flagged = store.flagged_responses("care")
    kept_counts: dict = {}
    for row in store.export("care"):
        if row["id"] not in flagged:
            kept_counts[row["reports"]["dodged"]] = kept_counts.get(row["reports"]["dodged"], 0) + 1
    left_out = store.counts("care", leave_out_flagged=True)
    assert {c["report"]: c["count"] for c in left_out["counts"]["dodged"] if c["count"]} == kept_counts
    assert left_out["responses"] == 61 and left_out["left_out"]["flagged"] == 30
    with load(db=db_path, survey_id="care") as everyone, load(db=db_path, survey_id="care",
                                                              leave_out_flagged=True) as attentive:
        assert (everyone.n, attentive.n) == (91, 61) and attentive.flags == everyone.flags
        biased, clean = estimate(everyone, "dodged"), estimate(attentive, "dodged")
        assert clean.n == 61 and biased.n == 91
        truth = 20 / 61
        low, high = clean.table.loc["yes", ["ci_low", "ci_high"]]
        assert low <= truth <= high and biased.estimate["yes"] > clean.estimate["yes"] + 0.1
    shown = runner.invoke(main, ["estimate", "care", "--db", db_path])
    said = ("30 responses flagged by the quality checks (15 answered an attention check otherwise; 15 took less than "
            "the spec's min_seconds in all)")
    assert said in shown.output and "91 responses" in shown.output
    sign_in(client)  # the dashboard says it too, as the command does
    page = client.get("/admin/surveys/care").get_data(as_text=True)
    assert said.replace("'", "&#39;") in page and "--leave-out-flagged" in page
    left = runner.invoke(main, ["estimate", "care", "--db", db_path, "--leave-out-flagged", "--format", "csv"])
    assert left.exit_code == 0 and "Left out: 30 responses flagged" in left.stderr
    csv_rows = runner.invoke(main, ["export", "care", "--format", "csv", "--db", db_path]).stdout.splitlines()
    assert csv_rows[0].startswith("id,spec_hash,received_on,seconds.intro,seconds.taxes,")
    with pytest.raises(Exception, match="leave_out_flagged: read the database"):
        load("care.csv", spec=careful, leave_out_flagged=True)


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_the_page_sends_section_times_in_tens_of_seconds_and_nothing_per_question(browser, live_server, careful):  # noqa: F811
    from tests.server.test_questionnaire_pages import PHONE, no_violations

    context = browser.new_context(**PHONE)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/care")
    assert "roughly how long you spend on each part" in page.text_content(".times-note")
    no_violations(page, "phone: section times note")
    page.check("#q-region input[value='north']")
    page.check("#q-attention input[value='often']")
    page.click("#next")
    page.check("#q-dodged input[value='no']")
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    [post] = recorder.posts()
    body = json.loads(post["body"])
    assert set(body) == {"spec_hash", "idempotency_key", "reports", "paradata"}
    seconds = body["paradata"]["seconds"]
    assert set(seconds) == {"intro", "taxes"}
    assert all(value % SECONDS_STEP == 0 and value <= MAX_SECTION_SECONDS for value in seconds.values())
    assert not recorder.errors
    context.close()


#: The coin (forced response 1/2, 1/4, 1/4) for the randomized question: the form without JavaScript asks it too.
COIN = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}


def matrix_spec(survey_id: str, layout: str, timed: bool) -> dict:
    """`SPEC` with a section the answers skip (asked in the south only), the last two sections in a random order."""
    spec = json.loads(json.dumps(SPEC))
    spec["sections"][1]["questions"][0]["privacy"] = COIN
    spec["sections"].append({"id": "south", "title": "The south", "relevant": "region = 'south'", "questions": [
        {"id": "ferry", "type": "yes_no", "text": "Have you taken the ferry without a ticket?", "privacy": COIN}]})
    spec["randomize_sections"] = ["taxes", "south"]
    if not timed:
        del spec["quality"]
    return {**spec, "id": survey_id, "layout": layout}


@pytest.mark.slow
@pytest.mark.sqlite_only
@pytest.mark.parametrize("timed", [True, False], ids=["timed", "untimed"])
@pytest.mark.parametrize("layout", ["auto", "paged", "single"])
@pytest.mark.parametrize("width", ["phone", "desktop"])
def test_every_width_and_layout_sends_what_the_server_takes(browser, live_server, store, width, layout, timed):  # noqa: F811
    """The page at phone and desktop width, paged and on one long page, with and without section times: the response
    it posts is stored as posted, its paradata too (a section's time, never a key the server does not take). On a
    wide page the send button holds the focus outside every section; it once sent a time for "all", which the server
    refused, and each desktop respondent of a timed sectioned survey lost the response."""
    from tests.server.test_questionnaire_pages import DESKTOP, PHONE

    survey = Survey.from_dict(matrix_spec(f"m-{width}-{layout}-{timed}", layout, timed))
    store.add_survey(survey)
    context = browser.new_context(**(PHONE if width == "phone" else DESKTOP))
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/{survey.id}")
    page.check("#q-region input[value='north']")
    page.check("#q-attention input[value='often']")
    paged = page.is_visible("#next")
    assert paged == (layout == "paged" or (layout == "auto" and width == "phone"))
    # Two of its three questions are asked directly: the page's opening words say the sensitive one is randomized.
    assert "answers to the sensitive questions are randomized on this device" in page.inner_text("#device-words")
    assert "asked directly" in page.inner_text("#device-words")
    if paged:
        page.click("#next")
    page.check("#q-dodged input[value='no']")
    with page.expect_response(lambda r: r.request.method == "POST" and "/responses" in r.url) as answered:
        page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    assert answered.value.status == 201 and "paradata_dropped" not in answered.value.json()
    [post] = recorder.posts()
    body = json.loads(post["body"])
    [row] = list(store.export(survey.id))
    if timed:
        assert set(body["paradata"]["seconds"]) == {"intro", "taxes"}  # none for the section the answers skipped
        assert row["seconds"] == body["paradata"]["seconds"]
    else:
        assert "paradata" not in body and not row.get("seconds")  # an untimed survey exports no times
    assert row["reports"] == body["reports"] and not recorder.errors
    context.close()


@pytest.mark.slow
@pytest.mark.sqlite_only
@pytest.mark.parametrize("width", ["phone", "desktop"])
def test_without_javascript_a_timed_survey_is_sent_without_times(browser, live_server, store, width):  # noqa: F811
    from tests.server.test_questionnaire_pages import DESKTOP, PHONE

    survey = Survey.from_dict(matrix_spec(f"nojs-{width}", "auto", True))
    store.add_survey(survey)
    context = browser.new_context(**(PHONE if width == "phone" else DESKTOP))
    context.route("**/static/survey.js", lambda route: route.abort())
    page = context.new_page()
    page.goto(f"{live_server}/s/{survey.id}")
    # Nothing happens on this device without JavaScript: no word says it does (randomizing, timing, drawing an order).
    shown = page.inner_text("body")
    assert "on this device" not in shown and "how long you spend" not in shown and "JavaScript is off" in shown
    for name, value in (("region", "north"), ("attention", "often"), ("dodged", "yes")):
        page.check(f"#coin-form input[name={name}][value={value}]")
    page.click("#coin-form button[type=submit]")
    page.wait_for_url(f"**/s/{survey.id}/thanks?sent=form")
    [row] = list(store.export(survey.id))
    assert row["reports"]["region"] == "north" and row["reports"]["dodged"] in ("yes", "no") and not row.get("seconds")
    context.close()
