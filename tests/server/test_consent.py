"""Consent before the first question (`consent` in the spec, per language): the page shows it under the privacy
statement and its questions only once the respondent agrees (real Chromium, axe-clean); the form without JavaScript
asks it with a required box and the server refuses a form sent without it; nothing about consent is sent."""

import json

import pytest

from deniable.client import SpecError, Survey
from tests.conftest import EXAMPLES
from tests.server.conftest import form_key
from tests.server.test_browser import Recorder, browser  # noqa: F401 - the module's Chromium fixture
from tests.server.test_questionnaire_pages import PHONE, no_violations

TEXT = "This study is run by the Institute; you may stop at any time."


@pytest.fixture
def consenting(store):
    spec = json.loads(Survey.from_file(EXAMPLES / "tax.yaml").canonical_json())
    survey = Survey.from_dict({**spec, "consent": TEXT})
    store.add_survey(survey)
    return survey


def test_the_spec_keeps_the_consent_per_language():
    spec = json.loads(Survey.from_file(EXAMPLES / "questionnaire.yaml").canonical_json())
    survey = Survey.from_dict({**spec, "consent": {"en": "Agree?", "es": "¿De acuerdo?", "fr": "D'accord ?"}})
    assert survey.consent_in("es") == "¿De acuerdo?" and Survey.from_dict(survey.to_dict()).hash == survey.hash
    with pytest.raises(SpecError, match="survey.consent"):
        Survey.from_dict({**spec, "consent": ["Agree?"]})


def test_the_form_without_javascript_needs_the_box_ticked(client, store, consenting):
    page = client.get("/s/tax").get_data(as_text=True)
    assert TEXT in page and 'name="consent" value="yes" required' in page
    key = form_key(client, "tax")
    form = {"spec_hash": consenting.hash, "idempotency_key": "consent-form-0001", "form_key": key, "dodged": "yes",
            "region": "North"}
    refused = client.post("/s/tax/submit", data=form)
    assert refused.status_code == 422 and "Please agree to take part" in refused.get_data(as_text=True)
    assert store.response_count("tax") == 0
    taken = client.post("/s/tax/submit", data={**form, "consent": "yes"})
    assert taken.status_code == 303 and store.response_count("tax") == 1
    assert "consent" not in json.dumps(list(store.export("tax")))


@pytest.mark.slow
def test_the_page_shows_its_questions_once_the_respondent_agrees(browser, live_server, consenting):  # noqa: F811
    context = browser.new_context(**PHONE)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    assert page.is_visible("#consent-agree") and not page.is_visible("#survey-form")
    assert TEXT in page.text_content("#consent") and page.is_visible(".intro")
    no_violations(page, "phone: consent")
    page.click("#consent-agree")
    page.wait_for_selector("#survey-form:not([hidden])")
    assert not page.is_visible("#consent")
    assert not recorder.posts() and not recorder.errors  # agreeing sends nothing
    context.close()
