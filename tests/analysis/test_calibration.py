"""Intervals at the faces of the simplex: the likelihood-ratio cut calibrated at the estimate and at each end, the
point-mass test, and the closed-form standard errors of interior estimates (`analysis.calibration`)."""

import warnings

import numpy as np
import pytest

from deniable.analysis import bootstrap, calibration, channels, likelihood
from deniable.analysis.from_counts import _grid, estimate_counts
from deniable.client import Survey
from tests.support.validation import simulated_coverage


def mechanism(kind: str, k: int, epsilon):
    spec = {"ordinal": {"type": "ordinal", "options": [f"o{i}" for i in range(k)],
                        "privacy": {"design": "ordinal", "epsilon": epsilon}},
            "laplace": {"type": "number", "min": 0, "max": k - 1, "step": 1,
                        "privacy": {"design": "laplace", "epsilon": epsilon}}}[kind]
    return Survey.from_dict({"id": "s", "title": "s", "questions": [{"id": "q", "text": "?", **spec}]}) \
        .questions["q"].mechanism


def test_each_survey_s_statistic_is_its_own_profile_likelihood_ratio():
    """The statistic of every bootstrapped survey, for a share (the reduced simplex problem) and for the mean (the
    tilted search), against the survey's profile computed independently (`profile_loglikelihood`'s offset problem;
    for the mean, the tilt whose maximiser has the target mean, found by bisection one survey at a time)."""
    scale = mechanism("laplace", 6, 1)
    q = channels.channel_matrix(scale)
    counts = np.random.default_rng(4).multinomial(800, q @ np.array([0.4, 0.3, 0.2, 0.1, 0.0, 0.0]))
    pi, _ = likelihood.maximise(q, counts)
    calibrated = calibration.at_estimate(q, counts, pi)
    boot = calibrated.bootstrap
    for j in (0, 3, 5):
        statistics = calibrated.statistics(np.eye(6)[j])
        for b in range(0, 400, 57):
            peak = likelihood.loglikelihood(q, boot.draws[b], boot.fits[b])
            direct = 2 * (peak - likelihood.profile_loglikelihood(q, boot.draws[b], j, float(pi[j])))
            assert statistics[b] == pytest.approx(max(direct, 0.0), abs=1e-6)
    grid = np.arange(6.0)
    statistics = calibrated.statistics(grid)
    target = float(grid @ pi)
    for b in range(0, 400, 97):
        low, high = -50.0, 50.0
        for _ in range(80):  # the tilt whose maximiser has the target mean
            tilt = (low + high) / 2
            point, _ = likelihood.maximise(q, boot.draws[b], tilt=tilt * grid)
            low, high = (tilt, high) if grid @ point < target else (low, tilt)
        peak = likelihood.loglikelihood(q, boot.draws[b], boot.fits[b])
        assert statistics[b] == pytest.approx(2 * (peak - likelihood.loglikelihood(q, boot.draws[b], point)), abs=1e-4)


def test_the_batched_tilted_fit_meets_the_single_fit():
    """`bootstrap.maximise_each` with a tilt per survey: each fit is `likelihood.maximise`'s with that tilt."""
    q = channels.channel_matrix(mechanism("ordinal", 5, 1))
    rng = np.random.default_rng(8)
    draws = rng.multinomial(500, q @ np.array([0.1, 0.2, 0.4, 0.2, 0.1]), size=20).astype(float)
    tilts = rng.normal(0, 30, size=(20, 1)) * np.arange(5.0)
    fits = bootstrap.maximise_each(q, draws, np.full((20, 5), 0.2), tilt=tilts)
    for row in range(20):
        alone, certificate = likelihood.maximise(q, draws[row], tilt=tilts[row])
        assert certificate.converged
        assert fits[row] == pytest.approx(alone, abs=1e-6)


def test_an_interior_estimate_takes_the_information_and_chi_squared_cut():
    """Every share many standard errors from 0: the standard errors are the inverse information's (closed form, no
    bootstrap) and the intervals χ²₁'s; the notes say nothing of a face."""
    scale = mechanism("ordinal", 4, 3)
    counts = np.array([5000, 5200, 4900, 5100])
    result = estimate_counts(scale, counts, 0.95, None, "q")
    q = channels.channel_matrix(scale)
    pi = result.table["estimate"].to_numpy()
    assert calibration.is_interior(q, pi, 20200)
    assert result.table["se"].to_numpy() == pytest.approx(
        np.sqrt(np.diag(channels.fitted_covariance(q, pi)) / 20200), rel=1e-12)
    assert not any("face" in note for note in result.notes)


def test_near_a_face_the_notes_say_how_the_intervals_were_made():
    scale = mechanism("ordinal", 5, 1)
    result = estimate_counts(scale, np.array([30, 40, 900, 20, 10]), 0.95, None, "q")
    (note,) = [note for note in result.notes if "face of the simplex" in note]
    assert "400 surveys drawn at the estimate and at each end" in note and "±1.1%" in note


def test_the_point_mass_law_is_a_bootstrap_at_the_vertex_and_remembered():
    """At a point mass the statistic runs far above χ²₁ (a mixture up to k − 1 degrees of freedom): its quantile is
    taken from surveys drawn there, once per channel, n and level."""
    q = channels.channel_matrix(mechanism("ordinal", 11, 3))
    calibration.VertexSurveys._KEPT.clear()
    quantile = calibration.vertex_quantile(q, 500, 5, 0.95)
    assert quantile > 2 * likelihood.likelihood_cut(0.95)  # above χ²₁'s 3.84
    assert len(calibration.VertexSurveys._KEPT) == 1
    assert calibration.vertex_quantile(q, 500, 5, 0.95) == quantile
    assert len(calibration.VertexSurveys._KEPT) == 1


@pytest.mark.parametrize("kind, k, epsilon, n, answer", [("laplace", 31, 1, 200, 3), ("ordinal", 11, 3, 500, 5),
                                                         ("laplace", 101, 1, 10_000, 40)])
def test_a_point_mass_test_decides_as_the_whole_bootstrap_would(kind, k, epsilon, n, answer):
    """The bounds EM gives each survey's statistic hold, and the test they decide is the one the quantile of every
    survey's fitted statistic gives, at the quantile itself, a hair either side and across the law's range; most
    surveys are never fitted."""
    q = channels.channel_matrix(mechanism(kind, k, epsilon))
    vertex = np.eye(k)[answer]
    tested = calibration.VertexSurveys(q, n, answer)
    # Seeded as the point mass's test seeds its surveys, and as many (its first block: no more are drawn for it)
    whole = bootstrap.bootstrap(q, vertex, n, len(tested.draws), counts=vertex)
    at_vertex = calibration.loglikelihoods(q, whole.draws, np.broadcast_to(vertex, whole.fits.shape))
    statistics = np.clip(2 * (calibration.loglikelihoods(q, whole.draws, whole.fits) - at_vertex), 0, None)
    quantile = calibration._rank_quantile(statistics, 0.95)
    assert np.array_equal(tested.draws, whole.draws)
    probes = [*np.quantile(statistics, [0.05, 0.5, 0.8, 0.9, 0.99]), quantile - 1e-6, quantile, quantile + 1e-6,
              statistics.max() * 3]
    for statistic in probes:
        assert tested.within(statistic, 0.95) == (statistic <= quantile), statistic
    fitted = tested.exact
    assert fitted.sum() < len(statistics)
    np.testing.assert_allclose(tested.low[fitted], statistics[fitted], atol=1e-9)
    assert (tested.low <= statistics + 1e-6).all() and (tested.high >= statistics - 1e-6).all()
    assert tested.quantile(0.95) == pytest.approx(quantile, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("kind, k, epsilon, n, truth, reps, plain_below, floor", [
    # A point mass in the middle of a 5-point scale (the audit's kind of cell): χ²₁ covered 0.905.
    ("ordinal", 5, 1, 1000, [0, 0, 1, 0, 0], 200, 0.93, 0.94),
    # A U-shape on a 7-point scale at low ε and large n: χ²₁ 0.933 here (0.88 on another seed), calibrated 0.967.
    ("ordinal", 7, 0.5, 10000, [0.5, 0, 0, 0, 0, 0, 0.5], 120, 0.945, 0.95),
    # The end of a number's grid at high ε (shares and the mean).
    ("laplace", 6, 3, 2000, [0, 0, 0, 0, 0, 1], 200, 0.95, 0.95),
])
def test_coverage_on_cells_no_calibration_was_chosen_on(kind, k, epsilon, n, truth, reps, plain_below, floor):
    """``reps`` seeded surveys (Monte Carlo error 1.5–2 points): the published intervals cover at least ``floor`` in
    every answer and the mean, where χ²₁'s cut, on the same surveys, fell below ``plain_below``."""
    warnings.simplefilter("ignore")
    design = "laplace" if kind == "laplace" else "ordinal"
    row = simulated_coverage(design, k, epsilon, n, np.array(truth, dtype=float), reps, 5, uncalibrated=True,
                             simultaneous=False)
    assert row["per-answer (min)"] >= floor, row
    assert row.get("mean", 1.0) >= floor, row
    assert row["χ²₁ per-answer (min)"] < plain_below, row


@pytest.mark.slow
def test_interior_standard_errors_match_the_spread_of_the_estimates():
    """Where the estimate is interior its closed-form SE is the real spread: 300 surveys, within 10%."""
    scale = mechanism("ordinal", 4, 2)
    q = channels.channel_matrix(scale)
    truth = np.array([0.3, 0.25, 0.25, 0.2])
    estimates, ses = [], []
    for counts in np.random.default_rng(3).multinomial(20000, q @ truth, size=300):
        result = _grid(scale, counts, 0.95, None, "q", False)
        estimates.append(result.table["estimate"].to_numpy())
        ses.append(result.table["se"].to_numpy())
        assert calibration.is_interior(q, estimates[-1], 20000)
    ratio = np.sqrt(np.mean(np.square(ses), axis=0)) / np.std(estimates, axis=0)
    assert ratio == pytest.approx(np.ones(4), abs=0.1)


def _number(top: int, epsilon: float = 1.0):
    q = channels.channel_matrix(Survey.from_dict({"id": "s", "title": "s", "questions": [
        {"id": "q", "text": "?", "type": "number", "min": 0, "max": top, "step": 1,
         "privacy": {"design": "laplace", "epsilon": epsilon}}]}).questions["q"].mechanism)
    known = channels.structure(q)
    return q, channels.FoldedGeometric(known.alpha, known.points)


def test_a_number_s_structure_alone_is_bootstrapped_tested_and_its_mean_s_interval_calibrated_as_its_matrix():
    """The bootstrap, the fit test and a long grid's interval of the mean take a number's channel as its structure
    alone, and give the written-out matrix's figures: the same surveys fitted to the same bits, the same G² to
    round-off and p, the same interval. (A bare structure's surveys are seeded by its four numbers: another draw than
    the matrix's, which is never written out where the structure alone is used.)"""
    from deniable.analysis.fit import saturated_test

    q, bare = _number(300)
    rng = np.random.default_rng(4)
    counts = rng.multinomial(3_000, q @ rng.dirichlet(np.full(q.shape[1], 0.4)))
    pi, _ = likelihood.certified_maximum(q, counts)
    surveys = bootstrap.bootstrap(bare, pi, 3_000, replicates=12, counts=counts)
    assert np.array_equal(surveys.fits, bootstrap.fit_surveys(q, surveys.draws, pi))
    assert not np.array_equal(surveys.draws, bootstrap.bootstrap(q, pi, 3_000, replicates=12, counts=counts).draws)
    found, expected = saturated_test(bare, counts, pi), saturated_test(q, counts, pi)
    assert (found.df, found.pvalue, found.method) == (expected.df, expected.pvalue, expected.method)
    assert found.statistic == pytest.approx(expected.statistic, rel=1e-12)
    grid = np.arange(q.shape[1], dtype=float)
    assert calibration.interval(bare, counts, pi, grid, 0.95, calibration.at_estimate(bare, counts, pi)) == \
        calibration.interval(q, counts, pi, grid, 0.95, calibration.at_estimate(q, counts, pi))

