"""Page words in every shipped language, a survey's own page_words, and privacy statements that say the same
figures in every language."""

import math
import re
from fractions import Fraction

import pytest

from deniable.client import SpecError, Survey, catalogue
from deniable.client.privacy import posterior_bound

NON_ENGLISH = [code for code in catalogue.SHIPPED if code != "en"]


@pytest.mark.parametrize("language", catalogue.SHIPPED)
def test_every_shipped_table_has_every_word_of_english_with_its_placeholders(language):
    english, table = catalogue.shipped("en"), catalogue.shipped(language)
    assert list(table) == list(english)  # the same words, in the same order (a diff between files reads well)
    for key, text in table.items():
        assert isinstance(text, str) and text.strip(), (language, key)
        assert catalogue.placeholders(text) == catalogue.placeholders(english[key]), (language, key)
    if language != "en":  # translated, not copied: at most a handful of words may coincide (No, Neutral, ε…)
        same = [key for key in english if table[key] == english[key] and len(english[key]) > 12]
        assert not same, (language, same)


def _designs():
    """One question per kind of statement: coin, k-RR, ordinal at two ε, a respondent-side design, a one-sided
    design, a public question, a split ballot and a panel."""
    return Survey.from_dict({"id": "many", "title": "Many", "repeated": {"instant_epsilon": 3}, "questions": [
        {"id": "coin", "type": "yes_no", "text": "A?", "privacy": {"design": "forced_response", "truth": "1/2",
                                                                    "yes": "1/4", "no": "1/4"}},
        {"id": "krr", "type": "choice", "text": "B?", "options": ["a", "b", "c"], "privacy": {"design": "k_rr", "epsilon": 2}},
        {"id": "ordinal", "type": "ordinal", "text": "C?", "options": ["1", "2", "3", "4"],
         "privacy": {"design": "ordinal", "epsilon": 0.5}},
        {"id": "split", "type": "yes_no", "text": "D?", "split_ballot": {"direct": "1/8"},
         "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}},
        {"id": "public", "type": "yes_no", "text": "E?", "privacy": "none"},
    ]}), Survey.from_dict({"id": "respondent", "title": "R", "questions": [
        {"id": "cross", "type": "yes_no", "text": "F?", "privacy": {"design": "crosswise", "companion": "Born in May?",
                                                                     "p": "1/4"}},
        {"id": "triangle", "type": "yes_no", "text": "G?", "privacy": {"design": "triangular", "companion": "Born in May?",
                                                                        "p": "1/4"}},
        {"id": "garbled", "type": "yes_no", "text": "H?", "privacy": {"design": "forced_response", "truth": "3/4",
                                                                       "yes": "1/4", "no": "0"}},
    ]})


def _figures(text: str, mark: str) -> list[str]:
    """Every number a statement states, in its order (a decimal mark inside a number, not after it)."""
    return re.findall(rf"\d+(?:{re.escape(mark)}\d+)?", text)


def _expected(question, words) -> list[str]:
    """The figures a question's statement must state, worked out here from ε alone."""
    mark = words["decimal_mark"]

    def g3(x):
        return f"{x:.3g}".replace(".", mark)

    figures = []
    if not math.isinf(question.epsilon):
        posterior = 0.02 * math.exp(question.epsilon) / (0.02 * math.exp(question.epsilon) + 0.98)
        figures += [g3(math.exp(question.epsilon)), g3(question.epsilon), "2", f"{posterior * 100:.1f}".replace(".", mark)]
    if question.split_ballot is not None:
        figures.append(g3(float(question.split_ballot.direct) * 100))
    if question.permanent is not question.mechanism:
        figures += [g3(math.exp(question.epsilon_all_waves)), g3(question.epsilon_all_waves)]
        figures += [figures[-2]]  # "…can be up to {factor} again"
    return figures


@pytest.mark.parametrize("language", catalogue.SHIPPED)
def test_each_languages_statement_states_exactly_the_figures_of_the_design(language):
    words = catalogue.messages(language)
    english = catalogue.messages("en")
    for survey in _designs():
        for question in survey.questions.values():
            statement = question.privacy_statement(words=words)
            assert _figures(statement, words["decimal_mark"]) == _expected(question, words), (language, question.id)
            if language != "en":
                assert statement != question.privacy_statement(words=english), (language, question.id)


def test_the_posterior_in_every_language_is_the_bound():
    for language in catalogue.SHIPPED:
        words = catalogue.messages(language)
        for epsilon in (0.1, 0.5, math.log(3), 2.0, 4.5):
            statement = catalogue.privacy_statement(epsilon, words)
            posterior = f"{posterior_bound(0.02, epsilon) * 100:.1f}".replace(".", words["decimal_mark"])
            assert words["percent"].format(value=posterior) in statement, (language, epsilon)
            assert f"{epsilon:.3g}".replace(".", words["decimal_mark"]) in statement


def test_a_regional_code_gets_its_languages_words_and_english_fills_nothing_in_a_shipped_language():
    assert catalogue.messages("pt-BR")["send"] == catalogue.shipped("pt")["send"]
    assert catalogue.fallbacks("fr") == [] and catalogue.fallbacks("pt-BR") == []
    assert catalogue.fallbacks("it") == list(catalogue.shipped("en"))


FRENCH = {"id": "fr", "title": {"fr": "Travail", "en": "Work"}, "languages": ["fr", "en"], "questions": [
    {"id": "cash", "type": "yes_no", "text": {"fr": "Avez-vous pris de l'argent ?", "en": "Did you take cash?"},
     "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]}


def test_page_words_override_and_enter_the_hash():
    plain = Survey.from_dict(FRENCH)
    custom = Survey.from_dict({**FRENCH, "page_words": {"fr": {"send": "Envoyer mes réponses brouillées"}}})
    assert plain.words("fr")["send"] == catalogue.shipped("fr")["send"]
    assert custom.words("fr")["send"] == "Envoyer mes réponses brouillées"
    assert custom.words("en")["send"] == catalogue.shipped("en")["send"]
    assert custom.hash != plain.hash and Survey.from_dict(custom.to_dict()).hash == custom.hash
    assert "page_words" not in plain.to_dict()  # a spec without them keeps its hash


@pytest.mark.parametrize("page_words, message", [
    ("Envoyer", r"survey\.page_words: a mapping of language"),
    ({"de": {"send": "Senden"}}, r"survey\.page_words\.de: not one of the survey's languages \(fr, en\)"),
    ({"fr": {"sned": "Envoyer"}}, r"survey\.page_words\.fr\.sned: not a page word \(did you mean 'send'\?\)"),
    ({"fr": {"send": ""}}, r"survey\.page_words\.fr\.send: must be a non-empty string"),
    ({"fr": {"progress": "Partie {index}"}}, r"progress: must fill in exactly \{index\}, \{total\}, as English does"),
    ({"fr": {"private_statement": "Protégé (ε = {epsilon}, {factor.__class__})"}}, r"a placeholder is a name alone"),
    # a format spec made every thank-you page a 500 ({title:d}) or each page 120 MB ({value:>30000000})
    ({"fr": {"progress": "Partie {index:d} sur {total}"}}, r"progress: \{index:d\}: a placeholder is a name alone"),
    ({"fr": {"progress": "Partie {index:>30000000} sur {total}"}}, r"a placeholder is a name alone"),
    ({"fr": {"progress": "Partie {index!r} sur {total}"}}, r"\{index!r\}: a placeholder is a name alone"),
    ({"fr": {"progress": "Partie {index[0]} sur {total}"}}, r"a placeholder is a name alone"),
    ({"fr": {"send": "Envoyer {"}}, r"survey\.page_words\.fr\.send: .*brace"),
    ({"fr": []}, r"survey\.page_words\.fr: a mapping of page word to text"),
])
def test_bad_page_words_are_refused_naming_the_field(page_words, message):
    with pytest.raises(SpecError, match=message):
        Survey.from_dict({**FRENCH, "page_words": page_words})


def test_a_language_without_a_privacy_statement_is_refused_and_every_fallback_is_listed():
    italian = {**FRENCH, "languages": ["fr", "it"], "title": {"fr": "Travail", "it": "Lavoro"},
               "questions": [{**FRENCH["questions"][0], "text": {"fr": "Argent ?", "it": "Denaro?"}}]}
    survey = Survey.from_dict(italian)  # a stored survey still loads ...
    with pytest.raises(SpecError, match=r"survey\.page_words\.it: deniable ships no 'it' page words, and the privacy "
                                        r"statements of this survey need private_statement, decimal_mark, percent"):
        survey.check_fieldable()  # ... but is refused where it would be fielded
    needed = survey.statement_words()
    assert needed == {"private_statement", "decimal_mark", "percent"}
    statement = {"private_statement": "La sua risposta è resa casuale sul suo dispositivo: fattore al massimo {factor} "
                                      "(ε = {epsilon}); chi era sicuro al {prior} lo sarebbe al massimo al {posterior}.",
                 "decimal_mark": ",", "percent": "{value}%"}
    fielded = Survey.from_dict({**italian, "page_words": {"it": statement}})
    fielded.check_fieldable()
    assert fielded.questions["cash"].privacy_statement(words=fielded.words("it")).startswith("La sua risposta")
    assert "fattore al massimo 3 (ε = 1,1)" in fielded.questions["cash"].privacy_statement(words=fielded.words("it"))
    [warning] = [w for w in fielded.warnings if "page word" in w]
    english = [key for key in catalogue.shipped("en") if key not in statement]
    assert warning.startswith(f"{len(english)} page word(s) in 'it' fall back to English")
    assert warning.endswith(", ".join(english))  # every one, not the first few


def test_a_survey_of_one_unnamed_language_is_english_and_can_override_english_words():
    survey = Survey.from_dict({"id": "one", "title": "One", "page_words": {"en": {"send": "Send my answers"}},
                               "questions": [{"id": "q", "type": "yes_no", "text": "Q?", "privacy": "none"}]})
    assert survey.page_languages == ["en"] and survey.words("en")["send"] == "Send my answers"
    survey.check_fieldable()


def test_yes_no_questions_keep_their_own_labels():
    spec = {**FRENCH, "questions": [{**FRENCH["questions"][0], "options": [
        {"value": "yes", "label": {"fr": "Oui, déjà", "en": "Yes, once"}},
        {"value": "no", "label": {"fr": "Jamais", "en": "Never"}}]}]}
    survey = Survey.from_dict(spec)
    question = survey.questions["cash"]
    assert question.option_label("yes", "fr") == "Oui, déjà" and question.option_label("no", "en") == "Never"
    assert question.options is None  # still a yes/no question: reports yes and no
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash
    plain = Survey.from_dict(FRENCH).questions["cash"]
    assert plain.option_label("yes", "fr") == "Oui" and plain.option_label("no", "de") == "Nein"
    with pytest.raises(SpecError, match=r"options\[0\]\.value: must be 'yes' \(yes first\)"):
        Survey.from_dict({**FRENCH, "questions": [{**FRENCH["questions"][0], "options": [
            {"value": "no", "label": {"fr": "Non"}}, {"value": "yes", "label": {"fr": "Oui"}}]}]})


def test_split_ballot_share_is_said_in_each_language():
    for language, expected in (("en", "12.5%"), ("fr", "12,5\u202f%"), ("de", "12,5\u00a0%"), ("pt", "12,5%")):
        assert catalogue.split_ballot_statement(Fraction(1, 8), language).startswith(expected), language


def test_the_js_clients_word_modules_are_the_shipped_tables():
    """client/js/src/words/<code>.js are written from the JSON tables (python scripts/words_js.py): never edited apart."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("words_js", root / "scripts" / "words_js.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for code in catalogue.SHIPPED:
        written = (root / "src" / "deniable" / "client" / "js" / "src" / "words" / f"{code}.js").read_text(encoding="utf-8")
        assert written == module.render(code), f"{code}.js is stale: run python scripts/words_js.py"
