"""The questionnaire format: sections, notes, hints, languages, one hash over all of it."""

import copy

import pytest

from deniable.client import SpecError, Survey
from tests.conftest import EXAMPLES


@pytest.fixture
def spec():
    return Survey.from_file(EXAMPLES / "questionnaire.yaml").to_dict()


def test_a_spec_written_before_sections_and_languages_keeps_its_hash():
    # 310c948caa76 is the hash examples/tax.yaml had before this format grew: stored surveys and
    # the files they came from still name the same version.
    assert Survey.from_file(EXAMPLES / "tax.yaml").hash.startswith("310c948caa76")


def test_the_demo_questionnaire_round_trips_through_its_canonical_form(spec):
    survey = Survey.from_dict(spec)
    assert survey.to_dict() == spec
    assert [s.id for s in survey.sections] == ["you", "taxes", "work"]
    assert [i.id for i in survey.items] == ["region", "worked", "coin_note", "dodged", "fairness", "cash",
                                            "undeclared", "hours"]
    assert "coin_note" not in survey.questions  # a note is shown, never answered or reported
    assert survey.languages.codes == ["en", "es", "fr"] and survey.default_language == "en"


def test_every_text_has_its_language_and_falls_back_to_the_default(spec):
    spec["sections"][1]["questions"][2]["text"] = {"en": "The tax system is fair."}
    survey = Survey.from_dict(spec)
    fairness = survey.questions["fairness"]
    assert fairness.text_in("es") == "The tax system is fair."
    assert survey.questions["dodged"].text_in("es") == "¿Alguna vez ha evadido sus impuestos?"
    assert survey.questions["region"].option_label("North", "es") == "Norte"
    assert survey.questions["region"].option_label("North") == "North"
    assert survey.questions["hours"].constraint_message_in("es").startswith("Escriba")
    assert survey.sections[2].title_in("es") == "Su trabajo"
    assert survey.title_in("xx") == "Taxes and daily life"
    assert survey.warnings == [f"1 text(s) have no {code!r} translation and fall back to 'en': question 'fairness'.text"
                               for code in ("es", "fr")]


def test_the_hash_covers_every_language_but_not_the_spelling_of_an_expression(spec):
    base = Survey.from_dict(spec).hash
    spanish = copy.deepcopy(spec)
    spanish["sections"][0]["title"]["es"] = "Acerca de usted"
    assert Survey.from_dict(spanish).hash != base
    spaced = copy.deepcopy(spec)
    spaced["sections"][2]["relevant"] = "(worked='yes')"
    assert Survey.from_dict(spaced).hash == base


def test_options_keep_stable_names_under_their_labels(spec):
    survey = Survey.from_dict(spec)
    assert survey.questions["region"].options == ["North", "South", "East", "West"]
    assert survey.questions["region"].mechanism.answers == ["North", "South", "East", "West"]


@pytest.mark.parametrize("change,message", [
    (lambda s: s.update(languages=["en", "en"]), r"survey\.languages: a language appears more than once"),
    (lambda s: s.update(languages=["english"]), r"survey\.languages\[0\]: must be a language code"),
    (lambda s: s.update(default_language="de"), r"survey\.default_language: 'de' is not one of the languages \(en, es, fr\)"),
    (lambda s: s.update(layout="cards"), r"survey\.layout: must be one of auto, paged, single"),
    (lambda s: s["sections"][0].update(intro={"de": "x"}), r"section 'you'\.intro: language 'de'"),
    (lambda s: s["sections"][0].update(questions=[]), r"section 'you'\.questions: must be a non-empty list"),
    (lambda s: s["sections"][1].update(id="you"), r"section 'you'\.id: duplicate id"),
    (lambda s: s["sections"][0]["questions"][0]["options"][0].update(colour="red"), r"options\[0\]: unknown field 'colour'"),
    (lambda s: s["sections"][1]["questions"][0].update(privacy="none"), r"question 'coin_note': unknown field 'privacy'"),
    (lambda s: s["sections"][1]["questions"][0].update(id="dodged"), r"question 'dodged'\.id: duplicate id"),
    (lambda s: s["sections"][2].update(relevant="worked = 'maybe'"), r"'maybe' is not an answer of 'worked'"),
    (lambda s: s["sections"][2].update(relevant="dodged = 'yes'"), r"section 'work'\.relevant: refers to 'dodged', a private"),
])
def test_every_questionnaire_mistake_names_its_place(spec, change, message):
    change(spec)
    with pytest.raises(SpecError, match=message):
        Survey.from_dict(spec)


def test_a_recursive_or_binary_file_is_a_spec_error_not_a_traceback(tmp_path):
    looped = tmp_path / "loop.yaml"
    looped.write_text("a: &a [*a]\n")
    with pytest.raises(SpecError, match="refers to itself"):
        Survey.from_file(looped)
    binary = tmp_path / "form.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(SpecError, match="not a text file"):
        Survey.from_file(binary)
