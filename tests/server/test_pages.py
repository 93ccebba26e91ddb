import re
import secrets

import pytest

from deniable.client import Survey
from deniable.server import dashboard
from tests.conftest import EXAMPLES, ROOT
from tests.server.conftest import ADMIN, form_key, sign_in

pytestmark = pytest.mark.both_engines


def test_survey_page_renders_every_question_type_with_privacy_notes(client, survey):
    page = client.get("/s/tax").data.decode()
    for question in survey.questions.values():
        assert question.text in page
    assert page.count('class="privacy') == len(survey.questions) + 2  # every question, plus the two in the coin form
    assert "at most 5.8% sure" in page
    assert "not randomized" in page  # the public question says so
    assert 'method="dialog"' in page  # the answer form can never be submitted by the browser
    assert "<script>" not in page  # no inline script: the data block is JSON, the code is a module
    assert 'type="module" src="/static/survey.js"' in page


def test_spec_text_cannot_inject_html(client, store):
    evil = Survey.from_dict({"id": "evil", "title": "<script>alert('t')</script>", "questions": [
        {"id": "q", "type": "choice", "text": "<img src=x onerror=alert(1)>", "options": ["</script><script>alert(2)</script>", "b"],
         "privacy": "none"}]})
    store.add_survey(evil)
    page = client.get("/s/evil").data.decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    data = re.search(r'<script type="application/json" id="survey-data">(.*?)</script>', page, re.S).group(1)
    assert "</script" not in data.lower() and "<" not in data


def test_no_javascript_coin_form_posts_only_coin_results(client, survey, store):
    page = client.get("/s/tax").data.decode()
    assert "Flip a coin" in page
    form = re.search(r'<form id="coin-form".*?</form>', page, re.S).group(0)
    names = set(re.findall(r'name="([^"]+)"', form))
    # the coin-flip yes/no question and the public question; designs without a physical procedure are skipped
    assert names == {"spec_hash", "idempotency_key", "form_key", "lang", "dodged", "region"}
    key = re.search(r'name="idempotency_key" value="([^"]+)"', form).group(1)
    csrf = re.search(r'name="form_key" value="([^"]+)"', form).group(1)
    # a form posted from another site carries no cookie (SameSite=Strict), or not this one: refused
    forged = client.application.test_client().post("/s/tax/submit", data={
        "form_key": csrf, "spec_hash": survey.hash, "idempotency_key": key, "dodged": "yes", "region": "East"})
    assert forged.status_code == 403 and list(store.export("tax")) == []
    response = client.post("/s/tax/submit", data={"form_key": csrf, "spec_hash": survey.hash, "idempotency_key": key,
                                                  "dodged": "yes", "region": "East"})
    assert response.status_code == 303 and response.headers["Location"].endswith("/s/tax/thanks?sent=form")
    rows = list(store.export("tax"))
    assert len(rows) == 1 and rows[0]["reports"] == {"dodged": "yes", "region": "East"}
    # The form sent what was ticked; only the page that randomized may say the answers stayed on the device.
    coin = client.get("/s/tax/thanks?sent=form").get_data(as_text=True)
    assert "What you ticked is what was sent" in coin and "never left" not in coin
    assert "never left your device" in client.get("/s/tax/thanks").get_data(as_text=True)


def test_no_javascript_form_errors_are_pages_not_tracebacks(client, survey, store):
    missing = client.post("/s/tax/submit", data={"form_key": form_key(client, "tax"), "spec_hash": survey.hash, "idempotency_key": "k" * 16, "region": "East"})
    assert missing.status_code == 422 and "Have you ever dodged your taxes?" in missing.data.decode()
    smuggled = client.post("/s/tax/submit", data={"form_key": form_key(client, "tax"), "spec_hash": survey.hash, "idempotency_key": "k" * 16,
                                                  "dodged": "yes", "region": "East", "cash": "Salary"})
    assert smuggled.status_code == 422
    assert list(store.export("tax")) == []


def test_closed_and_unknown_surveys_have_their_own_pages(client, survey, store):
    assert client.get("/s/nope").status_code == 404
    store.close_survey("tax")
    closed = client.get("/s/tax")
    assert closed.status_code == 410 and "closed" in closed.data.decode()


def test_the_page_serves_the_shipped_js_client(client):
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "src/deniable/client/js"
    served = client.get("/js/deniable.js").data.decode()
    assert served == (package / "deniable.js").read_text()
    # every module it imports, and every module they import, is served as shipped, and is every module there is
    reached, waiting = set(), set(re.findall(r'from "\./src/(\w+)\.js"', served))
    while waiting:
        module = waiting.pop()
        reached.add(module)
        response = client.get(f"/js/src/{module}.js")
        assert response.status_code == 200 and response.mimetype == "text/javascript"
        assert response.data.decode() == (package / "src" / f"{module}.js").read_text()
        waiting |= set(re.findall(r'from "\./(\w+)\.js"', response.data.decode())) - reached
    assert reached == {path.stem for path in (package / "src").glob("*.js")}
    for refused in ("/js/src/nope.js", "/js/src/..%2fdeniable.js", "/js/src/Exact.js"):
        assert client.get(refused).status_code == 404


def test_the_page_preloads_every_client_module_and_a_return_visit_fetches_none_again(client, survey):
    """The survey page names every module its client imports (deniable.js, every src module, the English words) as
    a modulepreload, so a phone fetches them in one round instead of three levels deep; each carries an ETag, and
    asking again with it is a bodiless 304."""
    page = client.get("/s/tax").get_data(as_text=True)
    preloaded = re.findall(r'<link rel="modulepreload" href="([^"]+)">', page)
    assert preloaded[0] == "/js/deniable.js" and "/js/src/words/en.js" in preloaded
    modules = len(list((ROOT / "src/deniable/client/js/src").glob("*.js")))  # every src module, deniable.js and the words
    assert len(preloaded) == len(set(preloaded)) == modules + 2
    imported = set()
    for url in preloaded:
        first = client.get(url)
        assert first.status_code == 200 and first.headers["Cache-Control"] == "no-cache" and first.headers["ETag"]
        imported |= {url.rsplit("/", 1)[0] + "/" + name.removeprefix("./")
                     for name in re.findall(r'from "(\./[\w/]+\.js)"', first.get_data(as_text=True))}
        again = client.get(url, headers={"If-None-Match": first.headers["ETag"]})
        assert again.status_code == 304 and again.data == b""
        assert client.get(url, headers={"If-None-Match": '"stale"'}).status_code == 200
    assert imported <= set(preloaded)  # nothing the modules import is left to a second round


def test_admin_dashboard_needs_a_sign_in(client, survey):
    assert client.get("/admin/").status_code == 303  # to the sign-in page
    assert sign_in(client, token="wrong").status_code == 401
    login = sign_in(client)
    assert login.status_code == 303
    cookie = login.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/admin" in cookie
    assert ADMIN not in cookie  # the cookie holds a session id, never the credential
    dashboard = client.get("/admin/")
    assert dashboard.status_code == 200 and "Taxes and daily life" in dashboard.data.decode()
    # the old link with the token in its address no longer signs anyone in
    other = client.application.test_client()
    assert other.get(f"/admin/login?token={ADMIN}").status_code == 200
    assert other.get("/admin/").status_code == 303


# ---------------------------------------------------------------- questionnaires

def test_every_catalogue_has_every_word_of_english():
    from deniable.client import catalogue

    for language in catalogue.SHIPPED:
        assert set(catalogue.shipped(language)) == set(catalogue.shipped("en")), language


def test_the_english_privacy_statement_is_the_clients():
    import math

    from deniable.client import catalogue, privacy_statement

    for epsilon in (0.5, 1.0, math.log(3), 2.0, 6.2, math.inf):
        assert catalogue.privacy_statement(epsilon, "en") == privacy_statement(epsilon)
    assert catalogue.privacy_statement(math.inf, "en", randomized=True) == catalogue.shipped("en")["one_sided_statement"]


SKIPPING = {"id": "skip", "title": "Skip", "questions": [
    {"id": "smoker", "type": "yes_no", "text": "Do you smoke?", "privacy": "none", "required": True},
    {"id": "daily", "type": "yes_no", "text": "Every day?", "privacy": "none", "relevant": "smoker = 'yes'",
     "required": True},
    {"id": "dodged", "type": "yes_no", "text": "Dodged taxes?", "required": "smoker = 'no'"}]}


def test_reports_for_hidden_questions_and_missing_conditional_answers_are_422(client, store):
    from deniable.client import Survey

    survey = Survey.from_dict(SKIPPING)
    store.add_survey(survey)

    def post(reports):
        return client.post("/api/v1/surveys/skip/responses",
                           json={"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(8), "reports": reports})

    hidden = post({"smoker": "no", "daily": "yes", "dodged": "no"})
    assert hidden.status_code == 422 and hidden.json["error"]["field"] == "reports.daily"
    assert "not shown for these answers (skip logic: smoker = 'yes')" in hidden.json["error"]["message"]
    missing = post({"smoker": "yes"})
    assert missing.status_code == 422 and missing.json["error"]["field"] == "reports.daily"
    conditional = post({"smoker": "no"})
    assert conditional.status_code == 422 and conditional.json["error"]["field"] == "reports.dodged"
    assert post({"smoker": "yes", "daily": "no"}).status_code == 201
    assert post({"smoker": "no", "dodged": "yes"}).status_code == 201


def test_the_no_javascript_form_applies_skip_logic_on_the_server(client, store):
    from deniable.client import Survey

    survey = Survey.from_dict(SKIPPING)
    store.add_survey(survey)
    page = client.get("/s/skip").data.decode()
    assert "Answer only if your answer to “Do you smoke?” is Yes." in page
    spanish = client.get("/s/skip", headers={"Accept-Language": "es"}).data.decode()
    assert 'lang="en"' in spanish  # a one-language survey is not pretended to be Spanish
    response = client.post("/s/skip/submit", data={"form_key": form_key(client, "skip"), "spec_hash": survey.hash, "idempotency_key": "k" * 16,
                                                    "smoker": "no", "daily": "yes", "dodged": "no"})
    assert response.status_code == 303
    [row] = list(store.export("skip"))
    assert row["reports"] == {"smoker": "no", "dodged": "no"}  # answered, but not asked of a non-smoker


def test_a_stale_or_bogus_spec_hash_on_the_form_is_a_page_not_a_500(client, survey):
    response = client.post("/s/tax/submit", data={"form_key": form_key(client, "tax"), "spec_hash": "bogus", "idempotency_key": "k" * 16})
    assert response.status_code == 422 and b"another version of the survey" in response.data


def test_the_demo_page_speaks_the_browsers_language(client, store):
    from deniable.server.demo import demo_survey

    store.add_survey(demo_survey())
    spanish = client.get("/s/tax", headers={"Accept-Language": "es-MX,es;q=0.9,en;q=0.5"}).data.decode()
    assert 'lang="es"' in spanish and "¿En qué región vive?" in spanish and "Aleatorizar mis respuestas" in spanish
    assert "Norte" in spanish and 'value="North"' in spanish  # labels translated, option names stable
    english = client.get("/s/tax?lang=en", headers={"Accept-Language": "es"}).data.decode()
    assert 'lang="en"' in english and "Which region do you live in?" in english
    assert client.get("/s/tax?lang=xx", headers={"Accept-Language": "fr"}).data.decode().count('lang="en"') >= 1


def test_the_dashboard_shows_option_labels_not_codes(client, store):
    from deniable.client import Survey
    from tests.server.conftest import sign_in

    survey = Survey.from_dict({"id": "codes", "title": "Codes", "questions": [
        {"id": "tenure", "type": "choice", "text": "How long?", "privacy": {"design": "k_rr", "epsilon": 2},
         "options": [{"value": "lt1", "label": "Less than a year"}, {"value": "gt1", "label": "A year or more"}]}]})
    store.add_survey(survey)
    for _ in range(30):
        store.submit("codes", survey.hash, __import__("secrets").token_hex(8), survey.randomize({"tenure": "lt1"}))
    sign_in(client)
    page = client.get("/admin/surveys/codes").get_data(as_text=True)
    assert "Less than a year:" in page and "A year or more:" in page and ">lt1:" not in page


def test_the_dashboard_plans_a_conditional_question_at_the_share_asked_so_far(client, store):
    """Of 50 respondents 20 worked, so `cash` (asked of those who did) is planned at 40% of the planned n."""
    from deniable.analysis import plan
    from tests.conftest import EXAMPLES

    survey = Survey.from_file(EXAMPLES / "questionnaire.yaml")
    store.add_survey(survey)
    for number in range(50):
        answers = {"region": "North", "worked": "yes" if number < 20 else "no", "dodged": "no", "fairness": "Agree"}
        if number < 20:
            answers.update(cash="Salary", undeclared=[], hours=0)
        store.submit(survey.id, survey.hash, secrets.token_hex(16), survey.randomize(answers))
    sign_in(client)
    page = client.get(f"/admin/surveys/{survey.id}?n=2000").get_data(as_text=True)
    expected = {p.question_id: p for p in plan(survey, 2000, asked={"cash": 0.4, "undeclared": 0.4, "hours": 0.4})}
    assert "cash: asked of 40%\n      (800 of 2,000: the share asked so far)" in page
    assert f"<td>{expected['cash'].se:.3f}</td>" in page and f"<td>{expected['cash'].n_for_margin:,}</td>" in page


@pytest.mark.slow
def test_a_wide_number_is_drawn_as_a_histogram_of_its_bins_with_its_mean_and_quartiles(client, store):
    """0–30 at ε = 1 and n = 60: a number of more than 24 values is published as its mean, quartiles and bins: the page
    draws the bins as a histogram (the mean and median marked), lists the quartiles and each bin's figures (the
    estimate's own), and links each value's rows as a CSV computed on request; a choice keeps its bars."""
    from deniable.analysis import load

    survey = Survey.from_dict({"id": "hours", "title": "Hours", "questions": [
        {"id": "h", "type": "number", "text": "Hours?", "min": 0, "max": 30, "privacy": {"design": "laplace", "epsilon": 1}},
        {"id": "c", "type": "choice", "text": "Which?", "options": ["a", "b"], "privacy": {"design": "k_rr", "epsilon": 3}}]})
    store.add_survey(survey)
    for number in range(60):
        store.submit("hours", survey.hash, secrets.token_hex(8), survey.randomize({"h": number % 8, "c": "a"}))
    sign_in(client)
    page = client.get("/admin/surveys/hours").get_data(as_text=True)
    result = load(db=store.url, survey_id="hours").estimate("h")
    assert list(result.table.index) == ["0–4", "5–9", "10–14", "15–19", "20–24", "25–30"]
    assert 'class="histogram"' in page and page.count('class="histogram"') == 1
    assert 'class="mean"' in page and 'class="median"' in page
    for label, row in result.table.iterrows():
        assert f"<td>{label}</td><td>{row['estimate']:.3f}</td>" in page
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
    median = result.quantiles.loc[0.5]
    assert f"Median: <strong>{median['estimate']:g}</strong>\n     [{median['ci_low']:g}, {median['ci_high']:g}]" in page
    assert 'id="binned-h"' not in page and 'id="binned-c"' not in page  # a choice keeps its bars
    link = re.search(r'href="([^"]+estimates\.csv\?values=1)"', page).group(1)
    per_value = client.get(link).get_data(as_text=True)
    assert sum(line.startswith("h,") for line in per_value.splitlines()) == 31
    plain = client.get(link.removesuffix("?values=1")).get_data(as_text=True)
    assert sum(line.startswith("h,") for line in plain.splitlines()) == 6
    assert "median,median_ci_low,median_ci_high" in plain.splitlines()[0]


def test_the_responses_per_day_chart_keeps_its_height_when_everything_came_on_one_day(client, survey, store):
    """One day alone was one bar 5,000 px tall on a wide screen (a viewBox 14 wide, scaled to the page's width): the
    chart is drawn at a fixed height and at least a month wide, whatever the days."""
    import re

    from tests.server.conftest import ANSWERS

    for i in range(30):
        store.submit("tax", survey.hash, f"key-{i:08d}", survey.randomize(ANSWERS))
    sign_in(client)
    page = client.get("/admin/surveys/tax").get_data(as_text=True)
    svg = re.search(r'<svg viewBox="0 0 (\d+) (\d+)" width="100%" height="(\d+)" class="days"', page)
    assert svg, "the chart names its height"
    width, height, drawn = map(int, svg.groups())
    assert drawn == height <= 100 and width >= 30 * 12


def test_the_no_javascript_form_keeps_its_arms_and_groups_and_takes_no_others(client, store):
    """The form's arms and groups derive from its key, which its cookie keeps: a reload shows the same ones, and a form
    sent back with an arm or a group its key did not draw is refused, nothing stored."""
    import re as _re

    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    store.add_survey(survey)

    def hidden(page: str) -> dict:
        return dict(_re.findall(r'<input type="hidden" name="([\w.-]+\.(?:arm|group))" value="(\w+)">', page))

    from deniable.server.respond import FORM_COOKIE, form_draws

    # a form key whose cheating-detection question is in its randomized arm (the direct arm has no group)
    key = next(k for k in (f"{i:022d}" for i in range(100)) if survey.arm_for("cheated", form_draws(k)) == "randomized")
    client.set_cookie(FORM_COOKIE, key, path="/s/validation")
    first = client.get("/s/validation").get_data(as_text=True)
    drawn = hidden(first)
    assert set(drawn) == {"dodged.arm", "took.arm", "cheated.arm", "cheated.group"}
    assert drawn["cheated.group"] == survey.group_for("cheated", form_draws(key))
    for _ in range(3):
        assert hidden(client.get("/s/validation").get_data(as_text=True)) == drawn
    assert _re.search(r'name="form_key" value="([^"]+)"', first).group(1) == key
    flipped = {**drawn, "dodged.arm": "randomized" if drawn["dodged.arm"] == "direct" else "direct"}
    answers = {"region": "North", "dodged": "yes", "took": "yes", "cheated": "no"}
    base = {"form_key": key, "spec_hash": survey.hash, "idempotency_key": "k" * 16, **answers}
    assert client.post("/s/validation/submit", data={**base, **flipped}).status_code == 422
    other_group = {**drawn, "cheated.group": "a" if drawn["cheated.group"] == "b" else "b"}
    assert client.post("/s/validation/submit", data={**base, **other_group}).status_code == 422
    assert store.response_count("validation") == 0


@pytest.mark.slow
def test_a_long_grid_s_page_is_its_histogram_and_each_value_is_a_csv_on_request(client, store, monkeypatch):
    """0..1000 at ε = 1 and n = 80: the page draws ten bins of 100 (a bar and a table row for each of 1,001 values
    made the page 619 KB), each value's figures one link away, computed when asked for."""
    survey = Survey.from_dict({"id": "income", "title": "Income", "questions": [
        {"id": "x", "type": "number", "text": "Income?", "min": 0, "max": 1000,
         "privacy": {"design": "laplace", "epsilon": 1}}]})
    store.add_survey(survey)
    for number in range(80):
        store.submit("income", survey.hash, secrets.token_hex(8), survey.randomize({"x": (number * 37) % 400}))
    sign_in(client)
    monkeypatch.setattr(dashboard, "ESTIMATE_SECONDS", 600.0)  # a cold 0..1000 estimate is past the page's own time
    monkeypatch.setattr(dashboard, "PAGE_SECONDS", 600.0)
    response = client.get("/admin/surveys/income")
    page = response.get_data(as_text=True)
    assert 'class="histogram"' in page and "<td>900–1000</td>" in page
    assert page.count("<rect") < 50 and len(response.data) < 100_000
    link = re.search(r'href="([^"]+estimates\.csv\?values=1)"', page).group(1)  # every value's figures
    csv = client.get(link).get_data(as_text=True)
    assert sum(line.startswith("x,") for line in csv.splitlines()) == 1001
