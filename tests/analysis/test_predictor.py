"""A randomized answer as a predictor (`predictor`): the same likelihood as RRreg's RRlin and the same maximum, an
independent EM reaching the same fit, known coefficients recovered over simulated surveys, weights as a
pseudo-likelihood (a weight of 2 is a duplicated respondent), and clear refusals."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from deniable.analysis import AnalysisError, SampleDesign, linear, load, logistic
from deniable.client import Survey
from tests.analysis import simulated_predictor as simulated

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "predictor"


def test_the_likelihood_and_the_fit_are_those_of_rrreg_rrlin():
    """RRlin's log-likelihood (from RRreg's sources, scripts/predictor_reference.py) at its own estimate equals ours
    there to 1e-9; our maximum is at least as high; coefficients agree within 2% of their SE, SEs within 0.5%."""
    reference = json.loads((FIXTURES / "rrlin_reference.json").read_text())
    stored = json.loads((FIXTURES / "rrlin_data.json").read_text())
    data = load(pd.DataFrame(stored["reports"]), spec=Survey.from_dict(stored["spec"]))
    fit = linear("y ~ z + u", data, predictor_terms="1")
    share = reference["pi"][1]
    at_reference = np.r_[reference["beta"], np.log(share / (1 - share)), np.log(reference["sigma"])]
    assert fit.model.loglike(at_reference) == pytest.approx(reference["logLik"], abs=1e-9)
    assert fit.llf >= reference["logLik"] - 1e-9 and fit.optimality.certified
    se = np.sqrt(np.diag(reference["vcov"]))[:3]
    assert (np.abs(fit.params.iloc[:3].to_numpy() - reference["beta"]) <= 0.02 * se).all()
    assert fit.bse.iloc[:3].to_numpy() == pytest.approx(se, rel=5e-3)
    assert list(fit.params.index) == ["Intercept", "z[yes]", "u", "z ~ Intercept", "log(scale)"]


def _em(y, x, latent, z_exog, first, iterations=5000):
    """An independent fit of the linear model: EM, whose M step is weighted least squares on each respondent
    counted twice (z = 1 with weight τ, z = 0 with 1 − τ) and a weighted logistic fit of z on its covariates."""
    x1, x0 = x.copy(), x.copy()
    x1[:, latent], x0[:, latent] = 1.0, 0.0
    given_yes, given_no = np.where(first, simulated.P, 1 - simulated.P), np.where(first, simulated.Q, 1 - simulated.Q)
    beta, gamma, scale = np.zeros(x.shape[1]), np.zeros(z_exog.shape[1]), np.std(y)
    for _ in range(iterations):
        share = expit(z_exog @ gamma)
        f1 = np.exp(-0.5 * ((y - x1 @ beta) / scale) ** 2)
        f0 = np.exp(-0.5 * ((y - x0 @ beta) / scale) ** 2)
        tau = share * f1 * given_yes / (share * f1 * given_yes + (1 - share) * f0 * given_no)
        stacked, weights = np.vstack([x1, x0]), np.r_[tau, 1 - tau]
        target = np.r_[y, y]
        new_beta = np.linalg.solve(stacked.T @ (weights[:, None] * stacked), stacked.T @ (weights * target))
        residual = target - stacked @ new_beta
        new_scale = np.sqrt((weights * residual**2).sum() / len(y))
        new_gamma = gamma.copy()
        for _ in range(20):  # Newton on Σ τ log σ + (1 − τ) log(1 − σ)
            mu = expit(z_exog @ new_gamma)
            new_gamma += np.linalg.solve(z_exog.T @ ((mu * (1 - mu))[:, None] * z_exog), z_exog.T @ (tau - mu))
        change = max(np.abs(new_beta - beta).max(), np.abs(new_gamma - gamma).max(), abs(new_scale - scale))
        beta, gamma, scale = new_beta, new_gamma, new_scale
        if change < 1e-11:
            break
    return np.r_[beta, gamma, np.log(scale)]


def test_the_fit_is_a_certified_maximum_that_an_independent_em_reaches_too():
    frame = simulated.survey(np.random.default_rng(11))
    fit = linear("trust ~ dodged + age", simulated.loaded(frame))
    assert fit.optimality.certified and fit.optimality.max_score < 1e-8
    x = np.column_stack([np.ones(len(frame)), np.zeros(len(frame)), frame["age"]])
    em = _em(frame["trust"].to_numpy(), x, 1, np.column_stack([np.ones(len(frame)), frame["age"]]),
             (frame["dodged"] == "yes").to_numpy())
    assert fit.params.to_numpy() == pytest.approx(em, abs=1e-6)
    assert list(fit.params.index) == ["Intercept", "dodged[yes]", "age", "dodged ~ Intercept", "dodged ~ age",
                                      "log(scale)"]


@pytest.mark.slow
@pytest.mark.parametrize("family", ["linear", "logistic"])
def test_known_coefficients_are_recovered_and_covered_over_simulated_surveys(family):
    """60 seeded surveys of 600 (scripts/predictor_coverage.py runs 300 for docs/validation.md): the randomized
    answer's coefficient is unbiased (mean within 3 SE of the truth) and its 95% interval covers in ≥ 88%."""
    rng = np.random.default_rng(5 if family == "linear" else 6)
    truth = simulated.TRUE[family][1]
    estimates, covered = [], 0
    for _ in range(60):
        frame = simulated.survey(rng)
        if family == "linear":
            fit = linear("trust ~ dodged + age", simulated.loaded(frame))
        else:
            fit = logistic("voted ~ dodged + I(age - 50)", simulated.loaded(frame))
        low, high = fit.conf_int().loc["dodged[yes]"]
        estimates.append(fit.params["dodged[yes]"])
        covered += low <= truth <= high
        assert fit.optimality.certified
    spread = np.std(estimates) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) < 3 * spread, (np.mean(estimates), spread)
    assert covered >= 53, covered


def test_weights_are_a_pseudo_likelihood_and_a_design_gives_the_sandwich():
    """A weight of 2 fits as a respondent counted twice; with clusters the design's SE is the sandwich on PSU totals,
    wider than the model's when respondents of a PSU share an effect."""
    frame = simulated.survey(np.random.default_rng(8), n=500, clusters=40)
    weighted = linear("trust ~ dodged + age", simulated.loaded(frame), design=SampleDesign(weights="w"))
    doubled = pd.concat([frame, frame[frame["w"] == 2]], ignore_index=True)
    assert weighted.params.to_numpy() == pytest.approx(linear("trust ~ dodged + age", simulated.loaded(doubled)).params.to_numpy(),
                                                       abs=1e-6)
    clustered = linear("trust ~ dodged + age", simulated.loaded(frame), design=SampleDesign(clusters="psu"))
    plain = linear("trust ~ dodged + age", simulated.loaded(frame))
    assert clustered.params.to_numpy() == pytest.approx(plain.params.to_numpy(), abs=1e-9)
    assert clustered.bse["Intercept"] > 1.2 * plain.bse["Intercept"]
    assert clustered.df_resid == 39  # the design's degrees of freedom: PSUs less strata
    assert clustered.sample.startswith("clusters") and plain.sample == "simple random sample"


def test_without_a_randomized_covariate_linear_is_least_squares():
    frame = simulated.survey(np.random.default_rng(3))
    fit = linear("trust ~ age", simulated.loaded(frame))
    x = np.column_stack([np.ones(len(frame)), frame["age"]])
    ols = np.linalg.lstsq(x, frame["trust"].to_numpy(), rcond=None)[0]
    assert fit.params.iloc[:2].to_numpy() == pytest.approx(ols, abs=1e-6)


@pytest.mark.parametrize("call, words", [
    (lambda d: linear("trust ~ dodged + cheated", d), "dodged, cheated are randomized; a model takes one"),
    (lambda d: linear("trust ~ dodged * age", d), "enters as a main effect only"),
    (lambda d: linear("dodged ~ age", d), "the outcome is randomized"),
    (lambda d: linear("voted ~ dodged", d), "linear() needs a number outcome, got a yes_no question"),
    (lambda d: logistic("trust ~ dodged", d), "logistic() needs a yes_no outcome"),
    (lambda d: linear("trust dodged", d), "write it as 'outcome ~ covariates'"),
])
def test_models_it_cannot_fit_are_refused_saying_why(call, words):
    data = simulated.loaded(simulated.survey(np.random.default_rng(2), n=100))
    with pytest.raises(AnalysisError) as refused:
        call(data)
    assert words in str(refused.value)
