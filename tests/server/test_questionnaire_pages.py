"""The demo questionnaire in real Chromium: sections one per screen on a phone, skip logic on a
public answer, two languages, accessible checks, keyboard-only completion, axe-core on every screen."""

import json

import pytest
from axe_playwright_python.sync_playwright import Axe

from deniable.client import Survey, catalogue
from deniable.server.demo import demo_survey
from tests.server.test_browser import Recorder, browser  # noqa: F401 - the module's Chromium fixture

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
AXE = Axe()
#: Every screen axe-core has checked, with its violation count: the closing note reports them.
AXE_COUNTS: dict[str, int] = {}


@pytest.fixture
def questionnaire(store):
    survey = demo_survey()
    store.add_survey(survey)
    return survey


def no_violations(page, screen: str):
    results = AXE.run(page)
    AXE_COUNTS[screen] = results.violations_count
    assert results.violations_count == 0, f"{screen}:\n{results.generate_report()}"


def open_page(browser, live_server, size, language=None, page_script=True):  # noqa: F811
    options = dict(size)
    if language:
        options["locale"] = language
        options["extra_http_headers"] = {"Accept-Language": language}
    context = browser.new_context(**options)
    if not page_script:
        # The page as a browser without JavaScript gets it (axe-core itself needs a script engine,
        # so the engine stays on and the page's own script is what is left out).
        context.route("**/static/survey.js", lambda route: route.abort())
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/tax")
    return context, page, recorder


@pytest.mark.parametrize("language", ["en", "es", "fr"])
def test_on_a_phone_one_section_per_screen_with_progress_checks_and_skip_logic(browser, live_server,  # noqa: F811
                                                                                 questionnaire, store, language):
    context, page, recorder = open_page(browser, live_server, PHONE, language)
    words = {"en": ("Section 1 of 2", "Section 2 of 2", "Please answer this question.", "Sent"),
             "es": ("Sección 1 de 2", "Sección 2 de 2", "Por favor, responda esta pregunta.", "Enviado"),
             "fr": ("Partie 1 sur 2", "Partie 2 sur 2", "Veuillez répondre à cette question.", "Envoyé")}[language]
    assert page.get_attribute("html", "lang") == language and page.get_attribute("html", "dir") == "ltr"
    assert page.text_content("#progress") == words[0]
    assert page.is_visible("#title-you") and page.is_hidden("#title-taxes")
    no_violations(page, f"phone {language}: section 1")

    page.click("#next")  # nothing answered: both required questions are flagged, focus on the first
    assert page.text_content("#problem-region") == words[2]
    assert page.evaluate("document.activeElement.name") == "a-region"
    described = page.get_attribute("#q-region input >> nth=0", "aria-describedby")
    assert "problem-region" in described.split() and page.get_attribute("#q-region input >> nth=0", "aria-invalid") == "true"
    no_violations(page, f"phone {language}: errors shown")

    page.check("#q-region input[value='North']")
    page.check("#q-worked input[value='no']")  # the section on work is skipped from now on
    page.click("#next")
    assert page.text_content("#progress") == words[1]
    assert page.evaluate("document.activeElement.id") == "title-taxes"
    assert page.is_visible("#q-coin_note")
    no_violations(page, f"phone {language}: section 2 of 2")
    page.check("#q-dodged input[value='yes']")
    page.check("#q-fairness input[value='Agree']")
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    assert page.text_content("#sent h2") == words[3]
    no_violations(page, f"phone {language}: sent")
    assert recorder.errors == []
    [post] = recorder.posts()
    body = json.loads(post["body"])
    assert set(body["reports"]) == {"region", "worked", "dodged", "fairness"}
    [row] = list(store.export("tax"))
    assert row["reports"] == body["reports"]
    context.close()


def test_the_work_section_appears_for_those_who_worked_and_ranges_are_checked(browser, live_server,  # noqa: F811
                                                                               questionnaire, store):
    context, page, recorder = open_page(browser, live_server, PHONE)
    page.check("#q-region input[value='East']")
    page.check("#q-worked input[value='yes']")
    page.click("#next")
    page.check("#q-dodged input[value='no']")
    page.check("#q-fairness input[value='Neutral']")
    page.click("#next")
    assert page.text_content("#progress") == "Section 3 of 3"
    page.check("#q-cash input[value='Salary']")
    page.fill("#q-hours input", "45")
    page.click("#send")
    assert page.text_content("#problem-hours") == "Enter a number of hours from 0 to 40."
    assert page.evaluate("document.activeElement.name") == "a-hours"
    no_violations(page, "phone en: section 3 with a range error")
    page.fill("#q-hours input", "12")
    page.click("#back")
    assert page.text_content("#progress") == "Section 2 of 3"
    page.click("#next")
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    body = json.loads(recorder.posts()[0]["body"])
    assert set(body["reports"]) == {"region", "worked", "dodged", "fairness", "cash", "undeclared", "hours"}
    questionnaire.questions["hours"].mechanism.validate_report(body["reports"]["hours"])
    context.close()


@pytest.mark.parametrize("language", ["en", "es", "fr"])
def test_on_a_desktop_the_whole_questionnaire_is_one_page(browser, live_server, questionnaire, language):  # noqa: F811
    context, page, _ = open_page(browser, live_server, DESKTOP, language)
    assert page.is_hidden("#progress") and page.is_hidden("#next")
    assert page.is_visible("#title-you") and page.is_visible("#title-taxes") and page.is_hidden("#title-work")
    no_violations(page, f"desktop {language}: whole survey")
    page.check("#q-worked input[value='yes']")
    assert page.is_visible("#title-work")
    no_violations(page, f"desktop {language}: with the work section")
    page.click("#send")
    no_violations(page, f"desktop {language}: errors shown")
    context.close()


@pytest.mark.parametrize("width", ["phone", "desktop"])
def test_an_invitation_survives_a_language_switch_without_being_in_any_link(browser, live_server, store, width):  # noqa: F811
    """An invitation-only survey opened from its link: no language link's href holds the token, before or after a
    switch (the other page's links are written with it); the switch keeps the answers and the response is accepted
    with the invitation's credential, which the page asked for once."""
    survey = Survey.from_dict({"id": "inv", "title": {"en": "Health", "fr": "Santé"}, "languages": ["en", "fr"],
                               "questions": [{"id": "ok", "type": "yes_no", "text": {"en": "All well?", "fr": "Ça va ?"},
                                              "privacy": "none"}]})
    store.add_survey(survey, access="token")
    [token] = store.issue_tokens("inv", 1)
    context = browser.new_context(**(PHONE if width == "phone" else DESKTOP))
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{live_server}/s/inv?t={token}")
    page.wait_for_load_state("load")

    def hrefs():
        return [page.get_attribute(f".languages a[lang={code}]", "href") for code in ("en", "fr")]

    assert "t=" not in page.url and all(token not in href for href in hrefs())
    page.check("#q-ok input[value='yes']")
    page.click(".languages a[lang=fr]")
    page.wait_for_selector("html[lang=fr]")
    assert page.is_checked("#q-ok input[value='yes']")  # switched in place: the answer kept
    assert all(token not in href for href in hrefs()) and token not in page.content().split("survey-data")[0]
    with page.expect_response(lambda r: r.request.method == "POST" and "/responses" in r.url) as answered:
        page.click("#send")
    assert answered.value.status == 201 and store.credentials_issued("inv") == 1  # a credential, asked for once
    sent = json.loads(recorder.posts()[-1]["body"])
    assert "token" not in sent and "credential" in sent
    context.close()


def test_the_language_switcher_and_right_to_left_languages(browser, live_server, store):  # noqa: F811
    survey = Survey.from_dict({"id": "rtl", "title": {"en": "Health", "ar": "الصحة"}, "languages": ["en", "ar"],
                               "questions": [{"id": "ok", "type": "yes_no", "text": {"en": "All well?", "ar": "هل أنت بخير؟"}}]})
    store.add_survey(survey)
    context = browser.new_context(**DESKTOP)
    page = context.new_page()
    page.goto(f"{live_server}/s/rtl?t=invitation-token-123")
    assert page.get_attribute("html", "lang") == "en"
    assert "t=" not in page.url  # the invitation leaves the address bar ...
    assert "t=" not in page.get_attribute(".languages a[lang=ar]", "href")  # ... and the links: put in at the click
    page.click(".languages a[lang=ar]")
    page.wait_for_selector("html[lang=ar]")
    page.wait_for_load_state("load")  # the page's module script has run once the load event fired
    page.wait_for_function("!new URLSearchParams(location.search).has('t')")
    assert page.get_attribute("html", "dir") == "rtl"
    assert page.text_content("h1") == "الصحة" and "t=" not in page.url
    assert page.text_content("#send") == catalogue.shipped("ar")["send"]  # the page's own words in Arabic too
    no_violations(page, "desktop ar: right to left")
    context.close()


def test_switching_language_keeps_the_answers_in_the_page(browser, live_server, questionnaire, store):  # noqa: F811
    context, page, recorder = open_page(browser, live_server, PHONE, "en")
    page.check("#q-region input[value='South']")
    page.check("#q-worked input[value='yes']")
    page.click("#next")
    page.check("#q-dodged input[value='yes']")
    page.click("#next")  # fairness left unanswered: flagged in English
    assert page.text_content("#problem-fairness") == "Please answer this question."
    page.evaluate("window.sameDocument = true")  # gone if the page were loaded again
    page.click(".languages a[lang=fr]")
    page.wait_for_selector("html[lang=fr]")
    assert page.evaluate("window.sameDocument") is True and page.url.endswith("/s/tax?lang=fr")
    french = catalogue.shipped("fr")
    assert page.text_content("h1") == "Les impôts et la vie quotidienne"
    assert page.text_content("#progress") == "Partie 2 sur 3" and page.is_visible("#title-taxes")
    assert page.text_content("#problem-fairness") == french["answer_this"]
    assert page.text_content("#form-problem") == french["check_answers"]
    assert page.text_content("#q-dodged legend").startswith("Avez-vous déjà fraudé le fisc ?")
    statement = questionnaire.questions["dodged"].privacy_statement(words=questionnaire.words("fr"))
    assert page.text_content("#q-dodged .privacy") == statement
    assert page.text_content("#next") == french["next"] and page.get_attribute(".languages a[lang=fr]", "aria-current") == "true"
    assert page.is_checked("#q-dodged input[value='yes']")  # the answers given stay, and nothing stored them
    assert page.evaluate("JSON.stringify(localStorage) + document.cookie").find("South") == -1
    no_violations(page, "phone fr: after switching from en, errors shown")
    context.set_offline(True)  # no connection: the switch cannot fetch the other language, and the answers stay
    page.click(".languages a[lang=es]")
    page.wait_for_selector("#send-problem:not([hidden])")
    assert page.get_attribute("html", "lang") == "fr" and page.is_checked("#q-dodged input[value='yes']")
    assert page.evaluate("window.sameDocument") is True and french["offline"] in page.text_content("#send-problem")
    context.set_offline(False)
    page.check("#q-fairness input[value='Agree']")
    page.click("#next")
    page.check("#q-cash input[value='Salary']")
    page.fill("#q-hours input", "10")
    page.click(".languages a[lang=es]")  # and on again, at the last section
    page.wait_for_selector("html[lang=es]")
    assert page.text_content("#send") == catalogue.shipped("es")["send"] and page.input_value("#q-hours input") == "10"
    page.click("#send")
    page.wait_for_selector("#sent:not([hidden])")
    assert page.text_content("#sent h2") == catalogue.shipped("es")["sent"]
    assert "lang=es" in page.get_attribute("#thanks-link", "href")  # the thank-you page in the language now shown
    body = json.loads(recorder.posts()[0]["body"])
    assert body["reports"]["region"] == "South" and body["reports"]["worked"] == "yes"
    assert set(body["reports"]) == {"region", "worked", "dodged", "fairness", "cash", "undeclared", "hours"}
    assert store.response_count("tax") == 1
    assert [e for e in recorder.errors if "ERR_INTERNET_DISCONNECTED" not in e] == []  # the offline fetch's own message
    context.close()


def test_the_whole_survey_can_be_completed_with_the_keyboard_alone(browser, live_server, questionnaire, store):  # noqa: F811
    context, page, recorder = open_page(browser, live_server, PHONE)
    keyboard = page.keyboard

    def tab_to(selector):
        for _ in range(60):
            keyboard.press("Tab")
            if page.evaluate("(s) => document.activeElement.matches(s)", selector):
                return
        raise AssertionError(f"Tab never reached {selector}")

    tab_to("#q-region input")  # a radio group: arrow keys choose within it
    keyboard.press("ArrowDown")  # South
    tab_to("#q-worked input")
    keyboard.press("Space")  # yes
    tab_to("#next")
    keyboard.press("Enter")
    tab_to("#q-dodged input")
    keyboard.press("Space")
    tab_to("#q-fairness input")
    keyboard.press("ArrowDown")
    tab_to("#next")
    keyboard.press("Enter")
    tab_to("#q-cash input")
    keyboard.press("Space")
    tab_to("#q-undeclared input")
    keyboard.press("Space")
    tab_to("#q-hours input")
    keyboard.type("5")
    tab_to("#send")
    keyboard.press("Enter")
    page.wait_for_selector("#sent:not([hidden])")
    body = json.loads(recorder.posts()[0]["body"])
    assert body["reports"]["region"] == "South" and body["reports"]["worked"] == "yes"
    assert set(body["reports"]) == {"region", "worked", "dodged", "fairness", "cash", "undeclared", "hours"}
    assert store.response_count("tax") == 1
    context.close()


def test_without_javascript_sections_and_skip_logic_still_work(browser, live_server, questionnaire, store):  # noqa: F811
    context, page, recorder = open_page(browser, live_server, PHONE, "es", page_script=False)
    assert page.is_visible("#coin-form") and "Lance una moneda" in page.text_content("#coin-form")
    no_violations(page, "phone es: no-JavaScript form")
    page.check("#coin-form input[name=region][value=West]")
    page.check("#coin-form input[name=worked][value=no]")
    page.check("#coin-form input[name=dodged][value=yes]")
    page.click("#coin-form button[type=submit]")
    page.wait_for_url("**/s/tax/thanks?lang=es&sent=form")
    assert page.text_content("h1") == "Gracias"
    no_violations(page, "phone es: thank-you page")
    [row] = list(store.export("tax"))
    assert row["reports"] == {"region": "West", "worked": "no", "dodged": "yes"}
    context.close()


def test_axe_checked_every_screen(request):
    """Runs last in this module: the screens above all had 0 violations (printed for the record)."""
    print("\naxe-core violations per screen:", json.dumps(AXE_COUNTS, ensure_ascii=False, indent=1))
    assert all(count == 0 for count in AXE_COUNTS.values())
