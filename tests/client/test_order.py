"""Randomized order (`client.order`): specs with randomized sections, questions and options read the same on both
twins to the same errors, and the same random words draw the same order (tests/vectors/order.json, written here and
read by the JS twin's test); every order is equally likely; skip logic may read only what is asked before in every
order; the order is not part of a response."""

import collections
import hashlib
import json

import pytest

from deniable.client import SpecError, Survey
from deniable.client.order import draw_order
from deniable.client.randomness import WordSource
from tests.conftest import ROOT

CASES_FILE = ROOT / "tests/vectors/order.json"

BASE = {"id": "s", "title": "t", "sections": [
    {"id": "about", "title": "About you", "questions": [
        {"id": "region", "type": "choice", "text": "Region?", "options": ["north", "south", "east", "west"],
         "privacy": "none", "randomize": True}]},
    {"id": "work", "title": "Work", "randomize": True, "questions": [
        {"id": "q1", "type": "yes_no", "text": "1?"}, {"id": "q2", "type": "yes_no", "text": "2?"},
        {"id": "note", "type": "note", "text": "A note."},
        {"id": "papers", "type": "multi_select", "text": "Read?", "options": ["a", "b", "c"],
         "privacy": {"design": "unary", "epsilon": 2}, "randomize": True}]},
    {"id": "money", "title": "Money", "relevant": "region = 'north'", "questions": [
        {"id": "q3", "type": "yes_no", "text": "3?"}]},
    {"id": "end", "title": "End", "questions": [{"id": "q4", "type": "yes_no", "text": "4?"}]}],
    "randomize_sections": ["work", "money", "end"]}


def _section(spec, index, **changes):
    sections = [dict(s) for s in spec["sections"]]
    sections[index] = {**sections[index], **changes}
    return {**spec, "sections": sections}


def _question(spec, section, index, **changes):
    sections = [dict(s) for s in spec["sections"]]
    questions = [dict(q) for q in sections[section]["questions"]]
    questions[index] = {**questions[index], **changes}
    sections[section]["questions"] = questions
    return {**spec, "sections": sections}


EVERY_SECTION = {**_section(BASE, 2, relevant=None), "randomize_sections": True}
SPECS = [
    BASE, {**BASE, "randomize_sections": True}, EVERY_SECTION, {k: v for k, v in BASE.items() if k != "randomize_sections"},
    {**BASE, "randomize_sections": ["money"]}, {**BASE, "randomize_sections": ["work", "nowhere"]},
    {**BASE, "randomize_sections": ["work", "work"]}, {**BASE, "randomize_sections": "yes"},
    {**BASE, "randomize_sections": False}, _section(BASE, 1, randomize="yes"),
    _question(BASE, 0, 0, type="ordinal"), _question(BASE, 1, 0, randomize=True),
    # skip logic reads only what is asked before in every order
    _question(BASE, 1, 1, privacy="none", relevant=None), _question(_question(BASE, 1, 0, privacy="none"), 1, 1,
                                                                    relevant="q1 = 'yes'"),
    _section(_question(BASE, 2, 0, privacy="none"), 3, relevant="q3 = 'yes'"),
    _section(_question(BASE, 2, 0, privacy="none"), 3, randomize=True),
    {"id": "s", "title": "t", "questions": [{"id": "q", "type": "yes_no", "text": "?"}], "randomize_sections": True},
]


class Words(WordSource):
    def __init__(self, seed: int):
        self.counter, self.seed = 0, seed

    def word(self) -> int:
        self.counter += 1
        return int.from_bytes(hashlib.sha256(f"{self.seed}:{self.counter}".encode()).digest()[:4], "big")


def words(seed: int, count: int = 64) -> list[int]:
    source = Words(seed)
    return [source.word() for _ in range(count)]


class Listed(WordSource):
    def __init__(self, listed):
        self.listed = iter(listed)

    def word(self) -> int:
        return next(self.listed)


def _case(spec) -> dict:
    try:
        survey = Survey.from_dict(spec)
    except SpecError as error:
        return {"spec": spec, "error": str(error), "orders": None}
    return {"spec": spec, "error": None,
            "orders": [{"words": words(seed), "order": draw_order(survey, Listed(words(seed)))} for seed in range(3)]}


def test_the_shared_cases_are_what_python_reads():
    assert json.loads(CASES_FILE.read_text(encoding="utf-8")) == [_case(spec) for spec in SPECS]


def test_every_order_is_equally_likely():
    """Each of the 3! orders of the shuffled sections and the 4! of the region's options about equally often (a
    chi-square test at 1%, fixed seed): Fisher–Yates with exact draws."""
    survey = Survey.from_dict(BASE)
    source = Words(20261126)
    sections, options = collections.Counter(), collections.Counter()
    draws = 4800
    for _ in range(draws):
        order = draw_order(survey, source)
        sections[tuple(order["sections"])] += 1
        options[tuple(order["options"]["region"])] += 1
    assert all(order[0] == "about" for order in sections)  # a section not shuffled keeps its place
    for counts, cells, critical in ((sections, 6, 15.09), (options, 24, 41.64)):  # chi-square 99% at 5 and 23 df
        assert len(counts) == cells
        expected = draws / cells
        assert sum((n - expected) ** 2 / expected for n in counts.values()) < critical


def test_the_spec_keeps_the_order_settings_and_a_response_does_not_depend_on_them():
    survey = Survey.from_dict(BASE)
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash
    assert survey.to_dict()["randomize_sections"] == ["work", "money", "end"]
    assert Survey.from_dict(EVERY_SECTION).to_dict()["randomize_sections"] is True
    assert survey.has_random_order and not Survey.from_dict(_case_without_order()).has_random_order
    answers = {"region": "north", "q1": "yes", "q2": "no", "papers": ["a"], "q3": "no", "q4": "yes"}
    assert set(survey.randomize(answers)) == set(answers)


def _case_without_order():
    spec = json.loads(json.dumps({k: v for k, v in BASE.items() if k != "randomize_sections"}))
    for section in spec["sections"]:
        section.pop("randomize", None)
        for question in section["questions"]:
            question.pop("randomize", None)
    return spec


def test_the_order_settings_go_through_an_xlsform_to_the_same_hash(tmp_path):
    from deniable.client.xlsform import read_xlsform
    from deniable.client.xlsform_writer import write_xlsform

    for spec in (BASE, EVERY_SECTION):
        survey = Survey.from_dict(spec)
        write_xlsform(survey, tmp_path / "form.xlsx")
        assert Survey.from_dict(read_xlsform(tmp_path / "form.xlsx")).hash == survey.hash


@pytest.mark.parametrize("spec, field", [(SPECS[4], "survey.randomize_sections"), (SPECS[9], "section 'work'.randomize"),
                                         (SPECS[10], "question 'region'.randomize")])
def test_a_bad_order_setting_names_its_field(spec, field):
    with pytest.raises(SpecError, match=field.replace(".", r"\.")):
        Survey.from_dict(spec)


if __name__ == "__main__":  # python -m tests.client.test_order: rewrite the shared cases
    CASES_FILE.write_text(json.dumps([_case(spec) for spec in SPECS], indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")


def test_the_randomness_source_is_named_rng_as_every_randomize_names_it():
    survey = Survey.from_dict(BASE)
    by_name = draw_order(survey, rng=Listed(words(7)))
    assert by_name == draw_order(survey, Listed(words(7)))
    with pytest.warns(DeprecationWarning, match="rng="):
        assert draw_order(survey, source=Listed(words(7))) == by_name


def test_a_section_without_a_title_is_told_the_title_is_its_heading():
    untitled = {key: value for key, value in BASE["sections"][3].items() if key != "title"}
    spec = {**BASE, "sections": [*BASE["sections"][:3], untitled]}
    with pytest.raises(SpecError, match=r"section 'end'\.title: required: the section's heading"):
        Survey.from_dict(spec)
