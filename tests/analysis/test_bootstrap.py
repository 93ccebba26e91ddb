"""The standard error of an ordinal or numeric estimate is a parametric bootstrap of the fit itself
(analysis/bootstrap.py): its batched solver must give the fits the estimate's own solver gives, certified."""

import numpy as np
import pytest

from deniable.analysis import bootstrap, channels, estimate, likelihood
from tests.analysis.test_estimates import question

DESIGNS = [
    {"type": "ordinal", "options": list("abcd"), "privacy": {"design": "ordinal", "epsilon": 0.5}},
    {"type": "ordinal", "options": list("abcdefg"), "privacy": {"design": "ordinal", "epsilon": 2}},
    {"type": "number", "min": 0, "max": 4, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
    {"type": "number", "min": 0, "max": 20, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
]


@pytest.mark.parametrize("spec", DESIGNS)
@pytest.mark.parametrize("n", [1, 30, 2000])
def test_the_batched_fits_are_the_certified_maxima(spec, n):
    q = channels.channel_matrix(question(**spec).mechanism)
    k = q.shape[1]
    skewed = np.r_[0.8, np.zeros(k - 2), 0.2]  # zeros inside the truth: fits on the boundary
    for truth in (np.full(k, 1 / k), skewed):
        draws = np.random.default_rng(n).multinomial(n, q @ truth, size=60).astype(float)
        fits, certified = bootstrap._batched_maximise(q, draws, truth)
        assert certified.mean() >= 0.9
        for counts, fit, ok in zip(draws, fits, certified):
            if not ok:
                continue
            assert likelihood.certify(q, counts, fit).converged  # an independent check of the KKT conditions
            alone = likelihood.maximise(q, counts)[0]
            assert likelihood.loglikelihood(q, counts, fit) == pytest.approx(likelihood.loglikelihood(q, counts, alone),
                                                                             abs=1e-6)


def test_the_fits_worked_in_blocks_are_the_fits_worked_whole(monkeypatch):
    """A long face's surveys are fitted a block of rows at a time and read the reports' outer products a block at a
    time (`bootstrap.row_blocks`): the same fits as in one piece, here with blocks of a few rows and reports."""
    q = channels.channel_matrix(question(**DESIGNS[3]).mechanism)
    k = q.shape[1]
    truth = np.r_[0.8, np.zeros(k - 2), 0.2]
    draws = np.random.default_rng(5).multinomial(300, q @ truth, size=40).astype(float)
    whole = bootstrap.maximise_each(q, draws, truth)
    monkeypatch.setattr(bootstrap, "BLOCK_ENTRIES", 3 * k * k)  # 3 reports' outer products, 3·k²/R surveys a block
    assert len(bootstrap.row_blocks(len(draws), q.shape[0])) > 1 and len(bootstrap.row_blocks(q.shape[0], k * k)) > 1
    np.testing.assert_allclose(bootstrap.maximise_each(q, draws, truth), whole, atol=1e-9)
    from deniable.analysis import calibration  # its surveys × reports arrays, a block of surveys at a time

    direct = (draws * np.log(np.clip(whole @ q.T, 1e-300, None))).sum(axis=1)
    np.testing.assert_allclose(calibration.loglikelihoods(q, draws, whole), direct, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("spec", DESIGNS)
def test_a_share_s_standard_error_is_the_spread_of_its_fit_and_never_above_a_half(spec):
    q_ = question(**spec)
    rng = np.random.default_rng(4)
    reports = q_.mechanism.reports
    for n in (1, 12, 400):
        drawn = [reports[i] for i in rng.integers(0, len(reports), n)]
        first, again = estimate(q_, drawn), estimate(q_, drawn)
        se = first.table["se"].to_numpy()
        # a share's SD is at most ½; the bootstrap's sample SD (divisor R − 1) at most ½·√(R/(R − 1))
        source = first.covariance_source
        replicates = len(source.fits) if isinstance(source, bootstrap.Bootstrap) else bootstrap.REPLICATES
        assert np.all(np.isfinite(se)) and se.max() <= 0.5 * np.sqrt(replicates / (replicates - 1))
        assert np.array_equal(se, again.table["se"].to_numpy())  # seeded by the counts: every surface the same
        assert first.covariance == pytest.approx(first.covariance.T)
        assert np.sqrt(np.diag(first.covariance)) == pytest.approx(se)
        if first.mean is not None:
            assert first.mean.ci.low <= first.mean.estimate <= first.mean.ci.high
            # The mean's SE may be read with its face's control variate (`Bootstrap.variance`), the covariance
            # plainly: two readings of the same surveys, each within its own Monte Carlo error (4 of them, joined).
            scores = q_scores(q_)
            plain = np.sqrt(scores @ first.covariance @ scores)
            surveys = first.covariance_source
            error = np.hypot(surveys.relative_error(scores), np.sqrt((_kurtosis(surveys.fits @ scores) - 1)
                                                                        / (4 * len(surveys.fits))))
            assert first.mean.se == pytest.approx(plain, rel=4 * error + 1e-12)


def _kurtosis(values):
    deviations = values - values.mean()
    second = (deviations**2).mean()
    return (deviations**4).mean() / second**2 if second > 0 else 1.0


LONG_NUMBER = {"type": "number", "min": 0, "max": 30, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}}


def _long_grid_estimate():
    """A 0..30 number at ε 1 from 1,000 respondents, most answering 0 to 3: a fit on a few answers (near a face)."""
    q = channels.channel_matrix(question(**LONG_NUMBER).mechanism)
    grid = np.arange(31, dtype=float)
    truth = np.exp(-grid / 3.75)
    truth[0] += truth.sum() / 2
    counts = np.random.default_rng(1).multinomial(1000, q @ (truth / truth.sum())).astype(float)
    return q, grid, counts, likelihood.certified_maximum(q, counts)[0]


def test_the_face_s_linearization_has_mean_zero_and_the_variance_of_the_restricted_inverse_information():
    """The control variate's exact moments, which the mean's SE leans on, checked against 40,000 surveys drawn (not
    fitted): mean within 4 of its Monte Carlo errors of 0, variance within 4 of its (√(2/R) relative, near normal)."""
    q, grid, counts, fit = _long_grid_estimate()
    draws = bootstrap.draw_surveys(q, fit, 1000, 40_000, counts)[1]
    surveys = bootstrap.Bootstrap(q, fit, draws, np.zeros((len(draws), 31)))
    linear, exact = surveys._control(grid)
    assert abs(linear.mean()) <= 4 * np.sqrt(exact / len(linear))
    assert linear.var(ddof=1) == pytest.approx(exact, rel=4 * np.sqrt(2 / len(linear)))
    assert exact == pytest.approx(channels.fitted_variance(q[:, fit > 0], fit[fit > 0], grid[fit > 0]) / 1000)


def test_a_small_survey_s_long_grid_draws_surveys_until_its_mean_se_is_stated_to_2_percent():
    """A fit on two answers of 400 reports: 200 surveys left the mean's SE 4.1% even with the control variate; blocks
    are added (seeded apart from the first 200, which stay as they were) until it is within `TARGET_ERROR`."""
    q = channels.channel_matrix(question(type="number", min=0, max=50, step=1,
                                         privacy={"design": "laplace", "epsilon": 2}).mechanism)
    counts = np.random.default_rng(5).multinomial(400, q @ np.r_[0.5, 0.3, 0.2, np.zeros(48)]).astype(float)
    fit = likelihood.certified_maximum(q, counts)[0]
    surveys = bootstrap.bootstrap(q, fit, 400, counts=counts)
    first = bootstrap.bootstrap(q, fit, 400, bootstrap.LONG_GRID_REPLICATES, counts=counts)
    grid = np.arange(51, dtype=float)
    assert first.relative_error(grid) > bootstrap.TARGET_ERROR
    assert bootstrap.LONG_GRID_REPLICATES < len(surveys.fits) <= bootstrap.REPLICATES
    assert surveys.relative_error(grid) <= bootstrap.TARGET_ERROR
    np.testing.assert_array_equal(surveys.draws[:bootstrap.LONG_GRID_REPLICATES], first.draws)


@pytest.mark.slow
def test_a_long_grid_s_mean_se_is_stated_to_2_percent_and_agrees_with_many_more_plain_surveys():
    """A grid longer than `BATCH_ANSWERS` keeps 200 surveys; its mean's SE, read with the face's control variate,
    states at most 2% Monte Carlo error (plainly about 5%), and agrees with 2,000 surveys read plainly (about 1.6%)
    within 4 of the two errors joined."""
    q, grid, counts, fit = _long_grid_estimate()
    assert not bootstrap.BATCH_ANSWERS >= len(grid)
    surveys = bootstrap.bootstrap(q, fit, 1000, counts=counts)
    assert len(surveys.fits) == bootstrap.LONG_GRID_REPLICATES  # the control variate alone reached the target
    error = surveys.relative_error(grid)
    assert error <= 0.02
    plain_error = np.sqrt((_kurtosis(surveys.fits @ grid) - 1) / (4 * len(surveys.fits)))
    assert error < plain_error / 2  # the control removes most of the surveys' noise
    many = bootstrap.bootstrap(q, fit, 1000, 2000, counts=counts)
    reference = np.sqrt(np.var(many.fits @ grid, ddof=1))
    reference_error = np.sqrt((_kurtosis(many.fits @ grid) - 1) / (4 * 2000))
    assert np.sqrt(surveys.variance(grid)) == pytest.approx(reference, rel=4 * np.hypot(error, reference_error))


def q_scores(q_):
    from deniable.analysis.precision import scores

    return scores(q_)


def test_the_simplex_projection_is_the_nearest_point_of_the_simplex():
    from scipy.optimize import minimize

    rng = np.random.default_rng(7)
    points = np.vstack([rng.normal(scale=s, size=(20, 6)) for s in (0.1, 1, 10)] + [np.full((1, 6), 1 / 6)])
    projected = bootstrap.simplex_projection(points)
    assert np.all(projected >= 0) and projected.sum(axis=1) == pytest.approx(np.ones(len(points)))
    for point, nearest in zip(points, projected):
        # an independent solver of the same problem: min |x − v|² on the simplex
        other = minimize(lambda x, v=point: ((x - v) ** 2).sum(), np.full(6, 1 / 6), method="SLSQP",
                         bounds=[(0, 1)] * 6, constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                         options={"ftol": 1e-14, "maxiter": 500}).x
        assert nearest == pytest.approx(other, abs=1e-6)
    assert bootstrap.simplex_projection(np.full((1, 6), 1 / 6)) == pytest.approx(np.full((1, 6), 1 / 6))


def test_a_start_that_cannot_produce_the_reports_falls_back():
    # answer 0 is always reported as 0; answers 1 and 2 half the time as themselves
    q = np.array([[1, 0.5, 0.5], [0, 0.5, 0], [0, 0, 0.5]])
    counts = np.array([[0.0, 3.0, 1.0], [2.0, 1.0, 1.0], [5.0, 0.0, 0.0]])
    fallback = np.full(3, 1 / 3)
    assert bootstrap.simplex_projection(counts[:1] / 4 @ np.linalg.inv(q).T)[0] == pytest.approx([0, 1, 0])  # report 2: impossible
    starts = bootstrap._starts(q, counts, fallback)
    assert np.array_equal(starts[0], fallback)
    assert not ((starts @ q.T <= 0) & (counts > 0)).any()  # every start's likelihood is finite
    fits, certified = bootstrap._batched_maximise(q, counts, starts)
    assert certified.all()
    for row, fit in zip(counts, fits):
        alone = likelihood.maximise(q, row)[0]
        assert likelihood.loglikelihood(q, row, fit) == pytest.approx(likelihood.loglikelihood(q, row, alone), abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("spec", [DESIGNS[1], DESIGNS[3]])
def test_a_fit_moved_in_its_last_digits_keeps_its_standard_error(spec, monkeypatch):
    """The draws are seeded by the observed counts, not by the fit: a fit 1e-12 away (another summation order, another
    BLAS) gives the same surveys, so its standard error moves by as little, not by a new Monte Carlo error (seeded by
    the fit, a 0..1000 grid's mean SE moved from 10.8 to 12.0 for a change of 2e-12)."""
    q_ = question(**spec)
    reports = q_.mechanism.reports
    drawn = [reports[i] for i in np.random.default_rng(5).integers(0, len(reports), 300)]
    before = estimate(q_, drawn)
    exact = likelihood.certified_maximum

    def nudged(q, counts):
        pi, certificate = exact(q, counts)
        pi = pi * (1 + 1e-12 * np.cos(np.arange(len(pi))))
        return pi / pi.sum(), certificate

    monkeypatch.setattr(likelihood, "certified_maximum", nudged)
    after = estimate(q_, drawn)
    assert not np.array_equal(after.table["estimate"], before.table["estimate"])
    assert after.table["se"].to_numpy() == pytest.approx(before.table["se"].to_numpy(), rel=1e-6, abs=1e-9)
    assert after.mean.se == pytest.approx(before.mean.se, rel=1e-6)
    # and the draws do follow the distribution: another one of the same counts gives another spread
    q = channels.channel_matrix(q_.mechanism)
    other = np.full(q.shape[1], 1 / q.shape[1])
    assert not np.allclose(bootstrap.published_covariance(q, other, 300, counts=before.counts), before.covariance)


@pytest.mark.parametrize("rates", [np.array([0.1, 0.2, 0.4, 0.2, 0.1]), np.array([0.0, 0.7, 0.0, 0.3]),
                                   np.array([0.98, 0.01, 0.005, 0.005])])
@pytest.mark.parametrize("reports_per_rate", [0, 100], ids=["chain", "report by report"])
def test_the_bootstrap_s_draws_are_multinomial_and_unmoved_by_round_off(rates, reports_per_rate, monkeypatch):
    """`stable_multinomial` draws the multinomial's law (means n·λ, covariances n·(diag λ − λλᵀ), zeros stay zero) and
    the same surveys for rates that differ by round-off, symmetric ones included (their conditional share is ½), by
    either of its ways (a chain of binomials; each report placed among the cumulative rates)."""
    monkeypatch.setattr(bootstrap, "REPORTS_PER_RATE", reports_per_rate)
    n, size = 50, 40_000
    draws = bootstrap.stable_multinomial(np.random.default_rng(11), n, rates, size)
    assert (draws.sum(axis=1) == n).all() and (draws[:, rates == 0] == 0).all()
    expected = n * (np.diag(rates) - np.outer(rates, rates))
    assert draws.mean(axis=0) == pytest.approx(n * rates, abs=4 * np.sqrt(np.diag(expected).max() / size) + 1e-12)
    assert np.cov(draws, rowvar=False) == pytest.approx(expected, abs=0.05 * n * rates.max())
    moved = rates * (1 + 1e-13 * np.cos(np.arange(len(rates))))
    again = bootstrap.stable_multinomial(np.random.default_rng(11), n, moved / moved.sum(), size)
    assert np.array_equal(draws, again)


def test_a_channel_s_hash_is_kept_only_while_its_entries_cannot_change():
    """Seeds start from the hash of the channel's entries, kept for a read-only matrix that owns them (what
    `channel_matrix` returns: a 0..1000 grid's 24 MB hashed once, not twice an estimate). A writable matrix is hashed
    afresh, so a change to it draws other surveys; a read-only view of a writable one is not kept either."""
    q = channels.channel_matrix(question(**DESIGNS[3]).mechanism)
    key = np.arange(q.shape[0], dtype=float)
    seed = bootstrap._seed(q, key, 50)
    assert bootstrap._seed(q, key, 50) == seed == bootstrap._seed(np.array(q), key, 50)  # the kept hash is the same hash
    writable = np.array(q)
    writable[0, 0] += 1e-9
    assert bootstrap._seed(writable, key, 50) != seed
    view = writable.view()
    view.flags.writeable = False
    assert bootstrap._seed(view, key, 50) == bootstrap._seed(writable, key, 50)
    writable[0, 0] += 1e-9  # changed through its owner: the read-only view's seed follows
    assert bootstrap._seed(view, key, 50) == bootstrap._seed(writable, key, 50) != seed


def test_a_long_grid_s_surveys_drawn_at_wide_shares_are_fitted_from_the_sparse_start():
    """A plan's bootstrap draws a long grid's surveys at uniform shares. Started there, each Newton step of a fit worked
    on every answer (a 0..1000 grid's fit took 13 s, a 0..10,000 grid's would write out its whole channel); started
    where the solver's own sparse start puts it (0..300 here: 6 ms against 0.95 s for three), the fits are the same
    maxima (unique: the channel has full column rank) to their certified tolerance."""
    q = channels.channel_matrix(question(type="number", min=0, max=300, step=1,
                                         privacy={"design": "laplace", "epsilon": 1}).mechanism)
    uniform = np.full(301, 1 / 301)
    _, draws = bootstrap.draw_surveys(q, uniform, 1000, 3)
    fits = bootstrap.fit_surveys(q, draws, uniform)
    from_uniform = np.array([likelihood.maximise(q, survey, start=uniform)[0] for survey in draws])
    np.testing.assert_allclose(fits, from_uniform, atol=1e-7)
    assert all(np.count_nonzero(fit) < 20 for fit in fits)  # the maxima sit on a few answers


def test_one_share_reads_the_same_by_every_route():
    """A share asked for as a functional (a range of one value in `binned`) is read as `variances` reads it, plainly:
    the control variate serves figures of several answers only."""
    q, grid, counts, fit = _long_grid_estimate()
    surveys = bootstrap.bootstrap(q, fit, 1000, counts=counts)
    for answer in np.flatnonzero(fit > 0):
        unit = np.eye(len(grid))[answer]
        assert surveys.variance(unit) == pytest.approx(surveys.variances()[answer], rel=1e-12)  # round-off apart
    assert surveys.variance(grid) != pytest.approx(np.var(surveys.fits @ grid, ddof=1), rel=1e-6)  # the mean's: not
