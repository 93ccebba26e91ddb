"""A study in any language on the server side: the page in the survey's language (statements, buttons, labels), page
words a survey overrides, a language without a statement refused by the API and `survey check`, XLSForm labels and
a ui sheet through import and export."""

import json

from openpyxl import Workbook

from deniable.client import Survey, catalogue
from deniable.client.xlsform import read_xlsform, write_xlsform
from deniable.server.cli import main
from tests.server.conftest import sign_in
from tests.server.test_admin_security import _csrf

COIN = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}
WORKPLACE = {
    "id": "workplace", "title": {"en": "Workplace", "fr": "Au travail"}, "languages": ["en", "fr"],
    "page_words": {"fr": {"send": "Brouiller et envoyer"}},
    "questions": [
        {"id": "cash", "type": "yes_no", "required": True, "privacy": COIN,
         "text": {"en": "Have you taken cash from the till?", "fr": "Avez-vous pris de l'argent dans la caisse ?"},
         "options": [{"value": "yes", "label": {"en": "Yes, at least once", "fr": "Oui, au moins une fois"}},
                     {"value": "no", "label": {"en": "Never", "fr": "Jamais"}}]},
        {"id": "late", "type": "yes_no", "privacy": COIN,
         "text": {"en": "Have you come in late?", "fr": "Êtes-vous arrivé en retard ?"}},
    ]}


def test_the_page_speaks_french_with_the_surveys_own_words(client, store):
    survey = Survey.from_dict(WORKPLACE)
    store.add_survey(survey)
    page = client.get("/s/workplace?lang=fr").data.decode()
    french = catalogue.shipped("fr")
    assert '<html lang="fr" dir="ltr">' in page
    assert "Brouiller et envoyer" in page and catalogue.shipped("en")["send"] not in page  # the override
    assert french["intro"].replace("'", "&#39;") in page and french["required"] in page
    assert "Oui, au moins une fois" in page and "Jamais" in page  # the question's own labels
    assert f"> {french['yes']}</label>" in page  # the other question: the catalogue's Oui/Non
    statement = survey.questions["late"].privacy_statement(words=survey.words("fr"))
    assert "ε = 1,1" in statement and statement.replace("'", "&#39;") in page
    data = json.loads(page.split('<script type="application/json" id="survey-data">')[1].split("</script>")[0])
    assert data["messages"]["send"] == "Brouiller et envoyer" and data["lang"] == "fr"
    english = client.get("/s/workplace?lang=en").data.decode()
    assert catalogue.shipped("en")["send"] in english and "Yes, at least once" in english


def test_the_privacy_api_gives_each_languages_statement(client, store):
    survey = Survey.from_dict(WORKPLACE)
    store.add_survey(survey)
    facts = client.get("/api/v1/surveys/workplace").get_json()["privacy"]
    statements = facts["questions"]["late"]["statements"]
    assert set(statements) == {"en", "fr"} and statements["en"] == facts["questions"]["late"]["statement"]
    assert statements["fr"] == survey.questions["late"].privacy_statement(words=survey.words("fr"))


def test_a_language_without_its_privacy_statement_is_refused_everywhere_it_would_be_fielded(client, admin_headers, runner,
                                                                                           tmp_path, store):
    italian = {**WORKPLACE, "id": "italian", "languages": ["en", "it"], "title": {"en": "Work", "it": "Lavoro"},
               "page_words": {"it": {"send": "Invia"}},
               "questions": [{"id": "q", "type": "yes_no", "privacy": COIN, "text": {"en": "Cash?", "it": "Denaro?"}}]}
    refused = client.post("/api/v1/surveys", json=italian, headers=admin_headers)
    error = refused.get_json()["error"]
    assert refused.status_code == 422 and error["field"] == "page_words" and "private_statement" in error["message"]
    assert store.list_surveys() == []  # nothing written
    sign_in(client)
    page = client.get("/admin/").get_data(as_text=True)
    pasted = client.post("/admin/surveys", data={"spec": json.dumps(italian), "csrf": _csrf(page)})
    assert pasted.status_code == 422 and "deniable ships no &#39;it&#39; page words" in pasted.get_data(as_text=True)
    assert store.list_surveys() == []
    spec = tmp_path / "italian.json"
    spec.write_text(json.dumps(italian))
    checked = runner.invoke(main, ["survey", "check", str(spec), "--no-plan"])
    assert checked.exit_code == 1 and "deniable ships no 'it' page words" in checked.output
    assert "Traceback" not in checked.output
    italian["page_words"]["it"].update(private_statement="Risposta resa casuale: fattore {factor} al massimo (ε = {epsilon}); "
                                                         "da {prior} sicuri al massimo {posterior}.",
                                       decimal_mark=",", percent="{value}%")
    spec.write_text(json.dumps(italian))
    checked = runner.invoke(main, ["survey", "check", str(spec), "--no-plan"])
    assert checked.exit_code == 0, checked.output
    assert "page word(s) in 'it' fall back to English" in checked.output and "coin_intro" in checked.output
    assert client.post("/api/v1/surveys", json=italian, headers=admin_headers).status_code == 201


def test_survey_words_prints_a_block_to_paste(runner):
    french = runner.invoke(main, ["survey", "words", "fr"])
    assert french.exit_code == 0 and f"    send: {json.dumps(catalogue.shipped('fr')['send'], ensure_ascii=False)}" in french.output
    italian = runner.invoke(main, ["survey", "words", "it"])
    assert italian.exit_code == 0 and "  it:\n" in italian.output and italian.output.count("  # English") == len(catalogue.shipped("en"))
    bad = runner.invoke(main, ["survey", "words", "../etc"])
    assert bad.exit_code == 2 and "not a language code" in bad.output


def _form(path, yes_label, no_label, ui=None):
    book = Workbook()
    survey = book.active
    survey.title = "survey"
    survey.append(["type", "name", "label::English (en)", "label::Français (fr)", "privacy::design", "privacy::truth",
                   "privacy::yes", "privacy::no"])
    survey.append(["select_one yn", "cash", "Cash?", "Argent ?", "forced_response", "1/2", "1/4", "1/4"])
    choices = book.create_sheet("choices")
    choices.append(["list_name", "name", "label::English (en)", "label::Français (fr)"])
    choices.append(["yn", "yes", *yes_label])
    choices.append(["yn", "no", *no_label])
    if ui:
        sheet = book.create_sheet("ui")
        sheet.append(["name", "label::Français (fr)"])
        for row in ui:
            sheet.append(row)
    settings = book.create_sheet("settings")
    settings.append(["form_id", "form_title::en", "form_title::fr", "default_language"])
    settings.append(["xls", "Work", "Travail", "en"])
    book.save(path)
    return path


def test_xlsform_yes_no_labels_and_ui_sheet_survive_import_and_export(tmp_path):
    # A list saying the page's own Yes/No (Oui/Non): nothing to keep, the page says them.
    plain = read_xlsform(_form(tmp_path / "plain.xlsx", ("Yes", "Oui"), ("No", "Non")))
    assert "options" not in plain["questions"][0]
    # Labels of its own: kept, shown, written back.
    own = read_xlsform(_form(tmp_path / "own.xlsx", ("Yes, once", "Oui, déjà"), ("Never", "Jamais"),
                             ui=[("send", "Brouiller et envoyer"), ("finish", "C'est fini")]))
    assert own["questions"][0]["options"] == [{"value": "yes", "label": {"en": "Yes, once", "fr": "Oui, déjà"}},
                                              {"value": "no", "label": {"en": "Never", "fr": "Jamais"}}]
    assert own["page_words"] == {"fr": {"send": "Brouiller et envoyer", "finish": "C'est fini"}}
    survey = Survey.from_dict(own)
    assert survey.questions["cash"].option_label("yes", "fr") == "Oui, déjà"
    for original in (survey, Survey.from_dict(plain), Survey.from_dict(WORKPLACE)):
        written = tmp_path / f"{original.id}-out.xlsx"
        write_xlsform(original, written)
        assert Survey.from_dict(read_xlsform(written)).hash == original.hash


def test_labelled_files_use_a_yes_no_questions_own_labels(runner, db_path, store, tmp_path):
    import pyreadstat

    survey = Survey.from_dict(WORKPLACE)
    store.add_survey(survey)
    store.submit("workplace", survey.hash, "key-0001-labels", survey.randomize({"cash": "no", "late": "yes"}))
    target = tmp_path / "workplace.sav"
    assert runner.invoke(main, ["export", "workplace", "--db", db_path, "--format", "sav", "--output", str(target)]).exit_code == 0
    _, meta = pyreadstat.read_sav(str(target))
    assert meta.variable_value_labels["cash"] == {1.0: "Yes, at least once", 0.0: "Never"}  # the default language's
    assert meta.variable_value_labels["late"] == {1.0: "yes", 0.0: "no"}


def test_the_js_clients_word_modules_are_served_for_shipped_languages_only(client):
    french = client.get("/js/src/words/fr.js")
    assert french.status_code == 200 and french.mimetype == "text/javascript" and "Langue" in french.get_data(as_text=True)
    for path in ("/js/src/words/xx.js", "/js/src/words/..%2Fsurvey.js", "/js/src/words/fr.json"):
        assert client.get(path).status_code == 404, path
