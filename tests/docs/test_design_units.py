"""A design is a unit (in OpenDP's manner): `deniable.client.designs.DESIGNS` names every part of each one, and this
test fails when a part is missing or the two clients disagree: its builder on both twins, the shared vectors that
exercise both, the estimator analysis takes it to, its section in docs/mechanisms.md, its statement's words."""

import json
import subprocess

import pytest

from deniable.analysis.from_counts import ESTIMATORS, shape
from deniable.client import Survey, catalogue
from deniable.client.designs import DESIGNS, SHAPES
from tests.conftest import ROOT

VECTORS = json.loads((ROOT / "tests/vectors/channels.json").read_text(encoding="utf-8"))


def _cases(design: str) -> list:
    """(question type, mechanism) of every vector question of ``design``."""
    found = []
    for case in VECTORS:
        survey = Survey.from_dict(case["spec"])
        for question in survey.questions.values():
            if question.mechanism.design == design:
                found.append((question.type, question.mechanism))
    return found


def _node(script: str, node: str):
    result = subprocess.run([node, "--input-type=module", "-e", script], cwd=ROOT / "src/deniable/client/js",
                            capture_output=True, text=True, timeout=60, check=True)
    return json.loads(result.stdout)


def test_every_shape_has_an_estimator_and_every_design_a_known_shape():
    assert set(ESTIMATORS) == set(SHAPES)
    assert {design.shape for design in DESIGNS.values()} <= set(SHAPES)


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_each_design_s_vectors_build_its_mechanism_and_reach_its_estimator(name):
    design = DESIGNS[name]
    cases = _cases(name)
    assert cases, f"tests/vectors/generate.py has no question of design {name}: the twins are not checked on it"
    assert {kind for kind, _ in cases} <= set(design.types)
    for kind, mechanism in cases:
        two_answers = design.shape != "grouped" and len(mechanism.answers) == 2 and kind != "multi_select"
        assert shape(mechanism) == ("binary" if two_answers else design.shape), (name, kind)


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_each_design_has_its_section_in_the_mechanisms_page(name):
    headings = [line for line in (ROOT / "docs/mechanisms.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("### ")]
    assert any(DESIGNS[name].docs in heading for heading in headings), f"no heading of docs/mechanisms.md names {name}"


@pytest.mark.parametrize("name", sorted(name for name, design in DESIGNS.items() if "yes_no" in design.types))
def test_each_yes_no_design_is_compared_with_its_own_reference_parameters(name):
    """`plan --compare` reads the registry: each yes/no design's textbook parameter sets are its own, build, and are in
    the table beside a survey's own questions, with the non-compliance the design measures."""
    from deniable.analysis.precision import compare_yes_no_designs

    design = DESIGNS[name]
    assert design.references, f"{name} has no reference parameters for plan --compare"
    table = compare_yes_no_designs(1000)
    for label, privacy in design.references:
        assert privacy["design"] == name
        Survey.from_dict({"id": "r", "title": "r", "questions": [
            {"id": "q", "type": "yes_no", "text": "?", "privacy": privacy}]})
        assert table.loc[label, "measures compliance"] == (design.measures or "no")


def test_the_javascript_twin_registers_the_same_designs_with_the_same_types_and_parameters(node):
    twins = _node("import { DESIGNS } from './src/designs.js'; console.log(JSON.stringify(DESIGNS));", node)
    assert twins == {name: [list(d.types), list(d.params)] for name, d in DESIGNS.items()}


def test_a_design_in_which_the_respondent_randomizes_has_its_statement_in_both_clients(node):
    own = {name: d.respondent_words for name, d in DESIGNS.items() if d.respondent_words}
    english = catalogue.messages(None)
    assert all(key in english for words in own.values() for key in words)
    twins = _node("import { respondentStatement } from './src/privacy.js';"
                  f"const names = {json.dumps(sorted(own))};"
                  "console.log(JSON.stringify(Object.fromEntries(names.map((n) => [n, respondentStatement(1, n)]))));",
                  node)
    assert twins == {name: catalogue.privacy_statement(1.0, respondent=name) for name in own}
