"""Write tests/vectors/skiplogic.json: expressions with their trees and canonical text, random
questionnaires with skip logic and the questions each set of answers shows, and specs that must
be refused (a skip-logic rule reading a private question leaks it).

Run ``python tests/vectors/skiplogic.py`` after changing the spec format or the expression
language; the Python and JS tests read the file, and a Python test checks it is what this writes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from deniable.client import SpecError, Survey, skiplogic
from tests.conftest import SeededSource

VECTORS = Path(__file__).with_name("skiplogic.json")

EXPRESSIONS = [
    "region = 'North'",
    "region='North'",
    'region = "O\'Brien"',
    "age >= 18 and age < 65",
    "(a = 'x' or b = 'y') and not c = 'z'",
    "a = 'x' or (b = 'y' and (c = 'z' or d = 'w'))",
    "((a = 'x'))",
    "a = 'x' and (b = 'y' and c = 'z')",
    "not (a = 'x' or b = 'y')",
    "not not a = 'x'",
    "selected(pets, 'cat') or selected(pets,'dog')",
    "n != -0.50",
    "n = 007.250",
    "q.1-b >= 2",
    "x = ''",
]
BAD_EXPRESSIONS = [
    "", "   ", "region", "region =", "= 'North'", "region = North", "region == 'x'", "(a = 'x'",
    "a = 'x')", "a = 'x' and", "selected(pets)", "selected(pets, 3)", "and = 'x'", "a = 'x' b = 'y'",
    "a = 'unterminated", "a = 1.", "a = .5", "a = 1e5", "a < 'x' or", "not", "a = 'x' # comment",
    "(" * 60 + "a = 'x'" + ")" * 60,
]

PUBLIC_TYPES = ("yes_no", "choice", "multi_select", "number")


def _public_question(rng: random.Random, qid: str) -> dict:
    qtype = rng.choice(PUBLIC_TYPES)
    spec = {"id": qid, "type": qtype, "text": f"Public {qid}?", "privacy": "none"}
    if qtype in ("choice", "multi_select"):
        spec["options"] = ["a", "b", "c"]
    if qtype == "number":
        spec.update(min=0, max=4, step=1)
    return spec


def _private_question(rng: random.Random, qid: str) -> dict:
    qtype = rng.choice(("yes_no", "choice", "ordinal", "multi_select", "number"))
    privacy = {"yes_no": None, "choice": {"design": "k_rr", "epsilon": 1},
               "ordinal": {"design": "ordinal", "epsilon": 1}, "multi_select": {"design": "unary", "epsilon": 2},
               "number": {"design": "laplace", "epsilon": 1}}[qtype]
    spec = {"id": qid, "type": qtype, "text": f"Private {qid}?"}
    if privacy:
        spec["privacy"] = privacy
    if qtype in ("choice", "ordinal", "multi_select"):
        spec["options"] = ["x", "y", "z"]
    if qtype == "number":
        spec.update(min=0, max=3, step=1)
    return spec


def _leaf(rng: random.Random, question: dict) -> str:
    qid, qtype = question["id"], question["type"]
    if qtype == "number":
        return f"{qid} {rng.choice(skiplogic.COMPARISONS)} {rng.randint(-1, 5)}"
    if qtype == "multi_select":
        return f"selected({qid}, '{rng.choice(question['options'])}')"
    option = rng.choice(["yes", "no"] if qtype == "yes_no" else question["options"])
    if qtype == "choice" and rng.random() < 0.3:
        return f"selected({qid}, '{option}')"
    return f"{qid} {rng.choice(['=', '!='])} '{option}'"


def _condition(rng: random.Random, public: list[dict], depth: int = 0) -> str:
    if depth >= 2 or rng.random() < 0.5:
        return _leaf(rng, rng.choice(public))
    kind = rng.choice(["and", "or", "not"])
    if kind == "not":
        return f"not ({_condition(rng, public, depth + 1)})"
    parts = [_condition(rng, public, depth + 1) for _ in range(rng.randint(2, 3))]
    return f" {kind} ".join(f"({p})" for p in parts)


def random_spec(rng: random.Random, number: int) -> dict:
    """A questionnaire of 2-4 sections mixing public and private questions and notes, where
    every relevant (and some required) reads earlier public questions only."""
    sections, public, counter = [], [], 0
    for s in range(rng.randint(2, 4)):
        items = []
        for _ in range(rng.randint(1, 4)):
            counter += 1
            qid = f"q{counter}"
            kind = rng.random()
            if kind < 0.1 and counter > 1:
                item = {"id": qid, "type": "note", "text": f"Note {qid}."}
            elif kind < 0.5:
                item = _public_question(rng, qid)
            else:
                item = _private_question(rng, qid)
            if public and rng.random() < 0.6:
                item["relevant"] = _condition(rng, public)
            if item["type"] != "note":
                if public and rng.random() < 0.2:
                    item["required"] = _condition(rng, public)
                elif rng.random() < 0.5:
                    item["required"] = True
            items.append(item)
        section = {"id": f"s{s}", "title": f"Section {s}", "questions": items}
        if public and rng.random() < 0.3:
            section["relevant"] = _condition(rng, public)
        sections.append(section)
        public += [item for item in items if item.get("privacy") == "none"]
    return {"id": f"random{number}", "title": f"Random questionnaire {number}", "sections": sections}


def random_answer(rng: random.Random, question) -> object:
    """A true answer any respondent could give (or None: left unanswered)."""
    if rng.random() < 0.15:
        return None
    if question.type == "number":
        low, high, step = question.grid
        return float(low + step * rng.randint(0, int((high - low) / step)))
    if question.type == "yes_no":
        return rng.choice(["yes", "no"])
    if question.type == "multi_select":
        return [o for o in question.options if rng.random() < 0.5]
    return rng.choice(question.options)


def random_answers(rng: random.Random, survey: Survey) -> dict:
    return {qid: random_answer(rng, q) for qid, q in survey.questions.items()}


LEAKS = [
    # Safely Report's own example: a garbled "travelled abroad?" gating a follow-up.
    ({"id": "leak", "title": "Leak", "questions": [
        {"id": "abroad", "type": "yes_no", "text": "Have you ever travelled abroad?"},
        {"id": "where", "type": "choice", "text": "Where?", "options": ["Europe", "Asia"],
         "privacy": {"design": "k_rr", "epsilon": 1}, "relevant": "abroad = 'yes'"}]}, "where"),
    ({"id": "leak", "title": "Leak", "sections": [
        {"id": "a", "title": "A", "questions": [
            {"id": "use", "type": "choice", "text": "Used?", "options": ["never", "once", "often"],
             "privacy": {"design": "k_rr", "epsilon": 1}}]},
        {"id": "b", "title": "B", "relevant": "use != 'never'", "questions": [
            {"id": "age", "type": "number", "text": "Age at first use?", "min": 10, "max": 40, "privacy": "none"}]}]}, "b"),
    ({"id": "leak", "title": "Leak", "questions": [
        {"id": "x", "type": "number", "text": "How many?", "min": 0, "max": 3, "privacy": {"design": "laplace", "epsilon": 1}},
        {"id": "y", "type": "yes_no", "text": "Y?", "privacy": "none", "required": "x > 1"}]}, "y"),
    # Transitive: a public question shown on a private answer would reveal it, and so would
    # anything shown on that public question.
    ({"id": "leak", "title": "Leak", "questions": [
        {"id": "x", "type": "yes_no", "text": "X?"},
        {"id": "p", "type": "yes_no", "text": "P?", "privacy": "none", "relevant": "x = 'yes'"},
        {"id": "z", "type": "yes_no", "text": "Z?", "relevant": "p = 'no'"}]}, "p"),
]
REFUSED = [
    ({"id": "r", "title": "R", "questions": [
        {"id": "a", "type": "yes_no", "text": "A?", "privacy": "none", "relevant": "b = 'yes'"},
        {"id": "b", "type": "yes_no", "text": "B?", "privacy": "none"}]}, "not a question asked before"),
    ({"id": "r", "title": "R", "questions": [
        {"id": "a", "type": "yes_no", "text": "A?", "privacy": "none", "relevant": "nobody = 'yes'"}]},
     "no question 'nobody'"),
    ({"id": "r", "title": "R", "questions": [
        {"id": "a", "type": "number", "text": "A?", "privacy": "none", "min": 0, "max": 3},
        {"id": "b", "type": "yes_no", "text": "B?", "relevant": "a = 'two'"}]}, "is a number question"),
    ({"id": "r", "title": "R", "questions": [
        {"id": "a", "type": "choice", "text": "A?", "privacy": "none", "options": ["x", "y"]},
        {"id": "b", "type": "yes_no", "text": "B?", "relevant": "a = 'w'"}]}, "is not an answer of 'a'"),
    ({"id": "r", "title": "R", "questions": [
        {"id": "a", "type": "multi_select", "text": "A?", "privacy": "none", "options": ["x", "y"]},
        {"id": "b", "type": "yes_no", "text": "B?", "relevant": "a = 'x'"}]}, "allows several answers"),
    ({"id": "r", "title": "R", "questions": [
        {"id": "a", "type": "choice", "text": "A?", "privacy": "none", "options": ["x", "y"]},
        {"id": "b", "type": "yes_no", "text": "B?", "relevant": "a > 'x'"}]}, "has named answers"),
    ({"id": "r", "title": "R", "questions": [
        {"id": "n", "type": "note", "text": "Just a note."},
        {"id": "b", "type": "yes_no", "text": "B?", "relevant": "n = 'x'"}]}, "not a question asked before"),
    ({"id": "r", "title": "R", "questions": [{"id": "n", "type": "note", "text": "Only a note."}]},
     "at least one question"),
    ({"id": "r", "title": "R", "languages": ["en", "es"], "questions": [
        {"id": "a", "type": "yes_no", "text": {"es": "¿A?"}}]}, "needs the default language 'en'"),
    ({"id": "r", "title": "R", "languages": ["en"], "questions": [
        {"id": "a", "type": "yes_no", "text": {"en": "A?", "fr": "A ?"}}]}, "language 'fr' is not one of"),
    ({"id": "r", "title": "R", "questions": [
        {"id": "a", "type": "yes_no", "text": {"en": "A?"}}]}, "needs 'languages' at the top"),
    ({"id": "r", "title": "R", "questions": [{"id": "a", "type": "yes_no", "text": "A?"}],
      "sections": [{"id": "s", "title": "S", "questions": [{"id": "b", "type": "yes_no", "text": "B?"}]}]},
     "either 'questions' or 'sections'"),
    ({"id": "r", "title": "R", "questions": [
        {"id": "a", "type": "yes_no", "text": "A?", "constraint_message": "No."}]}, "only number questions"),
]


def vectors() -> dict:
    expressions = []
    for text in EXPRESSIONS:
        tree = skiplogic.parse(text)
        expressions.append({"text": text, "tree": tree, "canonical": skiplogic.to_text(tree)})
    bad = []
    for text in BAD_EXPRESSIONS:
        try:
            skiplogic.parse(text)
        except skiplogic.ExpressionError as error:
            bad.append({"text": text, "error": str(error)})
        else:  # pragma: no cover - the list is wrong
            raise AssertionError(f"{text!r} parsed")
    rng = random.Random(20261122)
    surveys = []
    for number in range(40):
        spec = random_spec(rng, number)
        survey = Survey.from_dict(spec)
        cases = []
        for _ in range(12):
            answers = random_answers(rng, survey)
            shown = survey.shown(answers)
            cases.append({"answers": answers, "shown": shown, "required": survey.required_now(answers),
                          "reported": sorted(survey.randomize(answers, rng=SeededSource(number)).keys())})
        surveys.append({"spec": spec, "cases": cases})
    refused = []
    for spec, name in LEAKS:
        try:
            Survey.from_dict(spec)
        except SpecError as error:
            refused.append({"spec": spec, "error": str(error), "leak": name})
    for spec, fragment in REFUSED:
        try:
            Survey.from_dict(spec)
        except SpecError as error:
            assert fragment in str(error), (fragment, error)
            refused.append({"spec": spec, "error": str(error)})
    assert len(refused) == len(LEAKS) + len(REFUSED)
    return {"expressions": expressions, "bad_expressions": bad, "surveys": surveys, "refused": refused}


def render() -> str:
    return json.dumps(vectors(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    VECTORS.write_text(render(), encoding="utf-8")
    print(f"wrote {VECTORS}")
