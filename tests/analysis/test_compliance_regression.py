"""Logistic regression with a cheating-detection or lie-detector outcome: the latent-class model through the
design's own channel. Proven three ways: without covariates it is the certified estimate of `estimate()`; at its
answer the gradient vanishes and an independent optimiser (scipy, on a likelihood written here from the design's
definition) finds the same maximum; over simulated surveys its slope's interval covers the truth."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from deniable.analysis import estimate, logistic
from deniable.client import Survey
from tests.conftest import EXAMPLES

CDM = Survey.from_file(EXAMPLES / "respondent.yaml").questions["cheated"]  # a: yes 1/3, b: yes 2/3
SLD = Survey.from_dict({"id": "s", "title": "S", "questions": [{
    "id": "lied", "type": "yes_no", "text": "?", "privacy": {"design": "stochastic_lie_detector", "groups": {
        "a": {"p": "2/12", "randomizer": "…"}, "b": {"p": "10/12", "randomizer": "…"}}}}]}).questions["lied"]
FORCED_YES = {"a": 1 / 3, "b": 2 / 3}
NO_GIVEN = {"a": 2 / 12, "b": 10 / 12}


def cdm_reports(rng, x, beta, gamma):
    """Cheaters (γ) say no; the others follow their group's instruction: forced yes, else the truth σ(β₀ + β₁x)."""
    groups = rng.choice(["a", "b"], size=len(x))
    truth = rng.random(len(x)) < expit(beta[0] + beta[1] * x)
    forced = rng.random(len(x)) < np.array([FORCED_YES[g] for g in groups])
    cheater = rng.random(len(x)) < gamma
    typed = np.where(cheater, False, forced | truth)
    return [{"group": g, "report": "yes" if t else "no"} for g, t in zip(groups, typed)]


def sld_reports(rng, x, beta, truthful):
    """Carriers (σ(β₀ + β₁x)) say yes when truthful; non-carriers say no with their group's p, else yes."""
    groups = rng.choice(["a", "b"], size=len(x))
    carrier = rng.random(len(x)) < expit(beta[0] + beta[1] * x)
    honest = rng.random(len(x)) < truthful
    says_no = rng.random(len(x)) < np.array([NO_GIVEN[g] for g in groups])
    typed = np.where(carrier, honest, ~says_no)
    return [{"group": g, "report": "yes" if t else "no"} for g, t in zip(groups, typed)]


def test_without_covariates_it_is_the_certified_estimate():
    rng = np.random.default_rng(30)
    reports = cdm_reports(rng, np.zeros(2500), (-0.4, 0.0), 0.12)
    fit = logistic(CDM, reports, pd.DataFrame(index=range(2500)))
    shares = estimate(CDM, reports).estimate
    gamma = fit.class_share.loc["cheater", "estimate"]
    assert gamma == pytest.approx(shares["cheater"], abs=1e-5)
    assert (1 - gamma) * expit(fit.params["Intercept"]) == pytest.approx(shares["yes"], abs=1e-5)
    reports = sld_reports(rng, np.zeros(2500), (-0.6, 0.0), 0.8)
    fit = logistic(SLD, reports, pd.DataFrame(index=range(2500)))
    classes = estimate(SLD, reports).estimate  # rows yes (π), no, truthful (t)
    assert expit(fit.params["Intercept"]) == pytest.approx(classes["yes"], abs=1e-5)
    assert fit.class_share.loc["truthful", "estimate"] == pytest.approx(classes["truthful"], abs=1e-5)


def independent_negative_loglikelihood(params, x, reports):
    """The cheating-detection likelihood written from the design's definition, not from the channel code."""
    sigma, gamma = expit(params[0] + params[1] * x), expit(params[2])
    forced = np.array([FORCED_YES[r["group"]] for r in reports])
    yes = np.array([r["report"] == "yes" for r in reports])
    p_yes = (1 - gamma) * (forced + (1 - forced) * sigma)
    return -np.sum(np.where(yes, np.log(p_yes), np.log1p(-p_yes)))


def test_the_fit_meets_its_optimality_conditions_and_an_independent_optimiser_agrees():
    rng = np.random.default_rng(31)
    x = rng.normal(size=3000)
    reports = cdm_reports(rng, x, (-0.5, 1.0), 0.1)
    fit = logistic(CDM, reports, pd.DataFrame({"x": x}))
    assert list(fit.params.index) == ["Intercept", "x", "logit(cheater)"]
    assert np.abs(fit.model.score(fit.params.to_numpy())).max() < 1e-3  # the gradient vanishes at the answer
    other = minimize(independent_negative_loglikelihood, np.zeros(3), args=(x, reports), method="Nelder-Mead",
                     options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 20_000, "maxfev": 20_000})
    assert other.success
    assert fit.params.to_numpy() == pytest.approx(other.x, abs=2e-3)
    assert fit.llf == pytest.approx(-other.fun, abs=1e-6)
    share = fit.class_share.loc["cheater"]
    assert share["ci_low"] < share["estimate"] < share["ci_high"] and 0 < share["ci_low"] and share["ci_high"] < 1
    assert "logit(cheater)" in str(fit.summary())


@pytest.mark.parametrize("design", ["cheating_detection", "stochastic_lie_detector"])
def test_the_slope_interval_covers_the_truth(design):
    """60 surveys of 1,500 with slope 1: the 95% interval of the slope covers 1 in at least 52 (binomial
    lower 1% tail at 0.95); the constant class share's interval covers its truth as often."""
    rng = np.random.default_rng(32 if design == "cheating_detection" else 33)
    question, runs = (CDM, 60) if design == "cheating_detection" else (SLD, 60)
    covered_slope = covered_share = 0
    for _ in range(runs):
        x = rng.normal(size=1500)
        if design == "cheating_detection":
            reports, name, truth = cdm_reports(rng, x, (-0.5, 1.0), 0.15), "cheater", 0.15
        else:
            reports, name, truth = sld_reports(rng, x, (-0.5, 1.0), 0.8), "truthful", 0.8
        fit = logistic(question, reports, pd.DataFrame({"x": x}))
        low, high = fit.conf_int().loc["x"]
        covered_slope += low <= 1.0 <= high
        share = fit.class_share.loc[name]
        covered_share += share["ci_low"] <= truth <= share["ci_high"]
    assert covered_slope >= 52 and covered_share >= 52


def test_a_formula_over_loaded_data_and_a_split_ballot_leaves_the_direct_arm_out():
    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    question = survey.questions["cheated"]
    rng = np.random.default_rng(34)
    x = rng.normal(size=1200)
    inner = cdm_reports(rng, x, (-0.5, 1.0), 0.1)  # (the example's groups differ: only the shape matters here)
    arms = rng.random(1200) < 0.25
    reports = [{"arm": "direct", "report": "yes"} if d else {"arm": "randomized", **r} for d, r in zip(arms, inner)]
    # These reports follow another design's groups, so the example's model runs off to the boundary (and says so):
    # only how the arms are handled is checked here.
    from deniable.analysis import SeparationWarning

    with pytest.warns(SeparationWarning):
        fit = logistic(question, reports, pd.DataFrame({"x": x}))
    assert fit.nobs == (~arms).sum()
    with pytest.warns(SeparationWarning):
        alone = logistic(question.mechanism, [r for d, r in zip(arms, inner) if not d], pd.DataFrame({"x": x[~arms]}))
    assert fit.params.to_numpy() == pytest.approx(alone.params.to_numpy(), abs=1e-8)


def test_a_design_weighs_the_latent_class_model_and_gives_its_sandwich():
    """With a `SampleDesign`: a weight of 2 fits as a respondent counted twice, equal weights fit as without a design,
    and with each respondent their own PSU the sandwich is within a fifth of the information's SE (the model is right;
    the sandwich is an estimate of its own, 11% off here on the slope)."""
    from deniable.analysis import SampleDesign, load

    survey = Survey.from_file(EXAMPLES / "respondent.yaml")
    rng = np.random.default_rng(31)
    x = rng.normal(size=3000)
    reports = cdm_reports(rng, x, (-0.4, 0.8), 0.1)
    frame = pd.DataFrame({"cheated": [r["report"] for r in reports], "cheated.group": [r["group"] for r in reports],
                          "x": x, "w": 1 + (x > 0.5), "own": np.arange(3000)})
    # x is a column of the data, not a question (a frame's or an export's covariate): a formula may name it
    spec = {**survey.to_dict(), "questions": [q for q in survey.to_dict()["questions"] if q["id"] == "cheated"]}
    data = load(frame, spec=Survey.from_dict(spec))
    weighted = logistic("cheated ~ x", data, design=SampleDesign(weights="w"))
    doubled = load(pd.concat([frame, frame[frame["w"] == 2]], ignore_index=True), spec=Survey.from_dict(spec))
    assert weighted.params.to_numpy() == pytest.approx(logistic("cheated ~ x", doubled,
                                                                design=SampleDesign()).params.to_numpy(), abs=1e-5)
    own = logistic("cheated ~ x", data, design=SampleDesign(clusters="own"))
    plain_groups = pd.DataFrame({"x": x})
    plain = logistic(CDM, reports, plain_groups)
    assert own.params.to_numpy() == pytest.approx(plain.params.to_numpy(), abs=1e-5)
    assert own.bse.to_numpy() == pytest.approx(plain.bse.to_numpy(), rel=0.2)  # the sandwich is itself estimated
    assert "cheater" in own.class_share.index and own.df_resid == 2999
