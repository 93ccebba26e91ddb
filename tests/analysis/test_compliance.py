"""Cheating detection and the stochastic lie detector: known truth, many seeded surveys. The estimates
equal the closed forms in the interior, are certified maxima (checked against an independent optimiser),
cover the truth at their stated level, stay in [0, 1] at the boundaries, and the test of compliance
holds its level and finds cheaters where there are some."""

import random
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize

from deniable.analysis import estimate
from deniable.analysis.compliance import class_matrix
from deniable.client import SpecError, Survey

CDM = {"design": "cheating_detection", "groups": {
    "a": {"yes": "1/3", "randomizer": "If your birthday is in January to April, answer yes; otherwise answer truthfully."},
    "b": {"yes": "2/3", "randomizer": "If your birthday is in January to August, answer yes; otherwise answer truthfully."}}}
SLD = {"design": "stochastic_lie_detector", "groups": {
    "a": {"p": "2/12", "randomizer": "If your birthday is in January or February, answer no; otherwise yes."},
    "b": {"p": "10/12", "randomizer": "If your birthday is in January to October, answer no; otherwise yes."}}}


def question(privacy):
    return Survey.from_dict({"id": "s", "title": "S", "questions": [
        {"id": "q", "type": "yes_no", "text": "Did you?", "privacy": privacy}]}).questions["q"]


class Seeded:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def randbelow(self, n):
        return self.rng.randrange(n)

    def random(self):
        return self.rng.random()


def cdm_reports(mechanism, n, pi, gamma, rng):
    """Honest yes (π) say yes; honest no follow their group's instruction; cheaters (γ) say no regardless."""
    forced = {g: float(Fraction(spec["yes"])) for g, spec in mechanism.params["groups"].items()}
    reports = []
    for _ in range(n):
        group, u = mechanism.assign_group(rng), rng.random()
        if u < pi:
            typed = "yes"
        elif u < 1 - gamma:
            typed = "yes" if rng.random() < forced[group] else "no"
        else:
            typed = "no"
        reports.append({"group": group, "report": typed})
    return reports


def sld_reports(mechanism, n, pi, truthful, rng):
    p = {g: float(Fraction(spec["p"])) for g, spec in mechanism.params["groups"].items()}
    reports = []
    for _ in range(n):
        group = mechanism.assign_group(rng)
        if rng.random() < pi:
            typed = "yes" if rng.random() < truthful else "no"
        else:
            typed = "yes" if rng.random() < 1 - p[group] else "no"
        reports.append({"group": group, "report": typed})
    return reports


def yes_share(reports, group):
    mine = [r["report"] for r in reports if r["group"] == group]
    return mine.count("yes") / len(mine)


def test_cheating_detection_equals_the_closed_form_in_the_interior():
    q = question(CDM)
    reports = cdm_reports(q.mechanism, 3000, 0.3, 0.1, Seeded(1))
    result = estimate(q, reports)
    (p1, p2), (l1, l2) = (1 / 3, 2 / 3), (yes_share(reports, "a"), yes_share(reports, "b"))
    pi, beta = (p2 * l1 - p1 * l2) / (p2 - p1), (l2 - l1) / (p2 - p1)
    assert 0 < pi and 0 < beta and pi + beta < 1  # the interior
    assert result.estimate["yes"] == pytest.approx(pi, abs=1e-7)
    assert result.estimate["no"] == pytest.approx(beta, abs=1e-7)
    assert result.estimate["cheater"] == pytest.approx(1 - pi - beta, abs=1e-7)
    assert result.converged and list(result.table.index) == ["yes", "no", "cheater"]
    test = result.compliance_test
    assert test.hypothesis == "no cheating (γ = 0)" and test.p_value < 0.01
    assert str(test) in result.summary().as_text()


def test_the_lie_detector_equals_the_closed_form_in_the_interior():
    q = question(SLD)
    reports = sld_reports(q.mechanism, 4000, 0.3, 0.8, Seeded(2))
    result = estimate(q, reports)
    (p1, p2), (l1, l2) = (2 / 12, 10 / 12), (yes_share(reports, "a"), yes_share(reports, "b"))
    pi = 1 + (l2 - l1) / (p2 - p1)
    t = (l2 * (1 - p1) - l1 * (1 - p2)) / ((l2 - l1) + (p2 - p1))
    assert 0 < pi < 1 and 0 < t < 1
    assert result.estimate["yes"] == pytest.approx(pi, abs=1e-7)
    assert result.estimate["no"] == pytest.approx(1 - pi, abs=1e-7)
    assert result.estimate["truthful"] == pytest.approx(t, abs=1e-6)
    assert result.compliance_test.hypothesis == "no lying (t = 1)"


@pytest.mark.parametrize("privacy,sample", [(CDM, lambda m, rng: cdm_reports(m, 1500, 0.2, 0.15, rng)),
                                            (SLD, lambda m, rng: sld_reports(m, 1500, 0.25, 0.7, rng))])
def test_the_estimate_is_the_maximum_by_an_independent_optimiser(privacy, sample):
    q = question(privacy)
    reports = sample(q.mechanism, Seeded(5))
    result = estimate(q, reports)
    matrix = class_matrix(q.mechanism)
    counts = result.counts

    def negative(z):  # softmax keeps the shares on the simplex without constraints
        theta = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        return -float(counts @ np.log(matrix @ theta + 1e-300))

    best = optimize.minimize(negative, np.zeros(3), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                                                     "maxiter": 20000})
    theta = np.exp(best.x - best.x.max()) / np.exp(best.x - best.x.max()).sum()
    ours = result.estimate.to_numpy()
    if q.mechanism.design == "cheating_detection":
        assert ours == pytest.approx(theta, abs=2e-4)
    else:
        assert ours[0] == pytest.approx(theta[0] + theta[1], abs=2e-4)
    assert result.certificate.kkt_residual < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("privacy,truth,sample", [
    (CDM, {"yes": 0.3, "no": 0.6, "cheater": 0.1}, lambda m, rng: cdm_reports(m, 1000, 0.3, 0.1, rng)),
    (CDM, {"yes": 0.0, "no": 0.8, "cheater": 0.2}, lambda m, rng: cdm_reports(m, 1000, 0.0, 0.2, rng)),
    (SLD, {"yes": 0.3, "no": 0.7, "truthful": 0.8}, lambda m, rng: sld_reports(m, 1000, 0.3, 0.8, rng)),
])
def test_intervals_cover_the_truth_and_stay_in_the_unit_interval(privacy, truth, sample):
    """200 seeded surveys of 1000: each row's 95% interval covers its truth at least 181 times (190 expected;
    fewer than 181 has probability 0.3% if the intervals hold), and every interval lies in [0, 1] around its
    estimate, at the boundary (π = 0) too."""
    q = question(privacy)
    covered = dict.fromkeys(truth, 0)
    rng = Seeded(17)
    for _ in range(200):
        result = estimate(q, sample(q.mechanism, rng))
        table = result.table
        assert ((table["ci_low"] >= 0) & (table["ci_high"] <= 1)).all()
        estimates = table["estimate"].dropna()
        assert ((table.loc[estimates.index, "ci_low"] <= estimates + 1e-12)
                & (estimates <= table.loc[estimates.index, "ci_high"] + 1e-12)).all()
        for row, value in truth.items():
            covered[row] += table.loc[row, "ci_low"] - 1e-9 <= value <= table.loc[row, "ci_high"] + 1e-9
    assert all(count >= 181 for count in covered.values()), covered


@pytest.mark.slow
def test_the_compliance_test_holds_its_level_and_finds_cheaters():
    q = question(CDM)
    rng = Seeded(23)
    null_p = [estimate(q, cdm_reports(q.mechanism, 800, 0.3, 0.0, rng)).compliance_test.p_value for _ in range(200)]
    assert np.mean(np.array(null_p) < 0.05) <= 0.09  # 5% nominal; 200 surveys
    found = [estimate(q, cdm_reports(q.mechanism, 3000, 0.3, 0.1, rng)).compliance_test.p_value for _ in range(20)]
    assert np.mean(np.array(found) < 0.05) >= 0.8


def test_cheaters_bias_forced_response_but_not_cheating_detection():
    """The attack: 10% of the population are yes-holders who answer "no" whatever they are told. Forced
    response estimates π about 0.1 too low; cheating detection recovers π and γ within their intervals."""
    forced = question({"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"})
    rng = Seeded(31)
    honest_yes, cheaters, n = 0.2, 0.1, 4000
    fr = []
    for _ in range(n):
        u = rng.random()
        fr.append("no" if honest_yes <= u < honest_yes + cheaters else
                  forced.mechanism.randomize("yes" if u < honest_yes else "no", rng))
    biased = estimate(forced, fr)
    assert biased.estimate["yes"] < honest_yes + cheaters - 0.07
    cdm = question(CDM)
    result = estimate(cdm, cdm_reports(cdm.mechanism, n, honest_yes, cheaters, rng))
    for row, value in {"yes": honest_yes, "cheater": cheaters}.items():
        assert result.table.loc[row, "ci_low"] <= value <= result.table.loc[row, "ci_high"], (row, result.table)


@pytest.mark.parametrize("privacy,message", [
    ({"design": "cheating_detection", "groups": {"a": {"yes": "1/3", "randomizer": "r"}, "b": {"yes": "1/3", "randomizer": "s"}}},
     "every group forces 'yes' and 'no' in the same proportion"),
    ({"design": "cheating_detection", "groups": {"a": {"yes": "1/3", "randomizer": "r"}}}, "at least two groups"),
    ({"design": "cheating_detection", "groups": {"a": {"yes": "2/3", "no": "1/3", "randomizer": "r"},
                                                 "b": {"yes": "1/3", "randomizer": "s"}}}, "yes \\+ no must be below 1"),
    ({"design": "cheating_detection", "groups": {"a": {"yes": "1/3"}, "b": {"yes": "2/3", "randomizer": "s"}}},
     "groups.a.randomizer: required"),
    ({"design": "cheating_detection", "groups": {"a\n": {"yes": "1/3", "randomizer": "r"}, "b": {"yes": "2/3", "randomizer": "s"}}},
     "groups: must be 1-64 letters"),
    ({"design": "stochastic_lie_detector", "groups": {"a": {"p": "1/2", "randomizer": "r"}, "b": {"p": "1/2", "randomizer": "s"}}},
     "every group has the same p"),
    ({"design": "stochastic_lie_detector", "groups": {"a": {"p": 0, "randomizer": "r"}, "b": {"p": "1/2", "randomizer": "s"}}},
     "groups.a.p: must be above 0"),
])
def test_unidentifiable_or_malformed_groups_are_refused(privacy, message):
    with pytest.raises(SpecError, match=message):
        question(privacy)


def test_near_a_boundary_the_intervals_are_the_joint_regions_projection():
    """With no cheaters (γ = 0 on its boundary) the intervals use the χ²₂ cut and say so, each containing the
    χ²₁ profile interval; far from every boundary (a large survey, all classes well inside) they are the
    χ²₁ profile intervals, with no such note."""
    from scipy import stats

    from deniable.analysis import likelihood
    from deniable.analysis.compliance import class_matrix

    q = question(CDM)
    near = estimate(q, cdm_reports(q.mechanism, 1000, 0.3, 0.0, Seeded(41)))
    assert any("within 3 standard errors of the boundary" in note for note in near.notes)
    matrix, theta = class_matrix(q.mechanism), near.table["estimate"].to_numpy()
    narrow = likelihood.likelihood_cut(0.95)
    assert float(stats.chi2.ppf(0.95, 2) / 2) > narrow
    for row, unit in zip(near.table.index, np.eye(3)):
        low, high = likelihood.profile_interval(matrix, near.counts, theta, unit, narrow)
        assert near.table.loc[row, "ci_low"] <= max(low, 0) + 1e-9 and min(high, 1) - 1e-9 <= near.table.loc[row, "ci_high"]
    far = estimate(q, cdm_reports(q.mechanism, 20_000, 0.3, 0.3, Seeded(42)))
    assert not any("boundary" in note for note in far.notes)
    theta = far.table["estimate"].to_numpy()
    for row, unit in zip(far.table.index, np.eye(3)):
        low, high = likelihood.profile_interval(matrix, far.counts, theta, unit, narrow)
        assert far.table.loc[row, ["ci_low", "ci_high"]].tolist() == pytest.approx([low, high], abs=1e-9)


@pytest.mark.slow
def test_a_cell_where_the_profile_interval_fell_short_now_covers():
    """The lie detector with groups 1/4 and 3/4, no carriers (π = 0, t unidentified), n = 2000: the χ²₁ profile
    interval of π covered 91.7% of 400 surveys in the validation grid; 300 surveys here must reach 94%."""
    from deniable.analysis.compliance import class_matrix, estimate_compliance

    q = question({"design": "stochastic_lie_detector", "groups": {"a": {"p": "1/4", "randomizer": "…"},
                                                                   "b": {"p": "3/4", "randomizer": "…"}}})
    matrix = class_matrix(q.mechanism)
    rng, covered = np.random.default_rng(43), 0
    for counts in rng.multinomial(2000, matrix @ np.array([0.0, 0.0, 1.0]), size=300):
        table = estimate_compliance(q.mechanism, counts, 0.95, None, None)[0]
        covered += table.loc["yes", "ci_low"] <= 1e-9
    assert covered / 300 >= 0.94
