"""Quotas where respondents and researchers meet them: the API answers a response in a full group with 409 on
``quota`` (a JSON body naming it; the Python client raises QuotaFull and keeps nothing to resend); the survey says
which groups are full (no counts) and admins read the counts; the form without JavaScript ends politely; the page says
so as soon as the answer falls in a full group and ends politely when the group fills while it is open (real Chromium,
axe-clean at phone and desktop size)."""

import json

import pytest

from deniable import client as deniable_client
from deniable.client import Survey
from tests.conftest import EXAMPLES
from tests.server.conftest import form_key
from tests.server.test_browser import TRUE, Recorder, browser, fill_demo  # noqa: F401 - the module's Chromium fixture
from tests.server.test_questionnaire_pages import DESKTOP, PHONE, no_violations

ANSWERS = {"dodged": "no", "region": "North", "cash": "Salary", "fairness": "Agree", "undeclared": [], "hours": 0}


@pytest.fixture
def quota_survey(store):
    spec = json.loads(Survey.from_file(EXAMPLES / "tax.yaml").canonical_json())
    survey = Survey.from_dict({**spec, "quotas": [{"question": "region", "limits": {"North": 1, "West": 2}}]})
    store.add_survey(survey)
    return survey


def post(client, survey, key, region):
    return client.post("/api/v1/surveys/tax/responses", json={
        "spec_hash": survey.hash, "idempotency_key": f"quota-key-{key}",
        "reports": survey.randomize({**ANSWERS, "region": region})})


def test_the_api_refuses_a_full_group_with_409_on_quota_and_says_which_groups_are_full(client, store, quota_survey,
                                                                                       admin_headers):
    assert client.get("/api/v1/surveys/tax").get_json()["full"] == []
    assert post(client, quota_survey, 0, "North").status_code == 201
    refused = post(client, quota_survey, 1, "North")
    assert refused.status_code == 409 and refused.get_json()["error"]["field"] == "quota"
    assert "Region" not in refused.get_json()["error"]["message"] and "region = North" in refused.get_json()["error"]["message"]
    assert store.response_count("tax") == 1
    assert client.get("/api/v1/surveys/tax").get_json()["full"] == [{"questions": ["region"], "cell": ["North"]}]
    assert client.get("/api/v1/surveys/tax/quotas").status_code == 401  # counts are the admins'
    counts = client.get("/api/v1/surveys/tax/quotas", headers=admin_headers).get_json()["quotas"]
    assert counts == [{"questions": ["region"], "cell": ["North"], "count": 1, "limit": 1, "full": True},
                      {"questions": ["region"], "cell": ["West"], "count": 0, "limit": 2, "full": False}]
    batch = client.post("/api/v1/surveys/tax/responses:batch", json={"items": [
        {"spec_hash": quota_survey.hash, "idempotency_key": f"quota-batch-{i}",
         "reports": quota_survey.randomize({**ANSWERS, "region": region})} for i, region in enumerate(["West", "North"])]})
    statuses = [item["status"] for item in batch.get_json()["results"]]
    assert statuses == [201, 409] and store.response_count("tax") == 2
    kind, retry = deniable_client.statuses.classify(409, "quota")
    assert (kind, retry) == ("quota_full", False)


def test_the_python_client_raises_quota_full(live_server, store, quota_survey):
    deniable_client.submit(live_server, "tax", {**ANSWERS, "region": "North"})
    with pytest.raises(deniable_client.QuotaFull) as refused:
        deniable_client.submit(live_server, "tax", {**ANSWERS, "region": "North"})
    assert refused.value.status == 409 and refused.value.field == "quota"


def test_the_form_without_javascript_ends_politely(client, store, quota_survey):
    post(client, quota_survey, 0, "North")
    key = form_key(client, "tax")
    form = {"spec_hash": quota_survey.hash, "idempotency_key": "quota-form-0001", "form_key": key, "dodged": "yes",
            "region": "North"}
    refused = client.post("/s/tax/submit", data=form)
    assert refused.status_code == 409 and "We already have all the answers we need" in refused.get_data(as_text=True)
    assert store.response_count("tax") == 1
    assert client.post("/s/tax/submit", data={**form, "region": "South"}).status_code == 303


@pytest.mark.slow
def test_the_page_says_a_group_is_full_at_once_and_ends_politely_when_it_fills_meanwhile(
        browser, live_server, store, quota_survey):  # noqa: F811
    store.submit("tax", quota_survey.hash, "stored-north-1", quota_survey.randomize(ANSWERS))
    for size, screen in ((PHONE, "phone"), (DESKTOP, "desktop")):
        context = browser.new_context(**size)
        page = context.new_page()
        recorder = Recorder(page)
        page.goto(f"{live_server}/s/tax")
        page.check("#q-region input[value='North']")  # full when the page was served: said at once
        page.wait_for_selector("#send-problem:not([hidden])")
        assert "We already have all the answers we need" in page.text_content("#send-problem")
        assert page.is_disabled("#send")
        no_violations(page, f"{screen}: quota full")
        page.check("#q-region input[value='South']")  # another group: the message goes and the send comes back
        assert page.is_hidden("#send-problem") and not page.is_disabled("#send")
        context.close()
        assert not recorder.posts() and not recorder.errors
    # West fills (limit 2) while the respondent is answering: the server refuses, the page ends politely.
    context = browser.new_context(**PHONE)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    for i in range(2):
        store.submit("tax", quota_survey.hash, f"stored-west-{i}", quota_survey.randomize({**ANSWERS, "region": "West"}))
    fill_demo(page, TRUE)  # West
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#send-problem:not([hidden])")
    assert "We already have all the answers we need" in page.text_content("#send-problem")
    assert page.locator("#survey-form").count() == 0 and page.is_hidden("#sent")
    assert len(recorder.posts()) == 1  # the browser logs the 409 itself; the page's script raised nothing
    assert [e for e in recorder.errors if "status of 409" not in e] == []
    no_violations(page, "phone: quota filled meanwhile")
    assert store.response_count("tax") == 3
    context.close()


def test_the_cli_shows_each_cell_with_its_count_and_limit(runner, db_path, store, quota_survey):
    from deniable.server.cli import main

    store.submit("tax", quota_survey.hash, "stored-north-1", quota_survey.randomize(ANSWERS))
    shown = runner.invoke(main, ["survey", "quotas", "tax", "--db", db_path])
    assert shown.exit_code == 0, shown.output
    assert "region = North" in shown.output and "1 of 1  FULL" in shown.output and "0 of 2" in shown.output
    as_json = json.loads(runner.invoke(main, ["survey", "quotas", "tax", "--db", db_path, "--json"]).output)
    assert as_json == store.quota_counts("tax")
    assert "Quotas:" in runner.invoke(main, ["survey", "show", "tax", "--db", db_path]).output
    store.add_survey(Survey.from_file(EXAMPLES / "tax.yaml"))
    refused = runner.invoke(main, ["survey", "quotas", "tax", "--db", db_path])
    assert refused.exit_code == 1 and "has no quotas" in refused.output


def test_the_dashboard_shows_each_cell_with_the_same_counts(client, store, quota_survey):
    from tests.server.conftest import sign_in

    store.submit("tax", quota_survey.hash, "stored-north-1", quota_survey.randomize(ANSWERS))
    sign_in(client)
    page = client.get("/admin/surveys/tax").get_data(as_text=True)
    table = page[page.index('id="quota-table"'):page.index("</table>", page.index('id="quota-table"'))]
    rows = [[cell.strip() for cell in row.split("<td>")[1:]] for row in table.split("<tr>")[2:]]
    shown = [[cell.split("<")[0] for cell in row] for row in rows]
    assert shown == [[f"region = {c['cell'][0]}", str(c["count"]), str(c["limit"]), "FULL" if c["full"] else "open"]
                     for c in store.quota_counts("tax")] == [["region = North", "1", "1", "FULL"],
                                                             ["region = West", "0", "2", "open"]]
