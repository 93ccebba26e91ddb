"""The invitation and reminder e-mails' texts (`client.invitations`): the spec's, per language, checked for the links
they must carry; else the words deniable ships, in every language it has; an XLSForm carries them to the same hash."""

import json

import pytest

from deniable.client import SpecError, Survey, catalogue
from deniable.client.invitations import message
from deniable.client.promises import email_promise, page_intro
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
    french = catalogue.shipped("fr")
    assert reminder == french["remind_body"].format(title=survey.title_in("fr"), link="L", opt_out="O",
                                                    privacy=email_promise(survey, survey.words("fr")))
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash


@pytest.mark.parametrize("code", catalogue.SHIPPED)
def test_every_shipped_language_has_the_e_mails_with_both_links(code):
    words = catalogue.shipped(code)
    for key in ("invite_body", "remind_body"):
        assert "{link}" in words[key] and "{opt_out}" in words[key] and "{title}" in words[key]
        assert "{privacy}" in words[key]
    for key in ("privacy_all", "privacy_some"):
        assert "{where}" in words[key]
    assert "{private}" in words["privacy_some"] and "{total}" in words["privacy_some"]
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


def _with(privacy_of: dict) -> Survey:
    """The tax demo with each question's privacy replaced where ``privacy_of`` names it."""
    tax = json.loads(Survey.from_file(EXAMPLES / "tax.yaml").canonical_json())
    for question in tax["questions"]:
        if question["id"] in privacy_of:
            question["privacy"] = privacy_of[question["id"]]
    return Survey.from_dict(tax)


@pytest.mark.parametrize("code", catalogue.SHIPPED)
def test_the_e_mails_and_the_page_promise_what_the_spec_does(code):
    """All randomized, some (the others asked directly, said), none; on the device, by the respondent, or both."""
    tax = Survey.from_file(EXAMPLES / "tax.yaml")  # region is asked directly: 5 of its 6 questions are randomized
    words = catalogue.messages(code)
    some = email_promise(tax, words)
    assert some == words["privacy_some"].format(where=words["where_device"], private=5, total=6)
    _, body = message(tax, "invite", code, "L", "O")
    assert some in body and words["privacy_all"].format(where=words["where_device"]) not in body
    assert page_intro(tax, words) == words["intro_some"]
    direct = _with({qid: "none" for qid in tax.questions})
    assert email_promise(direct, words) == words["privacy_none"] and page_intro(direct, words) == words["intro_none"]
    private = _with({"region": {"design": "k_rr", "epsilon": 1}})
    assert email_promise(private, words) == words["privacy_all"].format(where=words["where_device"])
    assert page_intro(private, words) == words["intro"]
    coin = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4",
            "randomizer": {"text": "Think of a friend's birthday."}}
    both = _with({"region": {"design": "k_rr", "epsilon": 1}, "dodged": coin})
    assert email_promise(both, words) == words["privacy_all"].format(where=words["where_both"])


def test_a_spec_s_own_e_mail_words_may_leave_the_promise_out():
    spec = {**SPEC, "page_words": {"en": {"invite_body": "Hello {title}: {link} / {opt_out}"}}}
    survey = Survey.from_dict(spec)
    assert message(survey, "invite", "en", "L", "O")[1] == f"Hello {survey.title_in('en')}: L / O"
    with pytest.raises(SpecError, match="must fill in exactly"):
        Survey.from_dict({**SPEC, "page_words": {"en": {"invite_body": "Hello {title}: {link}"}}})
