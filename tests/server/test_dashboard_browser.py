"""The dashboard on a phone (390 px) in real Chromium: charts scale with readable text, tables scroll
inside their box instead of cutting columns off, downloads carry the numbers the page shows, axe-core
finds nothing."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

from tests.server.conftest import ADMIN, ANSWERS
from tests.server.test_browser import browser  # noqa: F401 - the module's Chromium fixture
from tests.server.test_questionnaire_pages import PHONE, no_violations

#: What the closing note reports about the dashboard at 390 px.
MEASURED: dict = {}


@pytest.fixture
def answered(store, survey, rng):
    for number in range(60):
        answers = {**ANSWERS, "dodged": "yes" if number % 3 == 0 else "no", "hours": (number % 9) * 5}
        store.submit("tax", survey.hash, f"phone-{number:04d}", survey.randomize(answers, rng))
    return survey


def signed_in_page(browser, live_server, screen=PHONE):  # noqa: F811
    """A browser context on ``screen`` (a phone by default) signed in with the admin token, and its page."""
    context = browser.new_context(**screen, accept_downloads=True)
    page = context.new_page()
    page.goto(f"{live_server}/admin/login")
    page.click("summary")
    page.fill("#token", ADMIN)
    page.click("text=Sign in with the token")
    page.wait_for_url(f"{live_server}/admin/")
    return context, page


@pytest.mark.slow
def test_the_dashboard_fits_a_phone(browser, live_server, answered):  # noqa: F811
    context, page = signed_in_page(browser, live_server)
    no_violations(page, "dashboard: surveys (390 px)")
    page.click("text=tax")
    page.wait_for_selector("#chart-dodged svg")
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "the page scrolls sideways"
    charts = page.evaluate("""[...document.querySelectorAll('svg.bars')].map(svg => {
        const box = svg.getBoundingClientRect();
        const text = svg.querySelector('g text').getBoundingClientRect();
        return {left: box.left, right: box.right, width: box.width, text: text.height};
    })""")
    assert charts and all(0 <= c["left"] and c["right"] <= width for c in charts)
    assert min(c["text"] for c in charts) >= 11, charts  # label text stays readable on the phone
    boxes = page.evaluate("""[...document.querySelectorAll('.scroll')].map(box => {
        const rect = box.getBoundingClientRect();
        return {right: rect.right, inner: box.scrollWidth, outer: box.clientWidth};
    })""")
    assert boxes and all(b["right"] <= width for b in boxes)
    # The interval column is on screen, or reached by scrolling its own box (never cut off).
    cell = page.locator("#chart-dodged table tbody tr:first-child td:nth-child(3)")
    cell.scroll_into_view_if_needed()
    rect = cell.bounding_box()
    assert rect["x"] >= 0 and rect["x"] + rect["width"] <= width
    # The estimate tables fit the phone; only the six-column planning table scrolls (inside its box).
    assert sum(b["inner"] > b["outer"] for b in boxes) <= 1
    MEASURED.update(viewport=width, chart_width=round(charts[0]["width"]), label_px=round(min(c["text"] for c in charts), 1),
                    scrolling_tables=sum(b["inner"] > b["outer"] for b in boxes), tables=len(boxes))
    # the figures the closing note quotes, held: the charts fill the phone, labels stay legible
    assert MEASURED["chart_width"] <= width and MEASURED["label_px"] >= 11, MEASURED
    no_violations(page, "dashboard: estimates (390 px)")
    if os.environ.get("DENIABLE_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["DENIABLE_SCREENSHOTS"], "dashboard-390.png"), full_page=True)

    shown = page.text_content("#chart-dodged table tbody tr:first-child td:nth-child(2)")
    with page.expect_download() as download:
        page.click("#downloads >> text=CSV")
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    dodged = [r for r in rows if r["question"] == "dodged" and r["answer"] == "yes"]
    assert f"{float(dodged[0]['estimate']):.3f}" == shown.strip()
    with page.expect_download() as spss:
        page.click("#downloads >> text=SPSS")
    assert spss.value.suggested_filename == "tax-v1.sav"
    context.close()

