"""A panel's completion on the respondent's pages: the thank-you page (where both the page and the form without
JavaScript end) and the page's sent view show the survey's code and the link back; a survey without one shows none."""

import json

from deniable.client import Survey
from tests.conftest import EXAMPLES


def _with_completion(**completion) -> Survey:
    spec = json.loads(Survey.from_file(EXAMPLES / "tax.yaml").canonical_json())
    return Survey.from_dict({**spec, "completion": completion})


def test_the_thank_you_page_shows_the_code_and_the_link_back(client, store):
    store.add_survey(_with_completion(code="C1A2B3", url="https://panel.example/done?cc={code}&x=1"))
    for sent in ("page", "form"):
        page = client.get(f"/s/tax/thanks?sent={sent}").get_data(as_text=True)
        assert 'Your completion code: <strong class="completion-code">C1A2B3</strong>' in page
        assert 'href="https://panel.example/done?cc=C1A2B3&amp;x=1"' in page
    survey_page = client.get("/s/tax").get_data(as_text=True)
    assert survey_page.index('id="completion"') > survey_page.index('id="sent"')  # shown with what was sent


def test_the_words_are_the_page_s_language_and_a_survey_without_a_completion_shows_none(client, store):
    spec = json.loads(Survey.from_file(EXAMPLES / "questionnaire.yaml").canonical_json())
    store.add_survey(Survey.from_dict({**spec, "completion": {"code": "ZZ9"}}))
    page = client.get(f"/s/{spec['id']}/thanks?lang=es").get_data(as_text=True)
    assert "Su código de finalización: " in page and "ZZ9" in page and 'id="completion-link"' not in page
    store.add_survey(Survey.from_file(EXAMPLES / "tax.yaml"))
    assert 'id="completion"' not in client.get("/s/tax/thanks").get_data(as_text=True)
