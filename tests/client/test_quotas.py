"""A spec's quotas (`client.quotas`): only public answers from a list can be counted; every mistake names its field; the
spec keeps them as given and an XLSForm carries them to the same hash."""

import json

import pytest

from deniable.client import SpecError, Survey
from tests.conftest import EXAMPLES

SPEC = json.loads(Survey.from_file(EXAMPLES / "tax.yaml").canonical_json())
SPEC["questions"] += [{"id": "member", "type": "yes_no", "text": "Member?", "privacy": "none"},
                      {"id": "age", "type": "number", "text": "Age?", "min": 18, "max": 99, "privacy": "none"},
                      {"id": "papers", "type": "multi_select", "text": "Read?", "options": ["A", "B"], "privacy": "none"}]


def with_quotas(quotas) -> Survey:
    return Survey.from_dict({**SPEC, "quotas": quotas})


def test_cells_and_limits():
    survey = with_quotas([{"question": "region", "limit": 5, "limits": {"North": 2, "West": 0}},
                          {"questions": ["region", "member"], "limit": 1}, {"question": "member", "limits": {"yes": 3}}])
    by_region, crossed, members = survey.quotas
    assert [by_region.limit_of((value,)) for value in ("North", "South", "West")] == [2, 5, 0]
    assert crossed.cell({"region": "North", "member": "no"}) == ("North", "no")
    assert crossed.cell({"region": "North"}) is None  # a question left out: in no cell
    assert members.limit_of(("yes",)) == 3 and members.limit_of(("no",)) is None
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash != Survey.from_dict(SPEC).hash


@pytest.mark.parametrize("quotas, message", [
    ([{"question": "dodged", "limit": 1}], r"quotas\[0\]\.question: 'dodged' is randomized, and a randomized answer cannot"),
    ([{"question": "age", "limit": 1}], r"quotas\[0\]\.question: 'age' is a number question"),
    ([{"questions": ["region", "papers"], "limit": 1}], r"quotas\[0\]\.questions: 'papers' is a multi_select question"),
    ([{"question": "nowhere", "limit": 1}], r"quotas\[0\]\.question: 'nowhere' is not a question"),
    ([{"question": "region"}], r"quotas\[0\]: give limit"),
    ([{"question": "region", "questions": ["member"], "limit": 1}], r"quotas\[0\]: give question .* not both"),
    ([{"questions": ["region", "region"], "limit": 1}], r"quotas\[0\]\.questions: a list of different"),
    ([{"questions": [], "limit": 1}], r"quotas\[0\]\.questions: a list of different"),
    ([{"question": "region", "limit": -1}], r"quotas\[0\]\.limit: a whole number"),
    ([{"question": "region", "limit": 2.5}], r"quotas\[0\]\.limit: a whole number"),
    ([{"question": "region", "limit": True}], r"quotas\[0\]\.limit: a whole number"),
    ([{"question": "region", "limits": {"Nowhere": 1}}], r"quotas\[0\]\.limits: 'Nowhere' is not an answer of 'region'"),
    ([{"question": "region", "limits": {"North": "many"}}], r"quotas\[0\]\.limits\.North: a whole number"),
    ([{"questions": ["region", "member"], "limits": {"North": 1}}], r"a limit per answer is for a quota on one question"),
    ([{"question": "region", "limit": 1}, {"questions": ["region"], "limit": 2}], r"quotas\[1\]: a second quota on region"),
    ([{"question": "region", "limit": 1, "per": "day"}], r"quotas\[0\]: unknown field 'per'"),
    ([], r"survey\.quotas: a list of quotas"), ({"question": "region"}, r"survey\.quotas: a list of quotas"),
    (["region"], r"quotas\[0\]: a mapping"),
])
def test_a_bad_quota_names_its_field(quotas, message):
    with pytest.raises(SpecError, match=message):
        with_quotas(quotas)


def test_quotas_go_through_an_xlsform_to_the_same_hash(tmp_path):
    from deniable.client.xlsform import read_xlsform
    from deniable.client.xlsform_writer import write_xlsform

    survey = with_quotas([{"question": "region", "limit": 5, "limits": {"North": 2}},
                          {"questions": ["region", "member"], "limit": 1}])
    write_xlsform(survey, tmp_path / "form.xlsx")
    assert Survey.from_dict(read_xlsform(tmp_path / "form.xlsx")).hash == survey.hash
