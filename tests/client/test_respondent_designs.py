"""Designs in which the respondent randomizes (crosswise, triangular, forced response with a natural
randomizer): exact channels and ε pinned from both sides, the report taken as the respondent gave it,
refusals that name the field, and estimates that recover the truth through the same channel."""

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from deniable.client import AnswerError, SpecError, Survey
from deniable.client.designs import build

COMPANION = "Is your mother's birthday in January, February or March?"
INSTRUCTION = "If your mother's birthday is in January or February, answer yes; if in December, answer no; otherwise answer truthfully."


def one(privacy, **extra):
    spec = {"id": "s", "title": "S", **extra, "questions": [{"id": "q", "type": "yes_no", "text": "Did you?", "privacy": privacy}]}
    return Survey.from_dict(spec).questions["q"]


class Seeded:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def randbelow(self, n):
        return self.rng.randrange(n)


@pytest.mark.parametrize("p,exp_epsilon", [("1/4", 3), ("1/6", 5), ("3/4", 3), ("0.8", 4)])
def test_crosswise_channel_and_epsilon(p, exp_epsilon):
    question = one({"design": "crosswise", "companion": COMPANION, "p": p})
    mechanism, share = question.mechanism, Fraction(p)
    assert mechanism.reports == ["same", "different"] and mechanism.answers == ["yes", "no"]
    assert mechanism.probability("same", "yes") == share and mechanism.probability("same", "no") == 1 - share
    assert mechanism.exp_epsilon == exp_epsilon  # |ln(p / (1 − p))|, exactly
    assert question.epsilon == pytest.approx(math.log(exp_epsilon), rel=1e-15)
    assert mechanism.respondent_randomizes and question.is_private


def test_crosswise_epsilon_is_met_from_both_sides():
    """ln 3 at p = 1/4 and not a hair less: a companion share just off 1/4 gives a different ratio."""
    assert one({"design": "crosswise", "companion": COMPANION, "p": "1/4"}).mechanism.exp_epsilon == 3
    nearby = one({"design": "crosswise", "companion": COMPANION, "p": "2501/10000"}).mechanism.exp_epsilon
    assert nearby < 3 and nearby == Fraction(7499, 2501)


def test_triangular_is_one_sided_and_suggests_crosswise():
    survey = Survey.from_dict({"id": "s", "title": "S", "questions": [
        {"id": "q", "type": "yes_no", "text": "Did you?", "privacy": {"design": "triangular", "companion": COMPANION, "p": "1/4"}}]})
    mechanism = survey.questions["q"].mechanism
    assert mechanism.reports == ["no_to_both", "other"]
    assert mechanism.probability("other", "yes") == 1 and mechanism.probability("other", "no") == Fraction(1, 4)
    assert mechanism.probability("no_to_both", "yes") == 0
    assert mechanism.exp_epsilon is None and math.isinf(survey.questions["q"].epsilon)
    [warning] = survey.warnings
    assert "ε is infinite" in warning and "design: crosswise" in warning
    assert "choosing it reveals that answer" in survey.questions["q"].privacy_statement()


def test_a_natural_randomizer_keeps_the_forced_response_channel():
    natural = one({"design": "forced_response", "truth": "3/4", "yes": "1/6", "no": "1/12", "randomizer": {"text": INSTRUCTION}})
    device = one({"design": "forced_response", "truth": "3/4", "yes": "1/6", "no": "1/12"})
    assert natural.mechanism.channel() == device.mechanism.channel() and natural.epsilon == device.epsilon
    assert natural.mechanism.respondent_randomizes and not device.mechanism.respondent_randomizes
    assert natural.mechanism.params["randomizer"] == {"text": INSTRUCTION}
    assert "instruction" in natural.privacy_statement() and "randomized on your device" in device.privacy_statement()


@pytest.mark.parametrize("privacy,field", [
    ({"design": "crosswise", "companion": COMPANION, "p": "1/2"}, "privacy.p: 1/2 makes"),
    ({"design": "crosswise", "companion": COMPANION, "p": 0}, "privacy.p: must be strictly between 0 and 1"),
    ({"design": "crosswise", "companion": COMPANION, "p": 1}, "privacy.p: must be strictly between 0 and 1"),
    ({"design": "triangular", "companion": COMPANION, "p": "3/2"}, "privacy.p: must be between 0 and 1"),
    ({"design": "crosswise", "p": "1/4"}, "privacy.companion: must be a non-empty string"),
    ({"design": "triangular", "companion": "  ", "p": "1/4"}, "privacy.companion"),
    ({"design": "crosswise", "companion": COMPANION, "p": "1/4", "truth": "1/2"}, "privacy: unknown field 'truth' for design crosswise"),
    ({"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4", "randomizer": "flip"}, "privacy.randomizer:"),
    ({"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4", "randomizer": {"text": INSTRUCTION, "x": 1}},
     "privacy.randomizer:"),
])
def test_bad_parameters_are_refused_naming_the_field(privacy, field):
    with pytest.raises(SpecError, match=f"question 'q'.{field}".replace("(", r"\(").replace(")", r"\)")):
        one(privacy)


def test_texts_follow_the_survey_languages():
    question = one({"design": "crosswise", "companion": {"en": COMPANION, "es": "¿Nació su madre entre enero y marzo?"}, "p": "1/4"},
                   languages=["en", "es"])
    assert question.mechanism.params["companion"]["es"].startswith("¿Nació")
    with pytest.raises(SpecError, match="language 'fr' is not one of the survey's languages"):
        one({"design": "crosswise", "companion": {"en": COMPANION, "fr": "Née ?"}, "p": "1/4"}, languages=["en", "es"])
    with pytest.raises(SpecError, match="needs 'languages' at the top"):
        one({"design": "crosswise", "companion": {"en": COMPANION}, "p": "1/4"})


def test_the_page_sends_the_respondents_choice_and_never_takes_a_true_answer():
    survey = Survey.from_dict({"id": "s", "title": "S", "questions": [
        {"id": "cw", "type": "yes_no", "text": "A?", "privacy": {"design": "crosswise", "companion": COMPANION, "p": "1/4"}},
        {"id": "tri", "type": "yes_no", "text": "B?", "privacy": {"design": "triangular", "companion": COMPANION, "p": "1/4"}},
        {"id": "nat", "type": "yes_no", "text": "C?", "privacy": {"design": "forced_response", "truth": "3/4", "yes": "1/6",
                                                                  "no": "1/12", "randomizer": {"text": INSTRUCTION}}}]})
    for _ in range(50):  # nothing drawn: the same choices every time
        assert survey.randomize({"cw": "different", "tri": "no_to_both", "nat": "no"}) == \
            {"cw": "different", "tri": "no_to_both", "nat": "no"}
    with pytest.raises(AnswerError, match=r"answers\.cw: .*'yes'.*allowed: the respondent's own randomized report, one of 'same', 'different'"):
        survey.randomize({"cw": "yes"})
    # simulate() draws what a respondent with these true answers would choose, through the channel
    drawn = [survey.simulate({"cw": "yes", "tri": "yes", "nat": "yes"}, Seeded(seed)) for seed in range(400)]
    assert {d["tri"] for d in drawn} == {"other"}  # P(B | yes) = 1
    assert 0.15 < np.mean([d["cw"] == "same" for d in drawn]) < 0.35  # P(same | yes) = 1/4


@pytest.mark.parametrize("design,p", [("crosswise", "1/4"), ("crosswise", "1/6"), ("triangular", "1/4")])
def test_estimates_recover_the_truth_and_match_the_closed_form(design, p):
    from deniable.analysis import estimate

    question = one({"design": design, "companion": COMPANION, "p": p})
    truth, n = 0.3, 1000
    rng = Seeded(11)
    covered = 0
    for rep in range(200):
        answers = ["yes" if rng.randbelow(1000) < truth * 1000 else "no" for _ in range(n)]
        reports = [question.mechanism.randomize(a, rng) for a in answers]
        result = estimate(question, reports)
        low, high = result.table.loc["yes", ["ci_low", "ci_high"]]
        covered += low <= truth <= high
        if rep == 0:
            first = reports.count(question.mechanism.reports[0]) / n
            # λ = P(first report | no) + (P(first | yes) − P(first | no))·π, inverted
            given_yes, given_no = (float(question.mechanism.probability(question.mechanism.reports[0], a)) for a in ("yes", "no"))
            closed = (first - given_no) / (given_yes - given_no)
            if 0 < closed < 1:
                assert result.estimate["yes"] == pytest.approx(closed, abs=1e-9)
            assert low <= result.estimate["yes"] <= high
    # 95% intervals over 200 seeded surveys: 190 expected; fewer than 181 has probability 0.3% if they hold
    assert covered >= 181, covered


def test_build_without_a_survey_checks_plain_texts():
    mechanism = build("yes_no", {"design": "crosswise", "companion": COMPANION, "p": "1/4"}, "q")
    assert mechanism.params == {"design": "crosswise", "companion": COMPANION, "p": "1/4"}
    with pytest.raises(ValueError, match="q.companion: required"):
        build("yes_no", {"design": "triangular", "companion": 3, "p": "1/4"}, "q")


def test_a_known_share_control_says_whether_the_design_recovered_it():
    from deniable.analysis import estimate

    survey = Survey.from_dict({"id": "s", "title": "S", "questions": [
        {"id": "atlantis", "type": "yes_no", "text": "Have you ever visited the country of Freedonia?", "control": {"share": 0},
         "privacy": {"design": "crosswise", "companion": COMPANION, "p": "1/4"}}]})
    question = survey.questions["atlantis"]
    assert question.control == 0 and survey.to_dict()["questions"][0]["control"] == {"share": "0"}
    rng = Seeded(3)
    honest = estimate(question, [question.mechanism.randomize("no", rng) for _ in range(2000)])
    assert honest.control["recovered"] and honest.notes[0].startswith("control question: its known share 0 is inside")
    # respondents who say "yes" regardless: the control catches it
    careless = estimate(question, [question.mechanism.randomize("yes" if i % 5 == 0 else "no", rng) for i in range(2000)])
    assert not careless.control["recovered"] and careless.control["p_value"] < 0.001
    assert careless.notes[0].startswith("CONTROL FAILED") and "CONTROL FAILED" in careless.summary().as_text()
    for bad, message in (({"share": 2}, "control.share: must be between 0 and 1"), ({"rate": 0}, "the one key 'share'")):
        with pytest.raises(SpecError, match=message):
            Survey.from_dict(
                {"id": "s", "title": "S", "questions": [{"id": "q", "type": "yes_no", "text": "?", "control": bad}]})
