"""Designs in which the respondent randomizes, in real Chromium: one question each on the phone page and
the no-JavaScript form, what was chosen is exactly what was sent, and axe-core finds nothing."""

import json

import pytest

from deniable.client import Survey
from tests.conftest import EXAMPLES
from tests.server.test_browser import Recorder, browser  # noqa: F401 - the module's Chromium fixture
from tests.server.test_questionnaire_pages import PHONE, no_violations

CHOICES = {"region": "South", "took": "different", "sick": "no_to_both", "lied": "no"}


@pytest.fixture
def conduct(store):
    survey = Survey.from_file(EXAMPLES / "respondent.yaml")
    store.add_survey(survey)
    return survey


def test_each_design_is_one_question_and_what_is_chosen_is_what_is_sent(browser, live_server, conduct, store):  # noqa: F811
    context = browser.new_context(**PHONE)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/conduct")
    for qid in ("took", "sick", "lied"):
        prompt = page.text_content(f"#q-{qid} .respondent-prompt")
        statement = page.text_content(f"#q-{qid} .privacy")
        assert "this device never sees your true answer" in statement and "cannot know" in statement
        assert page.locator(f"#q-{qid} input[type=radio]").count() == 2, qid
    assert "Is your mother's birthday in January, February or March?" in page.text_content("#q-took .respondent-prompt")
    assert "same (both yes or both no)" in page.text_content("#q-took")
    assert "A: no to both" in page.text_content("#q-sick") and "B: any other combination" in page.text_content("#q-sick")
    assert "If your mother's birthday is in January or February" in prompt
    no_violations(page, "phone: respondent-side designs")
    # cheating detection: the page drew a group and shows that group's instruction, and only it
    group = page.get_attribute("#q-cheated", "data-group")
    assert group in ("a", "b")
    shown = [p.get_attribute("data-group") for p in page.query_selector_all("#q-cheated .respondent-prompt") if p.is_visible()]
    assert shown == [group]
    assert ("January to April" if group == "a" else "January to August") in page.text_content(f"#prompt-cheated-{group}")
    for qid, value in {**CHOICES, "cheated": "no"}.items():
        page.check(f"#q-{qid} input[value='{value}']")
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    [post] = [r for r in recorder.posts() if "/responses" in r["url"]]
    sent = json.loads(post["body"])["reports"]
    # nothing the page drew but the public group: the respondent's choices go as they are
    assert sent == {**CHOICES, "cheated": {"group": group, "report": "no"}}
    shown = page.text_content("#sent-reports")
    assert "Different (one yes, one no)" in shown and "A: no to both" in shown
    no_violations(page, "phone: sent panel of respondent-side designs")
    assert f"No (group {group})" in page.text_content("#sent-reports")
    [row] = list(store.export("conduct"))
    assert row["reports"] == {**CHOICES, "cheated": {"group": group, "report": "no"}}
    assert not recorder.errors
    context.close()


def test_without_javascript_the_same_questions_are_answered_as_they_are(browser, live_server, conduct, store):  # noqa: F811
    context = browser.new_context(**PHONE)
    context.route("**/static/survey.js", lambda route: route.abort())
    page = context.new_page()
    page.goto(f"{live_server}/s/conduct")
    form = page.locator("#coin-form")
    assert form.is_visible()
    assert form.locator(".respondent-prompt").count() == 4  # one instruction for the group the server drew
    group = form.locator("input[name='cheated.group']").get_attribute("value")
    assert form.locator("input[name=took][value=same]").count() == 1
    no_violations(page, "phone: no-JavaScript form of respondent-side designs")
    for qid, value in {**CHOICES, "cheated": "yes"}.items():
        page.check(f"#coin-form input[name={qid}][value={value}]")
    page.click("#coin-form button[type=submit]")
    page.wait_for_url("**/s/conduct/thanks?sent=form")
    [row] = list(store.export("conduct"))
    assert row["reports"] == {**CHOICES, "cheated": {"group": group, "report": "yes"}}
    context.close()
