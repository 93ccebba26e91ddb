"""Write tests/vectors/channels.json: specs and every exact probability and ε they imply.

Run once after changing a mechanism (``python tests/vectors/generate.py``); the Python and the
JavaScript tests both read the file, and a Python test checks it is still what this script makes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from deniable.client import Survey, catalogue

VECTORS = Path(__file__).with_name("channels.json")


def _question(qid, qtype, privacy, **extra):
    return {"id": qid, "type": qtype, "text": f"Question {qid}?", "privacy": privacy, **extra}


LIKERT = ["1", "2", "3", "4", "5"]
COLOURS = ["red", "green", "blue"]
SPECS = [
    {"id": "binary", "title": "Binary designs", "questions": [
        _question("coin", "yes_no", {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}),
        _question("default", "yes_no", None),
        _question("skewed", "yes_no", {"design": "forced_response", "truth": 0.6, "yes": 0.3, "no": 0.1}),
        _question("warner", "yes_no", {"design": "warner", "p": "3/4"}),
        _question("warner_low", "yes_no", {"design": "warner", "p": 0.3}),
        _question("unrelated", "yes_no", {"design": "unrelated_question", "p": "2/3", "innocuous_yes": "1/12"}),
        _question("krr2", "yes_no", {"design": "k_rr", "epsilon": 1}),
        _question("public", "yes_no", "none"),
    ]},
    {"id": "respondent", "title": "Designs in which the respondent randomizes", "questions": [
        _question("crosswise", "yes_no", {"design": "crosswise", "p": "1/4",
                                          "companion": "Is your mother's birthday in January, February or March?"}),
        _question("crosswise_sixth", "yes_no", {"design": "crosswise", "p": "1/6",
                                                "companion": "Were you born on a Sunday?"}),
        _question("crosswise_high", "yes_no", {"design": "crosswise", "p": 0.8, "companion": "Is your birthday after 12 March?"}),
        _question("triangular", "yes_no", {"design": "triangular", "p": "1/4",
                                           "companion": "Is your mother's birthday in January, February or March?"}),
        _question("natural", "yes_no", {"design": "forced_response", "truth": "3/4", "yes": "1/6", "no": "1/12",
                                        "randomizer": {"text": "If your mother's birthday is in January or February, "
                                                               "answer yes; if it is in December, answer no; otherwise "
                                                               "answer truthfully."}}),
    ]},
    {"id": "compliance", "title": "Designs that measure compliance", "questions": [
        _question("cdm", "yes_no", {"design": "cheating_detection", "groups": {
            "a": {"yes": "1/3", "randomizer": "If your birthday is in January to April, answer yes; otherwise answer truthfully."},
            "b": {"yes": "2/3", "randomizer": "If your birthday is in January to August, answer yes; otherwise answer truthfully."}}}),
        _question("cdm_symmetric", "yes_no", {"design": "cheating_detection", "groups": {
            "a": {"yes": "1/3", "no": "1/6", "randomizer": "January to April: yes; May and June: no; otherwise the truth."},
            "b": {"yes": "1/6", "no": "1/3", "randomizer": "January and February: yes; March to June: no; otherwise the truth."}}}),
        _question("sld", "yes_no", {"design": "stochastic_lie_detector", "groups": {
            "a": {"p": "2/12", "randomizer": "If your birthday is in January or February, answer no; otherwise yes."},
            "b": {"p": "10/12", "randomizer": "If your birthday is in January to October, answer no; otherwise yes."}}}),
    ]},
    {"id": "split", "title": "Split ballots: a share asked directly", "questions": [
        _question("coin_split", "yes_no", {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"},
                  split_ballot={"direct": "1/4"}),
        _question("crosswise_split", "yes_no", {"design": "crosswise", "p": "1/4", "companion": "Were you born on a Sunday?"},
                  split_ballot={"direct": 0.3}),
        _question("cdm_split", "yes_no", {"design": "cheating_detection", "groups": {
            "a": {"yes": "1/3", "randomizer": "If your birthday is in January to April, answer yes; otherwise answer truthfully."},
            "b": {"yes": "2/3", "randomizer": "If your birthday is in January to August, answer yes; otherwise answer truthfully."}}},
                  split_ballot={"direct": "1/3"}),
    ]},
    {"id": "categorical", "title": "Categorical designs", "questions": [
        _question("krr_ln3", "choice", {"design": "k_rr", "epsilon": "ln 3"}, options=COLOURS),
        _question("krr_half", "choice", {"design": "k_rr", "epsilon": 0.5}, options=COLOURS + ["black"]),
        _question("krr_p", "choice", {"design": "k_rr", "p_truth": "1/2"}, options=COLOURS),
        _question("ordinal_1", "ordinal", {"design": "ordinal", "epsilon": 1}, options=LIKERT),
        _question("ordinal_3", "ordinal", {"design": "ordinal", "epsilon": "3/2"}, options=LIKERT[:3]),
        _question("ordinal_krr", "ordinal", {"design": "k_rr", "epsilon": 2}, options=LIKERT),
        _question("public_choice", "choice", "none", options=COLOURS),
    ]},
    {"id": "multi", "title": "Multi-select designs", "questions": [
        _question("sym", "multi_select", {"design": "unary", "epsilon": 2}, options=COLOURS),
        _question("opt", "multi_select", {"design": "unary", "epsilon": "ln(4)", "variant": "optimized"}, options=["a", "b"]),
        _question("public_multi", "multi_select", "none", options=["a", "b"]),
    ]},
    {"id": "panel", "title": "A repeated survey: permanent and instantaneous layers", "repeated": True, "questions": [
        _question("coin", "yes_no", {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}),
        _question("warner", "yes_no", {"design": "warner", "p": "3/4"}),
        _question("krr", "choice", {"design": "k_rr", "epsilon": "ln 3"}, options=COLOURS),
        _question("ordinal", "ordinal", {"design": "ordinal", "epsilon": 1}, options=LIKERT),
        _question("multi", "multi_select", {"design": "unary", "epsilon": 2}, options=COLOURS),
        _question("number", "number", {"design": "laplace", "epsilon": 1}, min=0, max=4, step=1),
        _question("crosswise", "yes_no", {"design": "crosswise", "p": "1/4", "companion": "Were you born on a Sunday?"}),
        _question("triangular", "yes_no", {"design": "triangular", "p": "1/4", "companion": "Were you born on a Sunday?"}),
        _question("cdm", "yes_no", {"design": "cheating_detection", "groups": {
            "a": {"yes": "1/3", "randomizer": "If your birthday is in January to April, answer yes; otherwise answer truthfully."},
            "b": {"yes": "2/3", "randomizer": "If your birthday is in January to August, answer yes; otherwise answer truthfully."}}}),
        _question("split", "yes_no", {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"},
                  split_ballot={"direct": "1/4"}),
        _question("public", "yes_no", "none"),
    ]},
    {"id": "panel_eps", "title": "A repeated survey with the instantaneous layer's ε", "repeated": {"instant_epsilon": "ln 9"},
     "questions": [
         _question("coin", "yes_no", {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}),
         _question("krr", "choice", {"design": "k_rr", "epsilon": 2}, options=COLOURS + ["black"]),
         _question("multi", "multi_select", {"design": "unary", "epsilon": "ln(4)", "variant": "optimized"}, options=["a", "b"]),
         _question("number", "number", {"design": "laplace", "epsilon": "ln 2"}, min=-1, max=1, step=0.5),
     ]},
    {"id": "numbers", "title": "Numeric designs", "questions": [
        _question("small", "number", {"design": "laplace", "epsilon": 1}, min=0, max=4, step=1),
        _question("halves", "number", {"design": "laplace", "epsilon": "ln 2"}, min=-1, max=1, step=0.5),
        _question("tenths", "number", {"design": "laplace", "epsilon": 0.7}, min=0.1, max=0.4, step=0.1),
        _question("public_number", "number", "none", min=1, max=3),
    ]},
]


class _Scripted:
    """A source of randomness that draws one given number."""

    def __init__(self, draw: int):
        self.draw = draw

    def randbelow(self, n: int) -> int:
        assert 0 <= self.draw < n
        return self.draw


def _ratio(value):
    return None if value is None else str(value)


#: The memo secret of the panel vectors: both clients must derive the same permanent reports from it.
MEMO_SECRET = bytes(range(32))


def _panel(survey, question) -> dict:
    """A repeated question's layers: ε∞, the instantaneous layer, and the permanent report the memo gives each
    answer (several answers, as many draws as the alphabet allows) with the arm or group it keeps."""
    from deniable.client.memo import Memo

    memo = Memo.from_secret(MEMO_SECRET)
    permanent, layer = question.permanent, question.mechanism.instant
    panel = {"epsilon_all_waves": None if math.isinf(question.epsilon_all_waves) else question.epsilon_all_waves,
             "instant": {"keep": str(layer.keep), "other": str(layer.other), "size": layer.size, "per_bit": layer.per_bit}}
    answers = permanent.answers[:8]
    panel["permanent"] = [[answer, permanent.randomize(answer, memo.stream(survey.id, question.id, "report",
                                                                                permanent.answer_position(answer)))]
                          for answer in answers]
    if question.split_ballot is not None:
        panel["arm"] = survey.arm_for(question.id, memo)
    if hasattr(permanent, "assign_group"):
        panel["group"] = survey.group_for(question.id, memo)
    return panel


def vectors() -> list[dict]:
    cases = []
    for spec in SPECS:
        clean = json.loads(json.dumps(spec))
        for question in clean["questions"]:
            if question["privacy"] is None:
                del question["privacy"]
        survey = Survey.from_dict(clean)
        questions = {}
        for qid, question in survey.questions.items():
            mechanism = question.mechanism
            questions[qid] = {
                "design": mechanism.design,
                "params": mechanism.params,
                "answers": mechanism.answers,
                "reports": mechanism.reports,
                "channel": [[str(p) for p in row] for row in mechanism.channel()],
                "exp_epsilon": _ratio(mechanism.exp_epsilon),
                "epsilon": None if not mechanism.is_private else mechanism.epsilon,
                "respondent_randomizes": mechanism.respondent_randomizes,
                "statement": question.privacy_statement(),
                # Every shipped language's statement: the JS twin fills the same templates with the same figures.
                "statements": {code: question.privacy_statement(words=catalogue.messages(code))
                               for code in catalogue.SHIPPED if code != catalogue.DEFAULT},
            }
            if hasattr(mechanism, "latent_classes"):  # the analysis channel's columns, exact
                questions[qid]["latent_classes"] = [[label, [str(p) for p in column]]
                                                    for label, column in mechanism.latent_classes]
            split = question.split_ballot
            if split is not None:  # both arms' reports, and the arm each integer draw gives
                arms = [split.assign_arm(_Scripted(draw)) for draw in range(split.direct.denominator)]
                questions[qid]["split_ballot"] = {"direct": str(split.direct), "reports": split.reports, "arm_by_draw": arms}
            if survey.repeated is not None and question.is_private:
                questions[qid]["panel"] = _panel(survey, question)
        # JSON has no infinity: a survey with a one-sided question (ε = ∞) writes null.
        total = survey.epsilon if survey.epsilon != float("inf") else None
        case = {"spec": clean, "epsilon": total, "questions": questions}
        if survey.repeated is not None:
            per_wave = survey.epsilon_per_wave
            case["repeated"] = {"canonical": survey.repeated.canonical(),
                                "epsilon_per_wave": None if math.isinf(per_wave) else per_wave}
        cases.append(case)
    return cases


def render() -> str:
    return json.dumps(vectors(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    VECTORS.write_text(render(), encoding="utf-8")
    print(f"wrote {VECTORS}")
