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
