"""The invitation and reminder e-mails' texts (`client.invitations`): the spec's, per language, checked for the links
they must carry; else the words deniable ships, in every language it has; an XLSForm carries them to the same hash."""

import json

import pytest

from deniable.client import SpecError, Survey, catalogue
from deniable.client.invitations import message
from tests.conftest import EXAMPLES

SPEC = json.loads(Survey.from_file(EXAMPLES / "questionnaire.yaml").canonical_json())
BODY = "Hello. Answer here: {link}\nNo more e-mails: {opt_out}"


def test_the_spec_s_texts_per_language_with_the_links_put_in_once():
    survey = Survey.from_dict({**SPEC, "invitations": {"subject": {"en": "About {title}", "es": "Sobre {title}"},
                                                       "body": {"en": BODY, "es": "Hola: {link} / {opt_out}"}}})
    subject, body = message(survey, "invite", "es", "https://x.example/s/tax?t=A{link}", "https://x.example/o")
    assert subject == "Sobre " + survey.title_in("es") and body == "Hola: https://x.example/s/tax?t=A{link} / https://x.example/o"
    subject, _ = message(survey, "invite", "fr", "L", "O")  # no French text: the default language's
    assert subject == "About " + survey.title_in("fr")
    _, reminder = message(survey, "remind", "fr", "L", "O")  # no reminder text given: the shipped French words
    assert reminder == catalogue.shipped("fr")["remind_body"].format(title=survey.title_in("fr"), link="L", opt_out="O")
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash


@pytest.mark.parametrize("code", catalogue.SHIPPED)
def test_every_shipped_language_has_the_e_mails_with_both_links(code):
    words = catalogue.shipped(code)
    for key in ("invite_body", "remind_body"):
        assert "{link}" in words[key] and "{opt_out}" in words[key] and "{title}" in words[key]
    assert "{title}" in words["invite_subject"] and "\n" not in words["invite_subject"]


@pytest.mark.parametrize("invitations, error", [
    ({"body": "Answer: {link}"}, r"invitations\.body: must name \{opt_out\}"),
    ({"body": "{opt_out}"}, r"invitations\.body: must name \{link\}"),
    ({"body": BODY + " {name}"}, r"invitations\.body: \{name\} is not a placeholder"),
    ({"subject": "Hi {link}"}, r"invitations\.subject: \{link\} is not a placeholder"),
    ({"subject": "Two\nlines"}, r"invitations\.subject: a subject is one line"),
    ({"body": {"en": BODY, "es": "sin enlace"}}, r"invitations\.body\.es: must name \{link\}"),
    ({"greeting": "Hi"}, r"invitations: unknown field 'greeting'"), ("Hi", r"survey\.invitations: a mapping"),
])
def test_a_text_without_its_links_is_refused_naming_the_field(invitations, error):
    with pytest.raises(SpecError, match=error):
        Survey.from_dict({**SPEC, "invitations": invitations})


def test_the_texts_go_through_an_xlsform_to_the_same_hash(tmp_path):
    from deniable.client.xlsform import read_xlsform
    from deniable.client.xlsform_writer import write_xlsform

    survey = Survey.from_dict({**SPEC, "invitations": {"body": {"en": BODY, "fr": "Bonjour {link} {opt_out}"}}})
    write_xlsform(survey, tmp_path / "form.xlsx")
    assert Survey.from_dict(read_xlsform(tmp_path / "form.xlsx")).hash == survey.hash
