"""A panel's completion (`completion: {code, url}`): the code and link checked on both twins to the same errors
(tests/vectors/completion.json, written here and read by the JS twin's test); kept in the spec as given."""

import json

import pytest

from deniable.client import SpecError, Survey
from deniable.client.completion import Completion
from tests.conftest import EXAMPLES, ROOT

CASES_FILE = ROOT / "tests/vectors/completion.json"
CASES = [
    {"code": "C1A2B3", "url": "https://app.prolific.com/submissions/complete?cc={code}"}, {"code": "X_9-z"},
    {"url": "https://panel.example/done"}, {}, "C1A2B3", {"code": "has space"}, {"code": "x" * 65},
    {"code": 123}, {"url": "http://panel.example/done"}, {"url": "https://panel.example/a b"},
    {"url": "https://panel.example/?cc={code}"}, {"code": "A", "redirect": "https://x.example"},
    {"url": "javascript:alert(1)"}, {"code": "A", "url": "https://x.example/\"onclick"},
]


def _case(spec) -> dict:
    try:
        found = Completion.read(spec)
        return {"spec": spec, "code": found.code, "link": found.link, "error": None}
    except SpecError as error:
        return {"spec": spec, "code": None, "link": None, "error": str(error)}


def test_the_shared_cases_are_what_python_reads():
    assert json.loads(CASES_FILE.read_text(encoding="utf-8")) == [_case(spec) for spec in CASES]


def test_the_code_goes_into_the_link_and_the_spec_keeps_what_was_given():
    spec = json.loads(Survey.from_file(EXAMPLES / "tax.yaml").canonical_json())
    survey = Survey.from_dict({**spec, "completion": {"code": "C1A2B3", "url": "https://p.example/c?cc={code}"}})
    assert survey.completion.link == "https://p.example/c?cc=C1A2B3"
    assert survey.to_dict()["completion"] == {"code": "C1A2B3", "url": "https://p.example/c?cc={code}"}
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash != Survey.from_dict(spec).hash


def test_the_window_the_completion_and_the_consent_go_through_an_xlsform_to_the_same_hash(tmp_path):
    from deniable.client.xlsform import read_xlsform
    from deniable.client.xlsform_writer import write_xlsform

    spec = json.loads(Survey.from_file(EXAMPLES / "tax.yaml").canonical_json())
    survey = Survey.from_dict({**spec, "opens": "2026-12-01T09:00+01:00", "closes": "2026-12-31T08:00Z",
                               "completion": {"code": "AB1", "url": "https://x.example/?c={code}"}, "consent": "Agree?"})
    write_xlsform(survey, tmp_path / "form.xlsx")
    assert Survey.from_dict(read_xlsform(tmp_path / "form.xlsx")).hash == survey.hash
    spec = json.loads(Survey.from_file(EXAMPLES / "questionnaire.yaml").canonical_json())
    languages = Survey.from_dict({**spec, "consent": {"en": "Agree?", "es": "¿De acuerdo?", "fr": "D'accord ?"}})
    write_xlsform(languages, tmp_path / "languages.xlsx")
    assert Survey.from_dict(read_xlsform(tmp_path / "languages.xlsx")).hash == languages.hash


@pytest.mark.parametrize("completion, field", [({"url": "http://x.example"}, "survey.completion.url"),
                                               ({"code": "a b"}, "survey.completion.code")])
def test_a_bad_completion_names_its_field(completion, field):
    spec = {"id": "s", "title": "t", "questions": [{"id": "q", "type": "yes_no", "text": "?"}], "completion": completion}
    with pytest.raises(SpecError, match=field):
        Survey.from_dict(spec)


if __name__ == "__main__":  # python -m tests.client.test_completion: rewrite the shared cases
    CASES_FILE.write_text(json.dumps([_case(spec) for spec in CASES], indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
