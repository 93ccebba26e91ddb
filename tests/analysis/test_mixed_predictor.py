"""A public outcome with a randomized covariate and a random intercept per group (`mixed_predictor`): the
quadrature's gradient against differences; with the identity channel, statsmodels' linear mixed model (ML); without
group effects, the fit without groups (`predictor`, RRreg's RRlin); known coefficients and τ recovered from loaded
data; refusals by name."""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy.special import expit
from statsmodels.tools.numdiff import approx_fprime

from deniable.analysis import linear
from deniable.analysis.errors import AnalysisError
from deniable.analysis.formulas import fit_from_starts
from deniable.analysis.mixed import mixed
from deniable.analysis.mixed_fit import fit_mixed
from deniable.analysis.mixed_predictor import PredictorReports
from deniable.analysis.predictor import LatentPredictorModel
from deniable.analysis.small_areas import small_areas
from tests.analysis import simulated_predictor as simulated


def _world(seed: int, groups: int, size: int, tau: float, channel=(0.75, 0.25), family: str = "linear"):
    """y = 1 + 2z + 0.5·age + u + ε (ε ~ N(0, 1); logistic: y = 1 where that exceeds 2), z ~ σ(−0.3 + 0.5·age),
    z reported through ``channel``: (the model's data, each respondent's group, the true z)."""
    rng = np.random.default_rng(seed)
    members = np.repeat(np.arange(groups), size)
    n = len(members)
    age = rng.normal(size=n)
    z = rng.random(n) < expit(-0.3 + 0.5 * age)
    y = 1.0 + 2.0 * z + 0.5 * age + rng.normal(0, tau, groups)[members] + rng.normal(0, 1.0, n)
    if family == "logistic":
        y = (y > 2).astype(float)
    p, q = channel
    first = np.where(z, rng.random(n) < p, rng.random(n) < q).astype(float)
    exog = pd.DataFrame({"Intercept": 1.0, "z[yes]": (first - q) / (p - q), "age": age})
    own = pd.DataFrame({"Intercept": 1.0, "age": age})
    return LatentPredictorModel(pd.Series(y), exog, family, 1, own, first, p, q, latent_name="z"), members, z


@pytest.mark.parametrize("family", ["linear", "logistic"])
def test_the_quadrature_gradient_is_the_derivative_of_its_value(family):
    """Measured: 2e-7 (linear) and 3e-8 (logistic) at 31 nodes against central differences."""
    model, members, _ = _world(3, 20, 15, 0.8, family=family)
    data = PredictorReports(model, members)
    theta = np.array([0.9, 1.8, 0.4, -0.2, 0.4, *([0.05] if family == "linear" else []), math.log(0.7)])
    value, gradient = data.loglik_gradient(theta[:-1], math.exp(theta[-1]), 31)
    differences = approx_fprime(theta, lambda t: data.loglik(t[:-1], math.exp(t[-1]), 31), centered=True)
    assert value == pytest.approx(data.loglik(theta[:-1], math.exp(theta[-1]), 31), abs=1e-9)
    assert np.max(np.abs(gradient - differences)) < 1e-5 * max(1.0, np.max(np.abs(differences)))


def test_with_the_identity_channel_it_is_an_ordinary_linear_mixed_model():
    """Reports that are the truth (p = 1, q = 0): the outcome's part is statsmodels' MixedLM by maximum likelihood
    (reml=False), an independent method: coefficients, residual sd and τ to its optimiser's tolerance."""
    model, members, z = _world(5, 40, 12, 0.9, channel=(1.0, 0.0))
    fit = fit_mixed(PredictorReports(model, members), list(model.exog_names), [str(g) for g in range(40)],
                    start=np.asarray(fit_from_starts(model, model.starts(), {}, method="bfgs").params))
    frame = pd.DataFrame({"y": model.endog, "z": z.astype(float), "age": model.exog[:, 2], "g": members})
    reference = smf.mixedlm("y ~ z + age", frame, groups=frame["g"]).fit(reml=False)
    assert fit.converged
    assert fit.fixed["estimate"].to_numpy()[:3] == pytest.approx(reference.fe_params.to_numpy(), abs=2e-4)
    assert fit.fixed["se"].to_numpy()[:3] == pytest.approx(reference.bse_fe.to_numpy(), rel=2e-3)
    assert math.exp(fit.fixed.at["log(scale)", "estimate"]) == pytest.approx(math.sqrt(reference.scale), rel=1e-4)
    assert fit.tau == pytest.approx(math.sqrt(float(reference.cov_re.iloc[0, 0])), rel=1e-3)
    # the whole likelihood is the outcome's (MixedLM's) times the true answers' own model (a logistic regression)
    own = smf.logit("z ~ age", frame).fit(disp=False)
    assert fit.loglik == pytest.approx(reference.llf + own.llf, abs=1e-4)
    assert fit.fixed["estimate"].to_numpy()[3:5] == pytest.approx(own.params.to_numpy(), abs=1e-4)


def test_without_group_effects_it_is_the_fit_without_groups():
    """Groups that do not differ: τ at the boundary (0), the log-likelihood that of `predictor`'s fit (RRreg's
    RRlin) to 1e-6, and its coefficients."""
    model, members, _ = _world(7, 50, 20, 0.0)
    fixed = fit_from_starts(model, model.starts(), {}, method="bfgs")
    fit = fit_mixed(PredictorReports(model, members), list(model.exog_names), [str(g) for g in range(50)],
                    start=np.asarray(fixed.params))
    assert fit.tau == 0 and fit.tau_ci[0] == 0 and fit.tau_pvalue > 0.05
    assert fit.loglik == pytest.approx(fixed.llf, abs=1e-6)
    assert fit.fixed["estimate"].to_numpy() == pytest.approx(np.asarray(fixed.params), abs=1e-3)


def test_loaded_data_recover_the_truth_and_refuse_what_they_cannot_fit():
    """40 PSUs sharing an effect on trust (sd 4; residual sd 10), dodged randomized by forced response: the
    coefficients within 4 SEs of the truth (−6 for dodged), τ's interval holding 4, the summary saying the model."""
    frame = simulated.survey(np.random.default_rng(62), n=1600, clusters=40)
    data = simulated.loaded(frame)
    fit = mixed("trust ~ dodged + age + (1 | psu)", data)
    b0, b1, b2 = simulated.TRUE["linear"]
    truth = {"Intercept": b0, "dodged[yes]": b1, "age": b2}
    assert fit.converged and fit.n == 1600
    for term, value in truth.items():
        assert abs(fit.fixed.at[term, "estimate"] - value) < 4 * fit.fixed.at[term, "se"], fit.fixed
    assert fit.tau_ci[0] <= 4 <= fit.tau_ci[1], fit.tau_ci
    assert math.exp(fit.fixed.at["log(scale)", "estimate"]) == pytest.approx(10, rel=0.1)
    assert "linear regression with a randomized covariate (dodged)" in fit.summary().as_text()
    # the same data without the groups: the fixed part of the model is `linear`'s
    assert "dodged[yes]" in linear("trust ~ dodged + age", data).params.index
    for formula, says in [("trust ~ dodged + age + (1 | psu) + (1 | w)", "takes one grouping factor"),
                          ("trust ~ age + (1 | psu)", "no covariate is randomized"),
                          ("trust ~ dodged + cheated + (1 | psu)", "are randomized")]:
        with pytest.raises(AnalysisError) as refused:
            mixed(formula, data)
        assert says in refused.value.message, refused.value.message
    with pytest.raises(AnalysisError) as areas:
        small_areas(fit, "sample")
    assert areas.value.field == "fit" and "public outcome" in areas.value.message
