"""Multilevel logistic regression of a randomized answer (`analysis.mixed`): the quadrature against direct numerical
integration, a fit that certifies itself and recovers a known truth, the boundary τ = 0, and refusals by name."""

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

from deniable.analysis.errors import AnalysisError
from deniable.analysis.mixed import _parsed, fit_mixed, mixed
from deniable.analysis.mixed_likelihood import GroupedReports

COIN = (0.75, 0.25)  # forced response, truth 1/2, yes 1/4, no 1/4: P(yes | yes), P(yes | no)


def _simulated(seed: int, groups: int, size: int, beta=(-1.0, 0.8), tau=0.7, channel=COIN) -> tuple:
    """Reports of ``groups`` × ``size`` respondents, each group's true intercept drawn from N(0, τ²), randomized
    through ``channel``: (GroupedReports, the group effects drawn)."""
    rng = np.random.default_rng(seed)
    members = np.repeat(np.arange(groups), size)
    exog = np.column_stack([np.ones(len(members)), rng.normal(size=len(members))])
    effects = rng.normal(0, tau, groups)
    truth = rng.random(len(members)) < expit(exog @ np.array(beta) + effects[members])
    p, q = channel
    yes = np.where(truth, rng.random(len(members)) < p, rng.random(len(members)) < q)
    return GroupedReports(yes.astype(float), exog, members, p, q), effects


def _direct(data: GroupedReports, beta, tau) -> float:
    """The marginal log-likelihood by scipy's adaptive quadrature, group by group: the independent method."""
    total = 0.0
    for group in range(data.count):
        rows = data.groups == group
        fixed = data.exog[rows] @ beta
        reports = data.reports[rows]

        def integrand(u):
            probability = data.q + (data.p - data.q) * expit(fixed + u)
            return math.exp(float(np.sum(reports * np.log(probability) + (1 - reports) * np.log1p(-probability)))
                            - u * u / (2 * tau * tau)) / (math.sqrt(2 * math.pi) * tau)

        total += math.log(integrate.quad(integrand, -12 * tau - 5, 12 * tau + 5, epsabs=0, epsrel=1e-12, limit=200)[0])
    return total


@pytest.mark.parametrize("size, tau", [(1, 0.5), (6, 0.9), (40, 1.5), (100, 2.0)])
def test_the_quadrature_is_the_integral(size, tau):
    """Adaptive Gauss–Hermite against scipy's quad at a point that is not the estimate: 127 nodes to 1e-8 of the
    log-likelihood, and every doubling of the nodes closer (the randomized integrand's shoulder: `mixed_likelihood`)."""
    data, _ = _simulated(3, 12, size, tau=tau)
    beta = np.array([-0.4, 0.6])
    direct = _direct(data, beta, tau)
    assert data.loglik(beta, tau, 127) == pytest.approx(direct, abs=1e-8)
    errors = [abs(data.loglik(beta, tau, nodes) - direct) for nodes in (1, 15, 31, 63)]
    assert all(finer <= coarser + 1e-12 for coarser, finer in zip(errors, errors[1:])), errors


@pytest.mark.parametrize("size, nodes, tolerance", [(5, 15, 1e-6), (40, 15, 1e-4), (40, 63, 1e-6), (100, 63, 1e-5)])
def test_the_quadrature_gradient_is_the_derivative_of_its_value(size, nodes, tolerance):
    """The gradient the optimiser follows (nodes held where the point puts them) against central differences of the
    log-likelihood itself: they differ by the derivative of the quadrature's error only, which shrinks with nodes
    (measured: 7e-6 for groups of 40 at 15 nodes, 3e-7 at 31; 5e-5 for groups of 100 at 15, 2e-7 at 63)."""
    from statsmodels.tools.numdiff import approx_fprime

    data, _ = _simulated(5, 30, size)
    theta = np.array([-0.9, 0.7, math.log(0.8)])
    value, gradient = data.loglik_gradient(theta[:2], math.exp(theta[2]), nodes)
    differences = approx_fprime(theta, lambda t: data.loglik(t[:2], math.exp(t[2]), nodes), centered=True)
    assert value == pytest.approx(data.loglik(theta[:2], math.exp(theta[2]), nodes), abs=1e-9)
    assert np.max(np.abs(gradient - differences)) < tolerance * max(1.0, np.max(np.abs(differences)))


def test_a_fit_certifies_itself_and_recovers_the_truth():
    """100 groups of 30, τ = 0.7: every estimate within 4 of its standard errors of the truth (the Monte Carlo
    error of one survey is its SE), τ's profile interval covers 0.7, the gradient is zero and the information
    positive definite, the predicted group effects follow the drawn ones, and the fit's log-likelihood is the direct
    integral's."""
    data, effects = _simulated(11, 100, 30)
    result = fit_mixed(data, ["Intercept", "x"], [f"g{i}" for i in range(100)], formula="y ~ x + (1 | g)", group="g")
    fixed = result.fixed
    for term, truth in (("Intercept", -1.0), ("x", 0.8)):
        assert abs(fixed.at[term, "estimate"] - truth) < 4 * fixed.at[term, "se"], fixed
    low, high = result.tau_ci
    assert low < 0.7 < high and low < result.tau < high and result.tau_pvalue < 0.01, result.summary()
    assert result.converged and result.newton_decrement < 1e-8 and result.smallest_eigenvalue > 0
    assert np.corrcoef(result.group_effects["effect"], effects)[0, 1] > 0.5
    assert (result.group_effects["n"] == 30).all() and (result.group_effects["se"] > 0).all()
    assert result.loglik == pytest.approx(_direct(data, fixed["estimate"].to_numpy(), result.tau), abs=1e-5)
    frame = result.to_frame()
    assert list(frame.index) == ["Intercept", "x", "sd(g)"] and frame.attrs["level"] == 0.95
    assert "certified" in result.summary() and "NOT" not in repr(result)


def test_no_group_effect_puts_tau_on_the_boundary():
    """Groups drawn with τ = 0: τ's interval starts at 0 and the test against 0 does not reject."""
    data, _ = _simulated(5, 40, 25, tau=1e-9)
    result = fit_mixed(data, ["Intercept", "x"], [str(i) for i in range(40)])
    assert result.tau_ci[0] == 0.0 and result.tau_pvalue > 0.05 and result.tau < result.tau_ci[1]


def test_the_identity_channel_is_an_ordinary_random_intercept_logit():
    """p = 1, q = 0 (asked directly): the same likelihood without randomization, whose estimate is sharper."""
    direct, _ = _simulated(13, 60, 30, channel=(1.0, 0.0))
    randomized, _ = _simulated(13, 60, 30)
    plain = fit_mixed(direct, ["Intercept", "x"], [str(i) for i in range(60)])
    coin = fit_mixed(randomized, ["Intercept", "x"], [str(i) for i in range(60)])
    assert plain.converged and coin.converged
    assert (plain.fixed["se"] < coin.fixed["se"]).all()  # randomization costs precision, never gains it
    assert plain.loglik == pytest.approx(_direct(direct, plain.fixed["estimate"].to_numpy(), plain.tau), abs=1e-5)


@pytest.mark.parametrize("formula, says", [
    ("y ~ x", "no random intercept"),
    ("y ~ x + (x | school)", "(x | school) is a random slope"),
    ("y ~ x + (1 | school) + (1 | school)", "'school' appears twice"),
    ("y ~ x + (1 | school/class) + (1 | school)", "'school' appears twice"),
    ("y ~ x + (1 | school * class)", "is not a grouping factor mixed() reads"),
    ("y x (1 | school)", "write it as"),
])
def test_unsupported_formulas_are_refused_by_name(formula, says):
    with pytest.raises(AnalysisError) as refused:
        _parsed(formula)
    assert says in refused.value.message and refused.value.field == "formula"


def test_a_formula_splits_into_outcome_fixed_terms_and_groups():
    assert _parsed("cheated ~ age + C(sex) + (1 | school)") == ("cheated", "age + C(sex)", ["school"])
    assert _parsed("cheated ~ (1|school)") == ("cheated", "1", ["school"])
    assert _parsed("cheated ~ age + (1 | school) + (1 | district)") == ("cheated", "age", ["school", "district"])
    # lme4's nesting: (1 | a/b) is (1 | a) + (1 | a:b)
    assert _parsed("cheated ~ age + (1 | school/class)") == ("cheated", "age", ["school", "school:class"])
    assert _parsed("cheated ~ (1 | school : class)") == ("cheated", "1", ["school:class"])


def test_loaded_data_by_formula_with_its_refusals(demo_db):
    from deniable.analysis import load

    data = load(db=demo_db, survey_id="tax")
    result = mixed("dodged ~ 1 + (1 | region)", data)
    regions = data.question("region").options
    assert result.n == 4000 and sorted(result.group_effects.index) == sorted(regions) and result.converged
    assert result.group_effects["n"].sum() == 4000
    for formula, field, says in [("dodged ~ 1 + (1 | nosuch)", "formula", "'nosuch' is neither"),
                                 ("hours ~ 1 + (1 | region)", "formula", "not one"),
                                 ("dodged ~ undeclared + (1 | region)", "formula", "undeclared is randomized")]:
        with pytest.raises(AnalysisError) as refused:
            mixed(formula, data)
        assert refused.value.field == field and says in refused.value.message, refused.value.message
    with pytest.raises(AnalysisError) as weighted:
        mixed("dodged ~ 1 + (1 | region)", data, design=object())
    assert weighted.value.field == "design"


def test_several_factors_on_loaded_data_crossed_and_nested(demo_db):
    """Crossed factors (region and whether one worked) and lme4's nesting (1 | region/worked): one variance per
    factor in the frame, each group's effect, the Laplace approximation said; refusals by name."""
    from deniable.analysis import load
    from deniable.analysis.small_areas import small_areas

    data = load(db=demo_db, survey_id="tax")
    crossed = mixed("dodged ~ 1 + (1 | region) + (1 | worked)", data)
    assert list(crossed.components.index) == ["region", "worked"] and crossed.nodes == 1 and crossed.converged
    assert sorted(crossed.effects["worked"].index) == ["no", "yes"]
    assert crossed.effects["region"]["n"].sum() == crossed.effects["worked"]["n"].sum() == 4000
    frame = crossed.to_frame()
    assert list(frame.index[-2:]) == ["sd(region)", "sd(worked)"]
    assert "the Laplace approximation" in crossed.summary().as_text()
    nested = mixed("dodged ~ 1 + (1 | region/worked)", data)
    assert list(nested.components.index) == ["region", "region:worked"]
    assert set(nested.effects["region:worked"].index) <= {f"{r}:{w}" for r in data.question("region").options
                                                          for w in ("no", "yes")}
    with pytest.raises(AnalysisError) as many_nodes:
        mixed("dodged ~ 1 + (1 | region) + (1 | worked)", data, nodes=15)
    assert many_nodes.value.field == "nodes" and "Laplace approximation only" in many_nodes.value.message
    with pytest.raises(AnalysisError) as areas:
        small_areas(crossed, "sample")
    assert areas.value.field == "fit" and "one grouping factor" in areas.value.message


def test_the_laplace_of_several_factors_is_that_of_one_where_there_is_one():
    """CrossedReports with a single factor is GroupedReports at one node (the same approximation by another route),
    at points near and far from the estimate."""
    from deniable.analysis.mixed_laplace import CrossedReports

    data, _ = _simulated(4, 40, 20, tau=0.8)
    crossed = CrossedReports(data.reports, data.exog, [data.groups], data.p, data.q)
    for beta, tau in [((-0.8, 0.7), 0.3), ((-0.8, 0.7), 0.8), ((0.5, -1.0), 2.0)]:
        assert crossed.loglik(np.array(beta), np.array([tau])) == pytest.approx(
            data.loglik(np.array(beta), tau, 1), abs=1e-9)


def test_the_dense_and_the_sparse_information_agree(monkeypatch):
    """Up to DENSE_LIMIT intercepts the information is a dense matrix (Cholesky), beyond it sparse (LU): the same
    log-likelihood and the same effects with their SEs."""
    from deniable.analysis import mixed_laplace

    rng = np.random.default_rng(8)
    n = 600
    factors = [rng.integers(0, 25, n), rng.integers(0, 9, n)]
    exog = np.column_stack([np.ones(n), rng.normal(size=n)])
    reports = (rng.random(n) < 0.4).astype(float)
    beta, taus = np.array([-0.3, 0.5]), np.array([0.9, 0.4])
    dense = mixed_laplace.CrossedReports(reports, exog, factors, 0.75, 0.25)
    expected = dense.loglik(beta, taus), dense.effects(beta, taus)
    monkeypatch.setattr(mixed_laplace, "DENSE_LIMIT", 10)
    sparse = mixed_laplace.CrossedReports(reports, exog, factors, 0.75, 0.25)
    assert sparse.loglik(beta, taus) == pytest.approx(expected[0], abs=1e-9)
    for (modes, ses), (sparse_modes, sparse_ses) in zip(expected[1], sparse.effects(beta, taus)):
        assert sparse_modes == pytest.approx(modes, abs=1e-9) and sparse_ses == pytest.approx(ses, abs=1e-9)


def test_draws_of_a_group_s_intercept_follow_its_conditional_distribution():
    """`posterior_draw` (sampling-importance-resampling from a t around the mode) against the conditional
    distribution ∝ exp h_j(u) integrated by scipy's quad, for groups of 5 and of 100 randomized reports (the second's
    has the shoulder a normal at the mode misses): 3,000 draws' mean within 4 Monte Carlo errors (sd/√3000) and their
    sd within 6% (its Monte Carlo error is 1.3%; resampling 32 proposals adds a bias of order 1/32)."""
    data, _ = _simulated(11, 2, 5, tau=1.0)
    large, _ = _simulated(12, 2, 100, tau=1.0)
    rng = np.random.default_rng(3)
    beta, tau = np.array([-0.4, 0.6]), 1.0
    for reports in (data, large):
        draws = np.array([reports.posterior_draw(beta, tau, rng) for _ in range(3000)])
        for group in range(reports.count):
            rows = reports.groups == group
            fixed, yes = reports.exog[rows] @ beta, reports.reports[rows]

            def density(u, power):
                probability = reports.q + (reports.p - reports.q) * expit(fixed + u)
                log_h = float(np.sum(yes * np.log(probability) + (1 - yes) * np.log1p(-probability))) - u * u / 2
                return u**power * math.exp(log_h)

            moments = [integrate.quad(density, -12, 12, args=(power,), epsabs=0, epsrel=1e-10)[0] for power in range(3)]
            mean = moments[1] / moments[0]
            sd = math.sqrt(moments[2] / moments[0] - mean**2)
            assert abs(draws[:, group].mean() - mean) < 4 * sd / math.sqrt(3000), (draws[:, group].mean(), mean)
            assert draws[:, group].std() == pytest.approx(sd, rel=0.06)
