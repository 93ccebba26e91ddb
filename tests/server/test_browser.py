"""Real-browser end-to-end tests: Debian's headless Chromium driven by Playwright.

Skipped on a laptop without /usr/bin/chromium; in CI (CI set) a missing browser is a failure.
"""

import json
import os
import re
import shutil

import pytest
from scipy import stats

from deniable.client import Survey

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost"]


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (apt-get install chromium)")
        pytest.skip("no Chromium on this machine")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Recorder:
    """Every request a page sends, with its body and headers, and every console error."""

    def __init__(self, page):
        self.requests, self.errors = [], []
        page.on("request", lambda r: self.requests.append({"url": r.url, "method": r.method, "body": r.post_data or "",
                                                           "headers": r.headers}))
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def posts(self):
        return [r for r in self.requests if r["method"] == "POST"]


def fill_demo(page, answers):
    page.check(f"#q-dodged input[value='{answers['dodged']}']")
    page.check(f"#q-region input[value='{answers['region']}']")
    page.check(f"#q-cash input[value='{answers['cash']}']")
    page.check(f"#q-fairness input[value='{answers['fairness']}']")
    for option in answers["undeclared"]:
        page.check(f"#q-undeclared input[value='{option}']")
    page.fill("#q-hours input", answers["hours"])


TRUE = {"dodged": "yes", "region": "West", "cash": "Cash in hand", "fairness": "Strongly agree",
        "undeclared": ["Foreign accounts"], "hours": "17.5"}


def test_respondent_fills_the_demo_survey_and_only_reports_leave_the_page(browser, live_server, survey, store):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    assert page.is_hidden("#coin-form") or page.locator("#coin-form").count() == 0
    fill_demo(page, TRUE)
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#sent:not([hidden])")
    assert recorder.errors == []

    [post] = recorder.posts()
    assert post["url"] == f"{live_server}/api/v1/surveys/tax/responses"
    body = json.loads(post["body"])
    assert set(body) == {"spec_hash", "idempotency_key", "reports"}
    assert body["spec_hash"] == survey.hash
    for qid, report in body["reports"].items():
        survey.questions[qid].mechanism.validate_report(report)
    # the page shows exactly what was sent
    assert json.loads(page.text_content("#sent-body")) == body
    # 17.5 is snapped to the grid before randomizing: the typed value itself must never travel or stay
    everything = json.dumps(recorder.requests) + page.url + json.dumps(context.cookies())
    everything += page.evaluate("JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])")
    assert "17.5" not in everything
    # the one cookie is the no-JavaScript form's CSRF value: random, HttpOnly, SameSite=Strict, this survey only
    [cookie] = context.cookies()
    assert (cookie["name"], cookie["path"], cookie["httpOnly"], cookie["sameSite"]) == ("deniable_form", "/s/tax", True, "Strict")
    assert cookie["value"] not in json.dumps(body)
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert page.url == f"{live_server}/s/tax"
    # the answer form is gone from the page once the reports are drawn
    assert page.locator("#survey-form").count() == 0
    [row] = list(store.export("tax"))
    assert row["reports"] == body["reports"]
    context.close()


@pytest.mark.slow
def test_reports_vary_and_match_the_coin_flip_across_many_submissions(browser, live_server, store):
    coin = Survey.from_dict({"id": "coin", "title": "Coin", "questions": [
        {"id": "dodged", "type": "yes_no", "text": "Have you ever dodged your taxes?"}]})
    store.add_survey(coin)
    context = browser.new_context()
    page = context.new_page()
    recorder = Recorder(page)
    submissions = 60  # each a page load (about 0.5 s): enough to see them vary and follow 3/4 (P(all yes) = 3e-8)
    for _ in range(submissions):
        page.goto(f"{live_server}/s/coin")
        page.check("#q-dodged input[value='yes']")
        page.click("#survey-form button[type=submit]")
        page.wait_for_selector("#sent:not([hidden])")
    reports = [json.loads(p["body"])["reports"]["dodged"] for p in recorder.posts()]
    assert len(reports) == submissions
    yes = reports.count("yes")
    assert 0 < yes < submissions  # they vary
    # P(report yes | true yes) = 3/4 exactly; a false failure is rarer than 1e-6
    assert stats.binomtest(yes, submissions, 0.75).pvalue > 1e-6
    assert store.response_count("coin") == submissions
    context.close()


def test_no_javascript_falls_back_to_the_coin_procedure(browser, live_server, survey, store):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    assert page.is_visible("#coin-form")
    assert page.is_hidden("#survey-form")
    assert "Flip a coin" in page.text_content("#coin-form")
    page.check("#coin-form input[name=dodged][value=no]")
    page.check("#coin-form input[name=region][value=South]")
    page.click("#coin-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/s/tax/thanks\?sent=form$"))
    # what was ticked was sent: it protects only where the coin was followed, so no promise beyond that
    thanks = page.text_content("main")
    assert "What you ticked is what was sent" in thanks and "never left" not in thanks
    [post] = recorder.posts()
    fields = dict(pair.split("=", 1) for pair in post["body"].split("&"))
    assert set(fields) == {"spec_hash", "idempotency_key", "form_key", "lang", "dodged", "region"}
    [row] = list(store.export("tax"))
    assert row["reports"] == {"dodged": "no", "region": "South"}
    context.close()


def test_invitation_token_becomes_a_credential_answers_once_and_leaves_the_address_bar(browser, live_server, survey,
                                                                                      store):
    """The page asks for its credential when it opens and sends it, not the token: the response is joined to no
    invitation. Opened again, even in the same browser, the invitation earns no second credential and no answer."""
    [token] = store.issue_tokens("tax", 1)
    context = browser.new_context()
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax?t={token}")
    assert token not in page.url  # replaced in history at once
    said = page.text_content("#device-words .invitation-note")  # what stays known, said on the page
    assert page.is_visible("#device-words .invitation-note") and "opened the survey" in said and "credential" in said
    fill_demo(page, TRUE)
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#sent:not([hidden])")
    posts = recorder.posts()
    assert [post["url"].rsplit("/", 1)[-1] for post in posts] == ["credential-key", "credentials", "responses"]
    sent = json.loads(posts[-1]["body"])
    assert "token" not in sent and set(sent["credential"]) == {"key", "serial", "signature"}
    assert token not in posts[-1]["body"]
    assert page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('deniable-credential'))") == []
    # The server cannot tell an answered invitation from an opened one now: the page opens, and the send is refused.
    page.goto(f"{live_server}/s/tax?t={token}")
    fill_demo(page, TRUE)
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#send-problem:not([hidden])")
    assert "already been used" in page.text_content("#send-problem")
    assert store.response_count("tax") == 1
    context.close()


def test_a_token_spent_the_old_way_says_so_when_its_link_is_opened_again(browser, live_server, survey, store, client):
    [token] = store.issue_tokens("tax", 1)
    body = {"spec_hash": survey.hash, "idempotency_key": "k" * 16, "reports": survey.randomize(TRUE), "token": token}
    assert client.post("/api/v1/surveys/tax/responses", json=body).status_code == 201
    page = browser.new_context().new_page()
    again = page.goto(f"{live_server}/s/tax?t={token}")
    assert again.status == 409
    assert "Already answered" in page.text_content("h1") and page.locator("#survey-form").count() == 0


@pytest.mark.parametrize("link, status, heading", [
    ("?t=not-a-token", 403, "This invitation link does not work"),
    ("", 403, "This survey is by invitation"),
])
def test_an_invitation_survey_explains_a_wrong_or_missing_link_before_the_form(browser, live_server, survey, store, link, status, heading):
    store.issue_tokens("tax", 1)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    shown = page.goto(f"{live_server}/s/tax{link}")
    assert shown.status == status and page.text_content("h1").strip() == heading
    assert page.locator("#survey-form, #coin-form").count() == 0
    context.close()


def _top_is_on_screen(page, selector) -> bool:
    box = page.locator(selector).bounding_box()
    return box is not None and 0 <= box["y"] < page.viewport_size["height"]


def _answers_on_page(page) -> dict:
    return {"dodged": page.is_checked(f"#q-dodged input[value='{TRUE['dodged']}']"),
            "undeclared": page.is_checked(f"#q-undeclared input[value='{TRUE['undeclared'][0]}']"),
            "hours": page.input_value("#q-hours input")}


def test_a_refused_send_keeps_the_answers_and_says_so_at_the_top(browser, live_server, survey, store):
    """The link was fine when the page opened, and is spent (on another device, the old way) before this page has its
    credential: the credential is refused, the send is refused, and nothing of either is kept in the browser."""
    [token] = store.issue_tokens("tax", 1)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    held = []  # the page's request for its credential's key, held until the other device has answered
    page.route("**/credential-key", lambda route: held.append(route))
    page.goto(f"{live_server}/s/tax?t={token}")
    while not held:
        page.wait_for_timeout(20)
    store.submit("tax", survey.hash, "elsewhere-0001", {"dodged": "no", "region": "North"}, token, answerable={"dodged", "region"})
    held[0].continue_()
    fill_demo(page, TRUE)
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#send-problem:not([hidden])")
    said = page.text_content("#send-problem")
    assert "already been used" in said and "token" not in said.lower()
    assert page.evaluate("document.activeElement.id") == "send-problem"
    assert _top_is_on_screen(page, "#send-problem")  # at the top, where a phone shows it
    assert _answers_on_page(page) == {"dodged": True, "undeclared": True, "hours": "17.5"}
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert store.response_count("tax") == 1
    context.close()


def _send_offline(context, live_server):
    """Fill the demo survey and send it with the browser offline: the body lands in the outbox."""
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    context.set_offline(True)
    fill_demo(page, TRUE)
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#outbox-status:not([hidden])", timeout=20_000)
    assert "saved on this device" in page.text_content("#outbox-status")
    assert page.text_content("#sent h2") == "Saved on this device" and page.locator("#survey-form").count() == 0
    # Nothing has been sent yet, and the page says so (it said "exactly what was sent").
    assert "exactly what will be sent once there is a connection" in page.text_content("#sent-explained")
    kept = page.evaluate("localStorage.getItem('deniable-outbox')")
    [entry] = json.loads(kept)
    attempted = [p["body"] for p in recorder.posts()]
    # Known to be offline: one attempt, then the outbox at once (four retries kept it silent for 3.75 s).
    assert attempted == [json.dumps(entry["body"], separators=(",", ":"))]  # what is kept is what will be sent
    assert set(entry["body"]) == {"spec_hash", "idempotency_key", "reports"}
    assert "17.5" not in kept  # reports only: the typed answer is not kept
    return page, entry


def test_the_send_button_says_it_is_sending_at_once(browser, live_server, survey, store):
    """A send that takes its time (a slow network) shows "Sending…" from the click, not seconds of nothing."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    held = []
    page.route("**/api/v1/surveys/tax/responses", lambda route: held.append(route))
    page.goto(f"{live_server}/s/tax")
    fill_demo(page, TRUE)
    page.click("#survey-form button[type=submit]")
    page.wait_for_function("document.getElementById('send').textContent === 'Sending…'")
    page.wait_for_function("document.getElementById('send').disabled")
    assert store.response_count("tax") == 0
    for _ in range(500):  # let the held request reach its route handler (the events run while the page waits)
        if held:
            break
        page.wait_for_timeout(20)
    held[0].continue_()
    page.wait_for_selector("#sent:not([hidden])")
    assert "This is exactly what was sent" in page.text_content("#sent-explained")
    assert store.response_count("tax") == 1
    context.close()


def test_offline_answers_wait_in_the_outbox_and_are_sent_once_back_online(browser, live_server, survey, store):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page, entry = _send_offline(context, live_server)
    assert store.response_count("tax") == 0
    context.set_offline(False)  # the browser's online event sends it
    page.locator("#outbox-status", has_text="now been sent").wait_for()
    assert "This is exactly what was sent" in page.text_content("#sent-explained")
    [row] = list(store.export("tax"))
    assert row["reports"] == entry["body"]["reports"]
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0  # nothing left on the device
    context.close()


def test_offline_answers_are_sent_when_the_survey_is_opened_again(browser, live_server, survey, store):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page, entry = _send_offline(context, live_server)
    page.close()  # the phone kills the tab while there is no signal
    context.set_offline(False)
    again = context.new_page()
    again.goto(f"{live_server}/s/tax")
    again.locator("#outbox-status", has_text="now been sent").wait_for()
    assert again.locator("#survey-form").count() == 0  # they answered already: not asked again
    [row] = list(store.export("tax"))
    assert row["reports"] == entry["body"]["reports"]
    assert store.response_count("tax") == 1
    context.close()


def test_a_server_error_keeps_the_answers_for_another_try(browser, live_server, survey, store):
    """A server that answers 503 (not a lost connection): the answers stay, sending again sends the same body."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    page.route("**/api/v1/surveys/tax/responses", lambda route: route.fulfill(status=503, body="{}"))
    fill_demo(page, TRUE)
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#send-problem:not([hidden])", timeout=20_000)
    said = page.text_content("#send-problem")
    assert "having trouble" in said and "still on this page" in said
    assert page.evaluate("document.activeElement.id") == "send-problem" and _top_is_on_screen(page, "#send-problem")
    assert _answers_on_page(page) == {"dodged": True, "undeclared": True, "hours": "17.5"}
    failed = {p["body"] for p in recorder.posts()}
    assert len(failed) == 1  # the client's own retries, each with the same body
    page.unroute("**/api/v1/surveys/tax/responses")
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#sent:not([hidden])")
    assert page.is_hidden("#send-problem")
    assert {p["body"] for p in recorder.posts()} == failed
    [row] = list(store.export("tax"))
    assert row["reports"] == json.loads(failed.pop())["reports"]
    assert page.evaluate("localStorage.length") == 0
    context.close()


def test_the_sent_panel_explains_a_number_reported_outside_its_range(browser, live_server, store):
    """At ε = 0.1 on a 0-1 question most reports fall outside 0-1; the panel says why beside them."""
    wide = Survey.from_dict({"id": "wide", "title": "Wide", "questions": [
        {"id": "count", "type": "number", "text": "How many?", "min": 0, "max": 1, "step": 1,
         "privacy": {"design": "laplace", "epsilon": 0.1}}]})
    store.add_survey(wide)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    for _ in range(40):
        page.goto(f"{live_server}/s/wide")
        page.fill("#q-count input", "0")
        page.click("#survey-form button[type=submit]")
        page.wait_for_selector("#sent:not([hidden])")
        report = json.loads(page.text_content("#sent-body"))["reports"]["count"]
        shown = page.text_content("#sent-reports dd")
        if 0 <= report <= 1:
            assert shown == str(report)
        else:
            assert shown == f"{report} (outside 0–1: that is the randomization protecting you)"
            break
    else:
        pytest.fail("40 reports at ε = 0.1 all inside 0-1 (probability below 1e-40)")
    context.close()


def test_missing_required_answers_are_flagged_before_anything_is_sent(browser, live_server, survey):
    context = browser.new_context()
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    page.check("#q-region input[value='North']")
    page.click("#survey-form button[type=submit]")
    page.wait_for_selector("#q-dodged .problem:not([hidden])")
    assert recorder.posts() == []
    context.close()


@pytest.mark.slow
def test_a_reload_shows_the_same_arm_and_group_so_they_cannot_be_picked(browser, live_server, store):
    """The arm of each split-ballot question and the group of a cheating-detection question are the device's,
    derived from a secret kept in its storage: reloading shows the same ones (reloading until a liked arm appeared had
    moved an arm's share from 0.25 to 0.18); another device draws its own."""
    from tests.conftest import EXAMPLES

    store.add_survey(Survey.from_file(EXAMPLES / "split_ballot.yaml"))

    def shown(page) -> tuple:
        page.wait_for_selector("fieldset.question[data-arm]")
        return tuple(page.eval_on_selector_all("fieldset.question", "fs => fs.map(f => [f.dataset.question, "
                                               "f.dataset.arm || '', f.dataset.group || ''].join(':'))"))

    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live_server}/s/validation")
    first = shown(page)
    assert any(":direct:" in part or ":randomized:" in part for part in first)
    for _ in range(4):
        page.reload()
        assert shown(page) == first
    # what the device keeps for it: one random secret, no answer, no arm
    stored = page.evaluate("JSON.stringify(Object.entries(localStorage))")
    [[key, secret]] = json.loads(stored)
    assert key == "deniable.draws" and re.fullmatch(r"[0-9a-f]{64}", secret)
    context.close()
    seen = set()
    for _ in range(8):  # new devices: their own draws (2^3 arms × 2 groups: eight alike would be 1 in ~10^6)
        other = browser.new_context()
        fresh = other.new_page()
        fresh.goto(f"{live_server}/s/validation")
        seen.add(shown(fresh))
        other.close()
    assert len(seen) > 1
