"""Randomized order on the respondent page (real Chromium): sections, a section's questions and a question's options
appear in orders drawn on the device that vary from load to load, a section left out of the shuffle keeps its place,
switching language keeps the order and the answers, a resumed draft comes back in its order, and nothing about the
order leaves the device (every request recorded); axe-clean at phone and desktop size."""

import json

import pytest

from deniable.client import Survey
from deniable.server.demo import demo_survey
from tests.server.test_browser import Recorder, browser  # noqa: F401 - the module's Chromium fixture
from tests.server.test_questionnaire_pages import DESKTOP, PHONE, no_violations


def shuffled_questionnaire() -> Survey:
    spec = json.loads(demo_survey().canonical_json())
    spec["randomize_sections"] = ["taxes", "work"]
    for section in spec["sections"]:
        if section["id"] == "taxes":
            section["randomize"] = True
        for question in section["questions"]:
            if question["id"] in ("region", "cash"):
                question["randomize"] = True
    return Survey.from_dict(spec)


@pytest.fixture
def shuffled(store):
    survey = shuffled_questionnaire()
    store.add_survey(survey)
    return survey


def seen_order(page) -> dict:
    return page.evaluate("""() => ({
      sections: [...document.querySelectorAll('#survey-form section.section')].map((s) => s.dataset.section),
      taxes: [...document.querySelectorAll('section[data-section=taxes] > [data-item]')].map((i) => i.dataset.item),
      region: [...document.querySelectorAll('#q-region label.option input')].map((i) => i.value),
    })""")


@pytest.mark.slow
def test_the_order_is_drawn_on_the_device_varies_and_never_leaves_it(browser, live_server, shuffled, store):  # noqa: F811
    context = browser.new_context(**DESKTOP)
    page = context.new_page()
    recorder = Recorder(page)
    orders = []
    for _ in range(10):  # 2 x 6 x 24 orders: ten loads all alike has probability below 1e-20
        page.goto(f"{live_server}/s/tax?lang=en")
        orders.append(seen_order(page))
    assert all(order["sections"][0] == "you" for order in orders)  # not in the shuffle: first every time
    assert len({json.dumps(order) for order in orders}) > 1
    assert all(sorted(o["region"]) == ["East", "North", "South", "West"] for o in orders)
    assert "an order drawn at random on this device; the order is never sent" in page.text_content(".order-note")
    no_violations(page, "desktop: randomized order")
    page.check("#q-region input[value='North']")
    page.check("#q-worked input[value='no']")
    page.check("#q-dodged input[value='no']")
    page.check("#q-fairness input[value='Agree']")
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    [post] = recorder.posts()
    assert set(json.loads(post["body"])) == {"spec_hash", "idempotency_key", "reports"}
    shown = orders[-1]
    travelled = json.dumps(recorder.requests)
    assert "order" not in json.loads(post["body"]) and json.dumps(shown["region"]) not in travelled
    [row] = list(store.export("tax"))
    assert set(row) >= {"id", "reports"} and "order" not in json.dumps(row)
    context.close()


@pytest.mark.slow
def test_switching_language_and_resuming_a_draft_keep_the_order(browser, live_server, shuffled):  # noqa: F811
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.goto(f"{live_server}/s/tax?lang=en")
    drawn = seen_order(page)
    page.check("#q-region input[value='South']")
    page.evaluate("window.sameDocument = true")
    page.click(".languages a[lang=fr]")
    page.wait_for_selector("html[lang=fr]")
    assert page.evaluate("window.sameDocument") is True  # switched in place, not by following the link
    assert seen_order(page) == drawn and page.is_checked("#q-region input[value='South']")
    no_violations(page, "phone fr: randomized order")
    page.click("#save-draft")
    for _ in range(3):  # a resumed draft is asked in the order it was kept in, however the next load draws
        page.reload()
        page.wait_for_selector("#draft-status")
        assert seen_order(page) == drawn and page.is_checked("#q-region input[value='South']")
    context.close()
