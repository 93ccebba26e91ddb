"""The correlation of two true answers when either or both are randomized (`correlation`): the joint table is the
certified maximum likelihood and equals the moment estimate through both channels' inverse wherever it is interior;
known correlations are covered over simulated surveys; a public number goes by moments; the interval holds the
estimate inside (−1, 1); and what has no correlation is refused."""

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import AnalysisError, SampleDesign, channels, correlation, load
from tests.analysis import simulated_predictor as simulated

#: P(dodged, cheated) of the true answers: (yes, yes), (yes, no), (no, yes), (no, no)
JOINT = np.array([0.2, 0.15, 0.1, 0.55])


def _phi(joint):
    a, b = joint[0] + joint[1], joint[0] + joint[2]
    return (joint[0] - a * b) / np.sqrt(a * (1 - a) * b * (1 - b))


def _two_randomized(rng, n):
    cell = rng.choice(4, size=n, p=JOINT)
    truth_a, truth_b = cell < 2, np.isin(cell, [0, 2])
    p, q = simulated.P, simulated.Q
    frame = simulated.survey(rng, n)
    frame["dodged"] = np.where(rng.random(n) < np.where(truth_a, p, q), "yes", "no")
    frame["cheated"] = np.where(rng.random(n) < np.where(truth_b, p, q), "yes", "no")
    return frame


def test_the_joint_table_is_the_certified_maximum_and_the_moment_estimate_where_interior():
    frame = _two_randomized(np.random.default_rng(1), 3000)
    found = correlation(simulated.loaded(frame), "dodged", "cheated")
    assert found.certificate.converged and found.table.to_numpy().min() > 0
    channel = channels.channel_matrix(simulated.SURVEY.questions["dodged"].mechanism)
    observed = pd.crosstab(frame["dodged"], frame["cheated"]).loc[["yes", "no"], ["yes", "no"]].to_numpy().ravel()
    moments = np.linalg.solve(np.kron(channel, channel), observed / observed.sum())
    assert found.table.to_numpy().ravel() == pytest.approx(moments, abs=1e-9)
    assert found.estimate == pytest.approx(_phi(moments), abs=1e-9)
    assert found.ci_low < found.estimate < found.ci_high and -1 < found.ci_low and found.ci_high < 1


@pytest.mark.slow
def test_known_correlations_are_covered_over_simulated_surveys():
    """80 seeded surveys of 1,500 with φ = 0.42 between two forced-response answers: mean within 3 SE of the truth,
    95% intervals cover in at least 72 (nominal 76)."""
    rng = np.random.default_rng(7)
    truth = _phi(JOINT)
    estimates, covered = [], 0
    for _ in range(80):
        found = correlation(simulated.loaded(_two_randomized(rng, 1500)), "dodged", "cheated")
        estimates.append(found.estimate)
        covered += found.ci_low <= truth <= found.ci_high
    assert abs(np.mean(estimates) - truth) < 3 * np.std(estimates) / np.sqrt(80), (np.mean(estimates), truth)
    assert covered >= 72, covered


def test_a_public_number_goes_by_moments_and_a_design_weights_them():
    frame = simulated.survey(np.random.default_rng(3), 4000, clusters=50)
    data = simulated.loaded(frame)
    found = correlation(data, "trust", "dodged")
    truth = np.corrcoef(frame["truth"].astype(float), frame["trust"])[0, 1]
    assert abs(found.estimate - truth) < 3 * found.se and found.first == "trust" and "moments" in found.method
    weighted = correlation(data, "trust", "dodged", design=SampleDesign(weights="w", clusters="psu"))
    assert weighted.sample == "weights 'w', clusters 'psu'" and weighted.ci_low < weighted.estimate < weighted.ci_high
    # A weight of 2 is a respondent counted twice.
    doubled = pd.concat([frame, frame[frame["w"] == 2]], ignore_index=True)
    assert weighted.estimate == pytest.approx(correlation(simulated.loaded(doubled), "trust", "dodged").estimate,
                                              abs=1e-12)
    for first, second in (("trust", "dodged"), ("dodged", "voted")):  # each respondent their own PSU: the SRS's SE
        alone = correlation(data, first, second, design=SampleDesign(clusters=np.arange(len(frame))))
        plain = correlation(data, first, second)
        assert alone.estimate == pytest.approx(plain.estimate, abs=1e-12) and alone.se == pytest.approx(plain.se)
    # A public yes/no beside a randomized one takes the joint route with an identity channel.
    assert "joint table" in correlation(data, "dodged", "voted").method


@pytest.mark.parametrize("first, second, words", [
    ("dodged", "dodged", "with itself"),
    ("dodged", "psu", None),
    ("trust", "age", "two public numbers"),
])
def test_what_has_no_correlation_here_is_refused(first, second, words):
    data = simulated.loaded(simulated.survey(np.random.default_rng(2), 200))
    if words is None:  # a public number and a randomized yes/no: fine
        assert np.isfinite(correlation(data, first, second).estimate)
        return
    with pytest.raises(AnalysisError, match=words):
        correlation(data, first, second)


def test_an_answer_that_does_not_vary_is_refused():
    frame = simulated.survey(np.random.default_rng(5), 300)
    frame["voted"] = "yes"
    with pytest.raises(AnalysisError, match="not to vary"):
        correlation(load(frame.drop(columns=["truth"]), spec=simulated.SURVEY), "dodged", "voted")
