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


# --- split ballots ---------------------------------------------------------------------------------

#: The device's draws secret (`survey.js`: arms and groups derive from it, so a reload shows the same ones), chosen
#: so that every split ballot of examples/split_ballot.yaml shows its direct arm, or every one its randomized arm and
#: the cheating-detection question group b (found with `Survey.arm_for`/`group_for`, the JS twin's).
DRAWS = {"direct": "2e" + "00" * 31, "randomized": "00" * 32}
FIXED_DRAWS = "localStorage.setItem('deniable.draws', '{}');"


@pytest.fixture
def validation(store):
    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    store.add_survey(survey)
    return survey


def test_the_direct_arm_says_so_first_and_sends_the_answer_as_given(browser, live_server, validation, store):  # noqa: F811
    context = browser.new_context(**PHONE)
    context.add_init_script(FIXED_DRAWS.format(DRAWS["direct"]))
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/validation")
    for qid in ("dodged", "took", "cheated"):
        assert page.get_attribute(f"#q-{qid}", "data-arm") == "direct"
        notice = page.locator(f"#q-{qid} .direct-notice")
        assert notice.is_visible() and "your answer is sent exactly as you give it" in notice.text_content()
        assert not page.locator(f"#q-{qid} .arm[data-arm=randomized]").is_visible()
        visible = [i.get_attribute("value") for i in page.query_selector_all(f"#q-{qid} input") if i.is_visible()]
        assert visible == ["yes", "no"], qid  # the plain question: no companion, no instruction, no same/different
    assert not page.locator("#q-took .respondent-prompt").is_visible()
    no_violations(page, "phone: split ballot, direct arm")
    page.check("#q-region input[value=North]")
    for qid, value in {"dodged": "yes", "took": "yes", "cheated": "no"}.items():
        page.check(f"#q-{qid} .arm[data-arm=direct] input[value={value}]")
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    [post] = [r for r in recorder.posts() if "/responses" in r["url"]]
    expected = {"region": "North", "dodged": {"arm": "direct", "report": "yes"},
                "took": {"arm": "direct", "report": "yes"}, "cheated": {"arm": "direct", "report": "no"}}
    assert json.loads(post["body"])["reports"] == expected
    assert "Yes (asked directly)" in page.text_content("#sent-reports")
    no_violations(page, "phone: sent panel of a split ballot's direct arm")
    [row] = list(store.export("validation"))
    assert row["reports"] == expected
    assert not recorder.errors
    context.close()


def test_the_randomized_arm_is_the_design_unchanged(browser, live_server, validation, store):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(FIXED_DRAWS.format(DRAWS["randomized"]))
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/validation")
    for qid in ("dodged", "took", "cheated"):
        assert page.get_attribute(f"#q-{qid}", "data-arm") == "randomized"
        assert not page.locator(f"#q-{qid} .direct-notice").is_visible()
        assert "25%" in page.text_content(f"#q-{qid} .privacy") or "33.3%" in page.text_content(f"#q-{qid} .privacy")
    assert page.locator("#q-took .respondent-prompt").is_visible()
    assert page.get_attribute("#q-cheated", "data-group") == "b"
    no_violations(page, "desktop: split ballot, randomized arm")
    page.check("#q-region input[value=South]")
    page.check("#q-dodged .arm[data-arm=randomized] input[value=no]")
    page.check("#q-took .arm[data-arm=randomized] input[value=different]")
    page.check("#q-cheated .arm[data-arm=randomized] input[value=yes]")
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    [post] = [r for r in recorder.posts() if "/responses" in r["url"]]
    sent = json.loads(post["body"])["reports"]
    assert sent["took"] == {"arm": "randomized", "report": "different"}
    assert sent["cheated"] == {"arm": "randomized", "group": "b", "report": "yes"}
    assert sent["dodged"]["arm"] == "randomized" and sent["dodged"]["report"] in ("yes", "no")
    [row] = list(store.export("validation"))
    assert row["reports"] == sent
    assert not recorder.errors
    context.close()


def test_without_javascript_the_form_shows_the_arm_the_server_drew(browser, live_server, validation, store):  # noqa: F811
    context = browser.new_context(**PHONE)
    context.route("**/static/survey.js", lambda route: route.abort())
    page = context.new_page()
    page.goto(f"{live_server}/s/validation")
    form = page.locator("#coin-form")
    arms = {qid: form.locator(f"input[name='{qid}.arm']").get_attribute("value") for qid in ("dodged", "took", "cheated")}
    assert set(arms.values()) <= {"direct", "randomized"}
    assert form.locator(".direct-notice").count() == sum(arm == "direct" for arm in arms.values())
    no_violations(page, "phone: no-JavaScript form with split ballots")
    chosen = {"dodged": "no", "took": "yes" if arms["took"] == "direct" else "same", "cheated": "no"}
    for qid, value in chosen.items():
        page.check(f"#coin-form input[name={qid}][value={value}]")
    page.click("#coin-form button[type=submit]")
    page.wait_for_url("**/s/validation/thanks?sent=form")
    [row] = list(store.export("validation"))
    for qid, value in chosen.items():
        report = row["reports"][qid]
        assert report["arm"] == arms[qid] and report["report"] == value, (qid, report)
        if qid == "cheated" and arms[qid] == "randomized":
            assert report["group"] in ("a", "b")
    context.close()


@pytest.fixture
def pulse(store):
    survey = Survey.from_file(EXAMPLES / "panel.yaml")
    store.add_survey(survey)
    store.open_wave("pulse", "w1")
    return survey


def test_a_repeated_survey_keeps_one_memo_in_the_browser_and_sends_its_wave(browser, live_server, pulse, store):  # noqa: F811
    from deniable.client.memo import Memo

    context = browser.new_context(**PHONE)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/pulse")
    assert "asked again in later waves" in page.text_content("#q-burnout .privacy")
    secret = page.evaluate("localStorage.getItem('deniable.memo')")
    assert len(secret) == 64 and all(c in "0123456789abcdef" for c in secret)
    # the browser derives the permanent report the Python client derives from the same secret
    in_browser = page.evaluate("""async () => {
        const { Memo, Survey } = await import('/js/deniable.js');
        const data = JSON.parse(document.getElementById('survey-data').textContent);
        const survey = Survey.fromSpec(data.spec);
        const memo = new Memo(localStorage);
        return ['yes', 'no'].map((a) => survey.questions.burnout.permanent.randomize(a, memo.stream('pulse', 'burnout', 'report', a === 'yes' ? 0 : 1)));
    }""")
    memo = Memo.from_secret(bytes.fromhex(secret))
    permanent = pulse.questions["burnout"].permanent
    assert in_browser == [permanent.randomize(a, memo.stream("pulse", "burnout", "report", i)) for i, a in enumerate(["yes", "no"])]
    page.check("#q-team input[value='Support']")
    page.check("#q-burnout input[value='yes']")
    page.check("#q-looking input[value='no']")
    page.check("#q-workload input[value='Mostly']")
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    [post] = [r for r in recorder.posts() if "/responses" in r["url"]]
    body = json.loads(post["body"])
    assert body["wave"] == "w1" and set(body) == {"spec_hash", "idempotency_key", "reports", "wave"}
    [row] = list(store.export("pulse"))
    assert row["wave"] == "w1" and row["reports"]["team"] == "Support"
    assert "yes" not in json.dumps(page.evaluate("Object.assign({}, localStorage)"))  # the memo holds no answer
    page.goto(f"{live_server}/s/pulse")
    assert page.evaluate("localStorage.getItem('deniable.memo')") == secret  # the next wave finds the same memo
    assert not recorder.errors
    context.close()


def test_a_repeated_survey_is_not_offered_where_the_browser_cannot_keep_a_memo(browser, live_server, pulse):  # noqa: F811
    context = browser.new_context(**PHONE)
    context.add_init_script("Object.defineProperty(window, 'localStorage', {get() { throw new DOMException('denied', 'SecurityError'); }});")
    page = context.new_page()
    page.goto(f"{live_server}/s/pulse")
    page.wait_for_selector("#send-problem:not([hidden])")
    assert "does not let the page store anything" in page.text_content("#send-problem")
    assert page.locator("#survey-form").count() == 0
    context.close()
