"""The split ballot's comparison, tested statistically: known truths, many simulated surveys, the coverage of
the difference's interval and the size and power of the one-sided test; the design's estimate is the randomized
arm's alone; the edge cases (no direct reports, every direct answer the same) give figures that mean something."""

import math
import secrets

import numpy as np
import pytest
from scipy import stats

from deniable import storage
from deniable.analysis import AnalysisError, channels, estimate, load
from deniable.client import Survey
from tests.conftest import EXAMPLES

SURVEY = Survey.from_file(EXAMPLES / "split_ballot.yaml")


def reports_from(question, randomized_counts, direct_yes, direct_n):
    """A list of report values with these counts: the randomized arm over the design's reports, then the direct arm."""
    split = question.split_ballot
    randomized = [split.wrap("randomized", r) for r, c in zip(question.mechanism.reports, randomized_counts) for _ in range(c)]
    direct = [{"arm": "direct", "report": "yes"}] * direct_yes + [{"arm": "direct", "report": "no"}] * (direct_n - direct_yes)
    return randomized + direct


def simulate(question, rng, n, truth, direct_truth, classes=None):
    """One survey of n: arms drawn at the split's share; the randomized arm through the exact channel (at the latent
    classes ``classes`` for a design that has them), the direct arm answering yes with ``direct_truth``."""
    direct_n = rng.binomial(n, float(question.split_ballot.direct))
    q = channels.channel_matrix(question.mechanism)
    shares = np.array(classes if classes is not None else [truth, 1 - truth])
    counts = rng.multinomial(n - direct_n, q @ shares)
    return reports_from(question, counts, rng.binomial(direct_n, direct_truth), direct_n)


def test_the_design_estimates_from_its_randomized_arm_only():
    question = SURVEY.questions["dodged"]
    reports = reports_from(question, [130, 270], direct_yes=20, direct_n=100)
    result = estimate(question, reports)
    alone = estimate(question.mechanism, ["yes"] * 130 + ["no"] * 270)
    assert result.n == 400 and result.estimate.to_dict() == alone.estimate.to_dict()
    table = result.split_ballot
    assert list(table.index) == ["direct", "randomized", "difference"]
    assert table.loc["direct", "estimate"] == 0.2 and table.loc["direct", "n"] == 100
    assert table.loc["direct", "se"] == pytest.approx(math.sqrt(0.2 * 0.8 / 100))
    assert table.loc["randomized", "estimate"] == result.table.loc["yes", "estimate"]
    assert table.loc["difference", "estimate"] == pytest.approx(table.loc["randomized", "estimate"] - 0.2)
    assert table.loc["difference", "se"] == pytest.approx(math.hypot(table.loc["direct", "se"], table.loc["randomized", "se"]))
    z = table.loc["difference", "estimate"] / table.loc["difference", "se"]
    assert table.loc["difference", "p_value"] == pytest.approx(stats.norm.sf(z))
    for arm, row in table.iterrows():  # every interval holds its estimate
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"], arm
    text = str(result.summary())
    assert "Split ballot ('yes'): asked directly 0.2000 (n = 100)" in text and "more is better" in text


@pytest.mark.parametrize("direct_yes,direct_n", [(0, 50), (50, 50), (0, 1), (1, 1)])
def test_every_direct_answer_the_same_still_gives_an_interval_that_holds_it(direct_yes, direct_n):
    question = SURVEY.questions["dodged"]
    table = estimate(question, reports_from(question, [60, 140], direct_yes, direct_n)).split_ballot
    direct = table.loc["direct"]
    assert direct["estimate"] == direct_yes / direct_n and direct["se"] == 0
    assert 0 <= direct["ci_low"] <= direct["estimate"] <= direct["ci_high"] <= 1 and direct["ci_high"] > direct["ci_low"]
    assert 0 <= table.loc["difference", "p_value"] <= 1


def test_no_direct_reports_yet_is_said_not_guessed():
    question = SURVEY.questions["dodged"]
    result = estimate(question, reports_from(question, [60, 140], 0, 0))
    assert math.isnan(result.split_ballot.loc["difference", "estimate"])
    assert "no direct-arm reports yet" in str(result.summary())


def test_no_randomized_reports_yet_is_said_so(tmp_path):
    """Early in fieldwork every report may come from the direct arm: the refusal says that, not "no reports"."""
    question = SURVEY.questions["dodged"]
    with pytest.raises(AnalysisError, match=r"dodged: no reports from the randomized arm yet \(3 from the direct arm\)"):
        estimate(question, reports_from(question, [0, 0], 1, 3))
    path = str(tmp_path / "early.db")
    with storage.Store(path) as store:
        store.add_survey(SURVEY)
        for report in reports_from(question, [0, 0], 1, 3):
            store.submit(SURVEY.id, SURVEY.hash, secrets.token_hex(8), {"dodged": report})
    with pytest.raises(AnalysisError, match=r"no reports from the randomized arm yet \(3 from the direct arm\)"):
        estimate(load(db=path, survey_id=SURVEY.id), "dodged")


@pytest.mark.slow
@pytest.mark.parametrize("qid,classes", [("dodged", None), ("took", None), ("cheated", [0.3, 0.7, 0.0])])
def test_the_difference_covers_and_the_test_has_its_size_when_both_arms_are_honest(qid, classes):
    """400 surveys of 1,500 with the same truth in both arms: the one-sided test rejects about 5% of the time
    (at most 5% + 3 Monte Carlo SEs), and the difference's 95% interval covers 0 at least 93% of the time."""
    question, rng = SURVEY.questions[qid], np.random.default_rng(20)
    rejected = covered = 0
    runs = 400 if qid != "cheated" else 150
    for _ in range(runs):
        table = estimate(question, simulate(question, rng, 1500, 0.3, 0.3, classes)).split_ballot
        rejected += table.loc["difference", "p_value"] < 0.05
        covered += table.loc["difference", "ci_low"] <= 0 <= table.loc["difference", "ci_high"]
    assert rejected / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)
    assert covered / runs >= 0.93


def test_a_direct_arm_that_hides_yes_is_found_and_the_difference_covered():
    """A population with 30% 'yes' of whom 40% say 'no' when asked directly (direct share 18%): the randomized
    arm recovers 30%, the difference's interval covers the true 12 points, and the test finds it nearly always."""
    question, rng = SURVEY.questions["dodged"], np.random.default_rng(21)
    runs, covered, found = 300, 0, 0
    for _ in range(runs):
        table = estimate(question, simulate(question, rng, 2000, 0.3, 0.18)).split_ballot
        covered += table.loc["difference", "ci_low"] <= 0.12 <= table.loc["difference", "ci_high"]
        found += table.loc["difference", "p_value"] < 0.05
    assert covered / runs >= 0.93
    assert found / runs >= 0.95


@pytest.mark.slow
def test_planning_predicts_the_spread_of_the_difference():
    """The planned SE of the difference (both shares at 1/2, the widest) against the SD of 400 simulated differences."""
    from deniable.analysis import plan

    question, rng = SURVEY.questions["dodged"], np.random.default_rng(22)
    [planned] = [p for p in plan(SURVEY, 2000) if p.question_id == "dodged"]
    differences = [estimate(question, simulate(question, rng, 2000, 0.5, 0.5)).split_ballot.loc["difference", "estimate"]
                   for _ in range(400)]
    assert planned.split_ballot["direct_n"] == 500 and planned.split_ballot["randomized_n"] == 1500
    assert np.std(differences) == pytest.approx(planned.split_ballot["difference_se"], rel=0.1)
