"""What a new version makes less private than the current one: a randomized question asked directly, or a larger ε;
a stronger randomization, a new question or a reworded one is not."""

from deniable.client import Survey
from deniable.client.versions import lowered_privacy

BASE = {"id": "s", "title": "t", "questions": [
    {"id": "dodged", "type": "yes_no", "text": "?", "privacy": {"design": "forced_response", "truth": "1/2",
                                                               "yes": "1/4", "no": "1/4"}},
    {"id": "region", "type": "choice", "text": "?", "options": ["a", "b", "c"],
     "privacy": {"design": "k_rr", "epsilon": 1}}]}


def _with(qid, **changes):
    spec = {**BASE, "questions": [dict(q, **changes) if q["id"] == qid else q for q in BASE["questions"]]}
    return Survey.from_dict(spec)


def test_asked_directly_or_a_larger_epsilon_is_lowered():
    base = Survey.from_dict(BASE)
    assert lowered_privacy(base, _with("dodged", privacy="none")) == [
        "dodged: randomized (forced_response, ε 1.1) → asked directly"]
    assert lowered_privacy(base, _with("region", privacy={"design": "k_rr", "epsilon": 3})) == [
        "region: ε 1 → 3 (k_rr)"]


def test_a_stronger_randomization_a_new_or_reworded_question_is_not():
    base = Survey.from_dict(BASE)
    assert lowered_privacy(base, _with("region", privacy={"design": "k_rr", "epsilon": 0.5})) == []
    assert lowered_privacy(base, _with("dodged", text="Reworded?")) == []
    extra = Survey.from_dict({**BASE, "questions": [*BASE["questions"],
                                                    {"id": "new", "type": "yes_no", "text": "?", "privacy": "none"}]})
    assert lowered_privacy(base, extra) == []


TAX = {"id": "s", "title": "t", "sections": [
    {"id": "about", "title": "About", "questions": [
        {"id": "region", "type": "choice", "text": "Where do you live?", "options": ["north", "south"],
         "privacy": "none"}]},
    {"id": "money", "title": "Money", "questions": [
        {"id": "dodged", "type": "yes_no", "text": "Have you ever dodged your taxes?",
         "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]}]}


def _changed(section: int, question: dict, into: int | None = None) -> Survey:
    """TAX with its private question replaced by ``question`` (in section ``into``, its own by default)."""
    spec = {**TAX, "sections": [dict(s, questions=list(s["questions"])) for s in TAX["sections"]]}
    del spec["sections"][section]["questions"][0]
    spec["sections"][section if into is None else into]["questions"].append(question)
    spec["sections"] = [s for s in spec["sections"] if s["questions"]]
    return Survey.from_dict(spec)


def test_every_path_to_a_weaker_question_is_lowered_and_names_the_pair():
    """Renamed and asked directly (the red team's bypass: 201, unconfirmed), renamed with its text touched up, renamed
    and moved into another section, renamed with a larger ε, and a split ballot's direct arm added."""
    base = Survey.from_dict(TAX)
    direct = {"id": "dodged_v2", "type": "yes_no", "text": "Have you ever dodged your taxes?", "privacy": "none"}
    assert lowered_privacy(base, _changed(1, direct)) == [
        "dodged → dodged_v2 (the same question under a new id): randomized (forced_response, ε 1.1) → asked directly"]
    assert lowered_privacy(base, _changed(1, {**direct, "text": "Have you ever dodged taxes?"}))  # touched up
    assert lowered_privacy(base, _changed(1, direct, into=0))  # moved into the first section
    weaker = {**direct, "privacy": {"design": "forced_response", "truth": "3/4", "yes": "1/8", "no": "1/8"}}
    assert lowered_privacy(base, _changed(1, weaker))[0].startswith("dodged → dodged_v2 (the same question under a "
                                                                    "new id): ε 1.1 → ")
    split = {"id": "dodged", "type": "yes_no", "text": "Have you ever dodged your taxes?",
             "privacy": TAX["sections"][1]["questions"][0]["privacy"], "split_ballot": {"direct": "1/5"}}
    assert lowered_privacy(base, _changed(1, split)) == [
        "dodged: now asked directly of 20% of respondents (a split ballot's direct arm; 0% before)"]


def test_a_different_question_in_its_place_is_not_a_renamed_one():
    base = Survey.from_dict(TAX)
    other = {"id": "bribed", "type": "yes_no", "text": "Have you ever paid a bribe?", "privacy": "none"}
    assert lowered_privacy(base, _changed(1, other)) == []  # removing a question lowers nothing
    choice = {"id": "dodged_v2", "type": "choice", "text": "Have you ever dodged your taxes?",
              "options": ["never", "once", "often"], "privacy": "none"}
    assert lowered_privacy(base, _changed(1, choice)) == []  # other answers: another question
