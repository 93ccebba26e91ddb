"""Split ballot on the client: the spec, the arm drawn before the answer, reports that carry their arm."""

import pytest

from deniable.client import AnswerError, ReportError, SpecError, Survey, validate_reports
from tests.conftest import EXAMPLES

COIN = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}


def survey_with(split, qtype="yes_no", privacy=COIN, **extra):
    question = {"id": "q", "type": qtype, "text": "?", "privacy": privacy, "split_ballot": split, **extra}
    return Survey.from_dict({"id": "s", "title": "S", "questions": [question]})


@pytest.mark.parametrize("split,qtype,privacy,extra,message", [
    ({"direct": "1/4"}, "choice", {"design": "k_rr", "epsilon": 1}, {"options": ["a", "b", "c"]}, "only yes/no questions"),
    ({"direct": "1/4"}, "yes_no", "none", {}, "a public question is asked directly already"),
    ({"direct": 0}, "yes_no", COIN, {}, "must be above 0 and below 1"),
    ({"direct": 1}, "yes_no", COIN, {}, "must be above 0 and below 1"),
    ({"direct": "3/2"}, "yes_no", COIN, {}, "must be above 0 and below 1"),
    ({"direct": "a quarter"}, "yes_no", COIN, {}, "question 'q'.split_ballot.direct: expected a number"),
    ({"share": "1/4"}, "yes_no", COIN, {}, "the one key 'direct'"),
    ("1/4", "yes_no", COIN, {}, "the one key 'direct'"),
])
def test_a_bad_split_ballot_is_a_spec_error_naming_the_field(split, qtype, privacy, extra, message):
    with pytest.raises(SpecError, match="split_ballot") as error:
        survey_with(split, qtype, privacy, **extra)
    assert message in str(error.value)


def test_the_spec_keeps_its_split_ballot_and_states_it():
    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    question = survey.questions["dodged"]
    assert question.to_dict()["split_ballot"] == {"direct": "1/4"}
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash
    # ε is the randomized arm's (the arm is drawn before the answer); the statement and the warnings say the rest
    assert question.epsilon == survey_with(None).questions["q"].epsilon
    assert "25% of respondents, chosen at random by the device before the question is shown" in question.privacy_statement()
    assert any("split ballot asks 0.25 of respondents directly" in w for w in survey.warnings)
    assert "split ballot: 0.25 asked directly" in survey.privacy_summary()
    plain = dict(survey.to_dict()["questions"][1])
    del plain["split_ballot"]
    assert Survey.from_dict({**survey.to_dict(), "questions": [plain]}).hash != survey.hash


def test_the_arm_is_a_csprng_draw_with_the_stated_share():
    split = Survey.from_file(EXAMPLES / "split_ballot.yaml").questions["took"].split_ballot  # direct: 1/3
    n = 30_000
    direct = sum(split.assign_arm() == "direct" for _ in range(n))
    assert abs(direct - n / 3) < 4 * (n * (1 / 3) * (2 / 3)) ** 0.5
    # the integer rule the JS twin shares: draw < numerator of the reduced fraction
    assert [split.assign_arm(type("Draw", (), {"randbelow": lambda self, d, v=v: v})()) for v in range(3)] == \
        ["direct", "randomized", "randomized"]


def test_randomize_needs_the_arm_shown_before_the_answer():
    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    with pytest.raises(AnswerError, match="needs the arm its respondent was shown before answering"):
        survey.randomize({"dodged": "yes"})
    assert survey.randomize({"dodged": "yes"}, arms={"dodged": "direct"}) == {"dodged": {"arm": "direct", "report": "yes"}}
    randomized = survey.randomize({"dodged": "yes"}, arms={"dodged": "randomized"})["dodged"]
    assert randomized["arm"] == "randomized" and randomized["report"] in ("yes", "no")
    # the respondent randomizes: the choice goes as typed in the randomized arm; a direct answer is yes or no
    assert survey.randomize({"took": "same"}, arms={"took": "randomized"}) == {"took": {"arm": "randomized", "report": "same"}}
    with pytest.raises(AnswerError, match="answers.took"):
        survey.randomize({"took": "same"}, arms={"took": "direct"})
    cheated = {"group": "a", "report": "no"}
    assert survey.randomize({"cheated": cheated}, arms={"cheated": "randomized"}) == \
        {"cheated": {"arm": "randomized", "group": "a", "report": "no"}}
    for arms, message in [({"region": "direct"}, "no split ballot"), ({"dodged": "both"}, "is not an arm")]:
        with pytest.raises(AnswerError, match=message):
            survey.randomize({"dodged": "yes"}, arms=arms)


def test_simulated_respondents_draw_their_arm():
    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    reports = [survey.simulate({"dodged": "yes", "cheated": "no"}) for _ in range(4000)]
    direct = sum(r["dodged"]["arm"] == "direct" for r in reports)
    assert abs(direct - 1000) < 4 * (4000 * 0.25 * 0.75) ** 0.5
    assert all(r["dodged"]["report"] == "yes" for r in reports if r["dodged"]["arm"] == "direct")
    assert {tuple(sorted(r["cheated"])) for r in reports} == {("arm", "report"), ("arm", "group", "report")}


@pytest.mark.parametrize("report,message", [
    ({"arm": "direct", "report": "maybe"}, "direct answer 'maybe' is not one of yes, no"),
    ({"arm": "sideways", "report": "yes"}, "arm 'sideways' is not one of direct, randomized"),
    ({"arm": "direct", "report": "yes", "group": "a"}, "a direct-arm report holds only 'arm' and 'report'"),
    ({"arm": "randomized", "report": "same"}, "report 'same' is not one of"),
    ("yes", "must be an object with the respondent's 'arm'"),
    ({"report": "yes"}, "must be an object with the respondent's 'arm'"),
])
def test_reports_carry_a_valid_arm(report, message):
    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    with pytest.raises(ReportError, match="reports.dodged") as error:
        validate_reports(survey, {"dodged": report})
    assert message in str(error.value)


def test_a_direct_arm_report_on_a_question_without_a_split_ballot_is_refused():
    survey = survey_with(None)
    with pytest.raises(ReportError, match=r"reports\.q: report \{'arm': 'direct'"):
        validate_reports(survey, {"q": {"arm": "direct", "report": "yes"}})
