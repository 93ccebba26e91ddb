"""Save and resume on the device (real Chromium): a respondent who asks keeps the answers in this browser, finds them
after a reload, sends, and the server sees one response and no draft (no request carries it); the draft goes once
sent, when forgotten, when it expires and when another version is served (with a notice); the page says what
protects it (axe-clean at phone and desktop size); the form without JavaScript says it cannot keep drafts."""

import json

import pytest

from tests.server.test_browser import TRUE, Recorder, browser, fill_demo  # noqa: F401 - the module's Chromium fixture
from tests.server.test_questionnaire_pages import DESKTOP, PHONE, no_violations

DRAFT = "deniable.draft.tax"
DAY_MS = 86_400_000


def stored_draft(page):
    return json.loads(page.evaluate(f"localStorage.getItem('{DRAFT}')") or "null")


def test_the_form_without_javascript_says_it_cannot_keep_drafts(client, survey):
    page = client.get("/s/tax").get_data(as_text=True)
    coin_form = page[page.index('id="coin-form"'):]
    assert "Without JavaScript this form cannot keep your answers" in coin_form


@pytest.mark.slow
def test_fill_half_reload_resume_and_send_one_response_with_no_draft_leaving_the_device(
        browser, live_server, survey, store):  # noqa: F811
    context = browser.new_context(**PHONE)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    assert stored_draft(page) is None  # nothing is kept unless asked
    page.check("#q-dodged input[value='yes']")
    page.check("#q-region input[value='West']")
    page.fill("#q-hours input", "17.5")
    assert stored_draft(page) is None
    page.click("#save-draft")
    status = page.text_content("#draft-status")
    assert "kept in this browser until" in status and "Anyone who can open this browser can read them" in status
    no_violations(page, "phone: draft saved")
    page.check("#q-cash input[value='Cash in hand']")  # kept up to date once asked
    assert stored_draft(page)["answers"] == {"dodged": "yes", "region": "West", "hours": "17.5", "cash": "Cash in hand"}

    page.reload()
    page.wait_for_selector("#draft-status")
    assert "The answers you saved in this browser are filled in" in page.text_content("#draft-status")
    assert page.is_checked("#q-dodged input[value='yes']") and page.is_checked("#q-region input[value='West']")
    assert page.input_value("#q-hours input") == "17.5" and page.is_visible("#forget-draft")
    no_violations(page, "phone: draft restored")
    fill_demo(page, {**TRUE, "hours": "17.5"})
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#sent:not([hidden])")
    [post] = recorder.posts()
    assert set(json.loads(post["body"])) == {"spec_hash", "idempotency_key", "reports"}
    travelled = json.dumps(recorder.requests) + page.url + json.dumps(context.cookies())
    assert "17.5" not in travelled and "draft" not in travelled  # the typed answer and the draft stay on the device
    assert stored_draft(page) is None and page.is_hidden("#draft")
    assert store.response_count("tax") == 1 and not recorder.errors
    context.close()


@pytest.mark.slow
def test_a_draft_is_forgotten_expires_and_is_discarded_for_another_version(browser, live_server, survey):  # noqa: F811
    context = browser.new_context(**DESKTOP)
    page = context.new_page()
    page.goto(f"{live_server}/s/tax")
    page.check("#q-region input[value='North']")
    page.click("#save-draft")
    assert stored_draft(page)["answers"] == {"region": "North"}
    now = page.evaluate("Date.now()")
    assert now < stored_draft(page)["expires"] <= now + DAY_MS  # answers in clear on the device: a day at most
    page.click("#forget-draft")
    assert stored_draft(page) is None and "gone from this device" in page.text_content("#draft-status")
    assert page.is_hidden("#forget-draft")
    no_violations(page, "desktop: draft forgotten")
    page.reload()
    assert not page.is_checked("#q-region input[value='North']") and page.is_hidden("#draft")

    for draft, notice in (({"hash": "an-older-version", "expires": 4e12, "section": 0, "answers": {"region": "North"}},
                           "were for an earlier version of this survey and have been discarded"),
                          ({"hash": survey.hash, "expires": 1000, "section": 0, "answers": {"region": "North"}}, None)):
        page.evaluate("([key, value]) => localStorage.setItem(key, value)", [DRAFT, json.dumps(draft)])
        page.reload()
        assert stored_draft(page) is None and not page.is_checked("#q-region input[value='North']")
        if notice:
            assert notice in page.text_content("#draft-status")
            no_violations(page, "desktop: draft of another version")
        else:
            assert page.is_hidden("#draft")  # expired: removed without a word
    # A draft an older page kept for a week is resumed, and held to a day from now
    week = {"hash": survey.hash, "expires": page.evaluate("Date.now()") + 6 * DAY_MS, "section": 0,
            "answers": {"region": "North"}}
    page.evaluate("([key, value]) => localStorage.setItem(key, value)", [DRAFT, json.dumps(week)])
    page.reload()
    assert page.is_checked("#q-region input[value='North']")
    page.check("#q-dodged input[value='no']")  # kept up to date: written again with its expiry
    assert stored_draft(page)["expires"] <= page.evaluate("Date.now()") + DAY_MS
    context.close()
