"""Logistic regression of a randomized yes/no answer on public covariates.

The design-adjusted model: P(report = yes | x) = q + (p − q)·σ(xᵀβ), with p = P(yes|yes) and
q = P(yes|no) from the exact channel. Fitted by maximum likelihood with statsmodels'
GenericLikelihoodModel: standard errors from the information matrix, the familiar summary.
With p = 1, q = 0 (no randomization) it is ordinary logistic regression.

Designs whose reports carry a group (cheating detection, the stochastic lie detector) go through the
same channel, over its latent classes: σ(xᵀβ) is the share of "yes" among the respondents the model is
about, and the other class (cheaters; for the lie detector, the carriers' honesty) is one constant
share, fitted beside β on the logit scale (as RRreg's RRlog does):

* cheating detection: honest yes (1 − γ)σ, honest no (1 − γ)(1 − σ), cheaters γ;
* lie detector: truthful carriers σt, lying carriers σ(1 − t), non-carriers 1 − σ.

A split ballot's direct arm is left out: the model is of the randomized reports.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import patsy
from scipy.special import expit
from statsmodels.base.model import GenericLikelihoodModel
from statsmodels.tools.numdiff import approx_fprime, approx_hess3

from deniable.client import Question
from deniable.client.compliance import GroupedMechanism
from deniable.client.errors import DeniableWarning
from deniable.client.mechanisms import Mechanism

from . import channels, distributions
from .errors import AnalysisError
from .formulas import (
    RegressionResults,
    all_questions,
    boundary_terms,
    fit_from_starts,
    formula_frame,
    formula_names,
    missing_report,
    randomized_arm,
)
from .predictor import fit_latent_predictor
from .sample_design import SampleDesign
from .weighted import panel_covariance_sample, sample_words


class RandomizedLogit(GenericLikelihoodModel):
    """P(y = 1 | x) = q + (p − q)·σ(xβ) for a randomized-response outcome y."""

    def __init__(self, endog, exog, p: float, q: float, case_weights=None, **kwargs):
        super().__init__(endog, exog, **kwargs)
        self.p_yes, self.q_yes = p, q
        # a sample's design weights (a pseudo-likelihood); None: every respondent counts once
        self.case_weights = None if case_weights is None else np.asarray(case_weights, dtype=float)

    def _weighted(self, values):
        return values if self.case_weights is None else self.case_weights.reshape((-1,) + (1,) * (values.ndim - 1)) * values

    def nloglikeobs(self, params):
        probability = self.q_yes + (self.p_yes - self.q_yes) * expit(self.exog @ params)
        probability = np.clip(probability, 1e-15, 1 - 1e-15)
        return self._weighted(-(self.endog * np.log(probability) + (1 - self.endog) * np.log1p(-probability)))

    def score_obs(self, params):
        linear = self.exog @ params
        sigma = expit(linear)
        probability = np.clip(self.q_yes + (self.p_yes - self.q_yes) * sigma, 1e-15, 1 - 1e-15)
        derivative = (self.p_yes - self.q_yes) * sigma * (1 - sigma)
        weight = (self.endog / probability - (1 - self.endog) / (1 - probability)) * derivative
        return self._weighted(weight[:, None] * self.exog)

    def score(self, params):
        return self.score_obs(params).sum(axis=0)

    def hessian(self, params):
        # Observed information, analytic: −Σ ∂²ℓ/∂β∂βᵀ
        linear = self.exog @ params
        sigma = expit(linear)
        scale = self.p_yes - self.q_yes
        probability = np.clip(self.q_yes + scale * sigma, 1e-15, 1 - 1e-15)
        d1 = scale * sigma * (1 - sigma)
        d2 = scale * sigma * (1 - sigma) * (1 - 2 * sigma)
        y = self.endog
        first = y / probability - (1 - y) / (1 - probability)
        second = -y / probability**2 - (1 - y) / (1 - probability) ** 2
        weights = self._weighted(second * d1**2 + first * d2)
        return (self.exog * weights[:, None]).T @ self.exog


class FirthRandomizedLogit(RandomizedLogit):
    """`RandomizedLogit` with Firth's penalty: ℓ(β) + ½ log det I(β), I the expected information
    Xᵀ diag(w) X, w = (p − q)²σ²(1 − σ)² / (P(1 − P)), P = q + (p − q)σ. The penalty keeps every
    coefficient finite where some group's reports are fitted best by a share of 0 or 1 (separation), and
    removes most of the maximum-likelihood estimate's small-sample bias. Derivatives are numerical."""

    def penalty(self, params) -> float:
        sigma = expit(self.exog @ params)
        scale = self.p_yes - self.q_yes
        probability = np.clip(self.q_yes + scale * sigma, 1e-15, 1 - 1e-15)
        weights = scale**2 * (sigma * (1 - sigma)) ** 2 / (probability * (1 - probability))
        sign, logdet = np.linalg.slogdet((self.exog * weights[:, None]).T @ self.exog)
        return 0.5 * logdet if sign > 0 else -np.inf

    def nloglikeobs(self, params):
        return super().nloglikeobs(params) - self.penalty(params) / len(self.endog)

    def score_obs(self, params):
        return GenericLikelihoodModel.score_obs(self, params)

    def score(self, params):
        return approx_fprime(params, self.loglike, centered=True)

    def hessian(self, params):
        return approx_hess3(params, self.loglike)


class SeparationWarning(DeniableWarning):
    """A coefficient at the boundary (quasi-separation): its estimate and standard error mean nothing."""


def _judge_boundary(result, firth: bool):
    """Name the terms at the boundary on the result (``boundary_terms``) and in a warning in deniable's words."""
    found = [term for term in boundary_terms(result) if not term.startswith("logit(")]  # a class share may be 0
    result._results.boundary_terms = found
    if found:
        params, bse = pd.Series(result.params), pd.Series(result.bse)
        listed = "; ".join(f"{term} = {params[term]:.4g} (SE {bse[term]:.3g})" for term in found)
        advice = ("even the penalized fit is at the boundary: drop or merge these terms" if firth else
                  "merge the level with another, drop the term, or refit with firth=True (a penalized fit that stays finite)")
        warnings.warn(f"separation: {listed}: the reports of {'this term' if len(found) == 1 else 'these terms'} are "
                      f"fitted best by a share of exactly 0 or 1, so the coefficient ran off to the boundary and its "
                      f"estimate, SE and interval mean nothing; {advice}", SeparationWarning, stacklevel=3)
    return result


#: Per grouped design: the constant class share fitted beside β, and the latent-class weights (σ, share). Each
#: weight is affine in σ and in the share separately, so a difference of two ends is its exact derivative.
CLASS_WEIGHTS = {
    "cheating_detection": ("cheater", lambda sigma, c: [(1 - c) * sigma, (1 - c) * (1 - sigma), c + 0 * sigma]),
    "stochastic_lie_detector": ("truthful", lambda sigma, c: [sigma * c, sigma * (1 - c), 1 - sigma + 0 * c]),
}


class LatentClassLogit(GenericLikelihoodModel):
    """P(report yes | x, group g) = Σ_c w_c(σ(xβ), s) · P(yes | class c, group g), for a design whose reports
    carry a group; ``s`` = expit(last parameter) is the constant class share (`CLASS_WEIGHTS`)."""

    def __init__(self, endog, exog, groups, yes_given, design: str, case_weights=None, **kwargs):
        self.constant_class, self.class_weights = CLASS_WEIGHTS[design]
        super().__init__(endog, exog, extra_params_names=[f"logit({self.constant_class})"], **kwargs)
        self.groups = np.asarray(groups)
        self.yes_given = np.asarray(yes_given, dtype=float)  # classes × groups: P(typed yes | class, group)
        # a sample's design weights (a pseudo-likelihood); None: every respondent counts once
        self.case_weights = None if case_weights is None else np.asarray(case_weights, dtype=float)

    def _weighted(self, values):
        return values if self.case_weights is None else self.case_weights.reshape((-1,) + (1,) * (values.ndim - 1)) * values

    def _yes(self, sigma, share):
        weights = self.class_weights(sigma, share)
        return sum(w * self.yes_given[c, self.groups] for c, w in enumerate(weights))

    def nloglikeobs(self, params):
        probability = np.clip(self._yes(expit(self.exog @ params[:-1]), expit(params[-1])), 1e-15, 1 - 1e-15)
        return self._weighted(-(self.endog * np.log(probability) + (1 - self.endog) * np.log1p(-probability)))

    def score_obs(self, params):
        sigma, share = expit(self.exog @ params[:-1]), expit(params[-1])
        probability = np.clip(self._yes(sigma, share), 1e-15, 1 - 1e-15)
        slope = self.endog / probability - (1 - self.endog) / (1 - probability)
        by_sigma = self._yes(np.ones_like(sigma), share) - self._yes(np.zeros_like(sigma), share)
        by_share = self._yes(sigma, 1.0) - self._yes(sigma, 0.0)
        return self._weighted(np.column_stack([(slope * by_sigma * sigma * (1 - sigma))[:, None] * self.exog,
                                               slope * by_share * share * (1 - share)]))

    def score(self, params):
        return self.score_obs(params).sum(axis=0)

    def hessian(self, params):
        # Central differences of the exact score: far steadier than second differences of the likelihood.
        jacobian = approx_fprime(np.asarray(params, dtype=float), self.score, centered=True)
        return (jacobian + jacobian.T) / 2


def _yes_given(mechanism: GroupedMechanism) -> np.ndarray:
    """P(typed yes | latent class, group) from the analysis channel's columns (each group weighs 1/G)."""
    yes = [i for i, r in enumerate(mechanism.reports) if r["report"] == "yes"]
    return np.array([[float(column[i]) * len(mechanism.groups) for i in yes] for _, column in mechanism.latent_classes])


def _class_share(result, name: str, level: float = 0.95) -> pd.DataFrame:
    """The constant class share (expit of the last parameter), its delta-method SE and the interval mapped from
    the logit scale (it contains the estimate and stays inside (0, 1))."""

    theta, theta_se = float(result.params.iloc[-1]), float(result.bse.iloc[-1])
    share = float(expit(theta))
    z = distributions.norm_isf((1 - level) / 2)
    return pd.DataFrame({"estimate": [share], "se": [share * (1 - share) * theta_se],
                         "ci_low": [float(expit(theta - z * theta_se))], "ci_high": [float(expit(theta + z * theta_se))]},
                        index=pd.Index([name], name="class"))


def logistic(question_or_mechanism, reports, covariates: pd.DataFrame | None = None, *, intercept: bool = True,
             firth: bool = False, design=None, predictor_terms: str | None = None, **fit_kwargs):
    """Fit the design-adjusted logistic regression; returns statsmodels results with ``params``,
    ``bse``, ``conf_int()`` and ``summary()`` indexed by term (``Intercept`` first).

    Either a formula and loaded data, as statsmodels users write it::

        logistic("drugs ~ C(region) + age", data)   # data from load(); region, age: public questions

    (patsy formulas: a choice question is categorical with or without ``C()``), or the parts:
    ``logistic(question, reports, covariates)`` with a DataFrame of numeric covariates.

    A term whose coefficient runs off to the boundary (separation: a level whose reports are fitted best by a
    share of exactly 0 or 1) is named in a `SeparationWarning` and in ``result.boundary_terms``.
    ``firth=True`` maximises Firth's penalized likelihood instead (`FirthRandomizedLogit`): finite coefficients
    and less small-sample bias, Wald standard errors from the penalized information; yes/no designs only.

    ``design``: a `SampleDesign` (with a formula over loaded data): the weighted pseudo-likelihood, and the
    sandwich covariance H⁻¹·V(scores)·H⁻¹ whose middle is the design-based covariance of the respondents' scores
    (PSU totals within strata, fpc, raking), with t tests on the design's degrees of freedom.

    A *public* yes/no outcome may take one randomized yes/no answer among its covariates
    (``logistic("voted ~ dodged + age", data)``): its true answer is modelled jointly (module `predictor`, R's
    ``rrreg.predictor``), ``predictor_terms`` its own model.
    """
    if isinstance(question_or_mechanism, str):
        if covariates is not None:
            raise TypeError("logistic(formula, data): the covariates come from the formula")
        if _public_outcome(question_or_mechanism, reports) or predictor_terms is not None:
            return fit_latent_predictor(question_or_mechanism, reports, "logistic", design, predictor_terms,
                                        **fit_kwargs)
        if design is not None:
            return _design_logistic(question_or_mechanism, reports, design, firth, fit_kwargs)
        return _from_formula(question_or_mechanism, reports, {**fit_kwargs, "firth": firth})
    if design is not None:
        raise AnalysisError("design: give it with a formula over loaded data (logistic('y ~ x', data, design=...)), "
                            "whose columns it names", "design")
    if covariates is None:
        raise TypeError("logistic(question, reports, covariates): covariates are required (or use a formula)")
    mechanism = question_or_mechanism.mechanism if isinstance(question_or_mechanism, Question) else question_or_mechanism
    if not isinstance(mechanism, Mechanism) or mechanism.answers != ["yes", "no"]:
        raise AnalysisError("logistic() needs a yes/no question or mechanism")
    if not isinstance(covariates, pd.DataFrame):
        raise TypeError("covariates must be a pandas DataFrame of numeric columns")
    y = pd.Series(list(reports), index=covariates.index if len(covariates) == len(list(reports)) else None)
    if len(y) != len(covariates):
        raise AnalysisError(f"reports ({len(y)}) and covariates ({len(covariates)}) differ in length")
    if isinstance(question_or_mechanism, Question) and question_or_mechanism.split_ballot is not None:
        y = y.map(lambda report: randomized_arm(question_or_mechanism.split_ballot, report))
    design = covariates.astype(float)
    if intercept:
        design = design.copy()
        design.insert(0, "Intercept", 1.0)
    present = y.map(lambda report: not missing_report(report)).to_numpy(dtype=bool)
    keep = present & design.notna().all(axis=1).to_numpy()
    exog = design[keep]
    if isinstance(mechanism, GroupedMechanism):
        if firth:
            raise AnalysisError("firth=True: the penalized fit is for yes/no designs without compliance classes")
        return _judge_boundary(_grouped_logistic(mechanism, y[keep], exog, fit_kwargs), firth)
    # The model is for the first report (yes; same for crosswise; no_to_both for triangular), through the channel.
    channel = channels.binary_channel(mechanism)
    first = mechanism.reports[0]
    if not set(y[keep]) <= set(mechanism.reports):
        raise AnalysisError(f"reports must be {' or '.join(map(repr, mechanism.reports))}")
    endog = pd.Series((y[keep] == first).astype(float).to_numpy(), index=exog.index, name="report_yes")
    if firth:
        model = FirthRandomizedLogit(endog, exog, channel.p, channel.q)
        fitted = fit_from_starts(model, [np.zeros(exog.shape[1])], fit_kwargs, method="bfgs")
    else:
        fitted = fit_from_starts(RandomizedLogit(endog, exog, channel.p, channel.q), [np.zeros(exog.shape[1])], fit_kwargs)
    fitted.sample = sample_words(None, None)  # as a design's result says its own (`sample_words`)
    # The wrapper gives pandas-labelled params, bse and conf_int, as statsmodels' own models do.
    return _judge_boundary(RegressionResults(fitted), firth)


def _public_outcome(formula: str, data) -> bool:
    """Whether a formula's outcome is a public question of the loaded data (then a randomized answer may be among
    the covariates: `predictor`)."""
    outcome = formula.split("~", 1)[0].strip()
    if not hasattr(data, "survey") or outcome not in set(all_questions(data)):
        return False
    return not data.question(outcome).is_private


def _grouped_logistic(mechanism: GroupedMechanism, y: pd.Series, exog: pd.DataFrame, fit_kwargs: dict):
    """Cheating detection or the lie detector as the outcome: the latent-class model (`LatentClassLogit`).
    The result has the usual params (β, then the logit of the constant class share) and ``class_share``: that
    share with its SE and interval."""
    try:
        checked = [mechanism.validate_report(r) for r in y]
    except ValueError as error:
        raise AnalysisError(f"reports: {error}") from None
    groups = np.array([mechanism.groups.index(r["group"]) for r in checked], dtype=int)
    endog = pd.Series([float(r["report"] == "yes") for r in checked], index=exog.index, name="report_yes")
    model = LatentClassLogit(endog, exog, groups, _yes_given(mechanism), mechanism.design)
    width = exog.shape[1]
    starts = [np.r_[np.zeros(width), theta] for theta in (-2.0, 0.0, 2.0)]
    result = RegressionResults(fit_from_starts(model, starts, fit_kwargs, method="bfgs"))
    result._results.class_share = _class_share(result, model.constant_class)
    result._results.sample = sample_words(None, None)
    return result


def _from_formula(formula: str, data, fit_kwargs: dict):
    """``outcome ~ terms`` over a loaded survey: the outcome a yes/no question, the terms public questions."""
    if not hasattr(data, "frame") or not hasattr(data, "question"):
        raise TypeError("logistic(formula, data) needs data from deniable.analysis.load()")
    if formula.count("~") != 1:
        raise AnalysisError(f"formula {formula!r}: write it as 'outcome ~ covariates', e.g. 'drugs ~ C(region) + age'")
    outcome, terms = (part.strip() for part in formula.split("~"))
    question = data.question(outcome)  # names an unknown question
    used = [qid for qid in formula_names(terms) if qid in set(all_questions(data))]
    randomized = [qid for qid in used if data.question(qid).is_private]
    if randomized:
        raise AnalysisError(f"formula: {', '.join(randomized)} {'is' if len(randomized) == 1 else 'are'} randomized; "
                         "covariates must be public questions (privacy: none), whose answers are known")
    frame = formula_frame(data, outcome, used, terms)
    try:
        design = patsy.dmatrix(terms, frame, return_type="dataframe", NA_action="drop")
    except patsy.PatsyError as error:
        raise AnalysisError(f"formula {formula!r}: {error}") from None
    reports = frame.loc[design.index, outcome]
    result = logistic(question, reports, design, intercept=False, **fit_kwargs)
    sample = panel_covariance_sample(data, None, outcome, frame.loc[design.index])
    return result if sample is None else _sandwich(result, sample, frame.loc[design.index].index)


def _sandwich(result, sample, index: pd.Index):
    """``result`` with the covariance H⁻¹·V(scores)·H⁻¹, V the covariance of the responses' scores that ``sample``
    reads (a panel's pooled waves bounded: `weighted.panel_covariance_sample`), ``index`` its rows."""
    fitted = result._results
    model, params = fitted.model, np.asarray(fitted.params)
    scores = np.zeros((len(index), len(params)))
    scores[index.get_indexer(model.data.row_labels)] = model.score_obs(params)
    bread = np.linalg.pinv(model.hessian(params))
    fitted.cov_params_default = bread @ sample.covariance(scores) @ bread
    fitted.normalized_cov_params = fitted.cov_params_default
    fitted.sample = sample_words(None, sample)
    fitted._cache = {}  # statsmodels caches bse and the tests it derives: from the covariance set here
    if getattr(fitted, "class_share", None) is not None:
        fitted.class_share = _class_share(result, model.constant_class)
    return result


def _design_logistic(formula: str, data, design, firth: bool, fit_kwargs: dict):
    """`logistic` with a sample design: weights in the likelihood, the design-based sandwich for the covariance."""
    if not isinstance(design, SampleDesign):
        raise AnalysisError(f"design: expected a SampleDesign, got {type(design).__name__}", "design")
    if firth:
        raise AnalysisError("firth=True: the penalized fit has no design-based version here; drop one of them")
    if not hasattr(data, "design_frame"):
        raise TypeError("logistic(formula, data, design=...) needs data from deniable.analysis.load()")
    if formula.count("~") != 1:
        raise AnalysisError(f"formula {formula!r}: write it as 'outcome ~ covariates', e.g. 'drugs ~ C(region) + age'")
    outcome, terms = (part.strip() for part in formula.split("~", 1))
    question = data.question(outcome)
    mechanism = question.mechanism
    grouped = isinstance(mechanism, GroupedMechanism)
    if not grouped and mechanism.answers != ["yes", "no"]:
        raise AnalysisError(f"{outcome}: a design-based logistic regression needs a yes/no question", "design")
    used = [qid for qid in formula_names(terms) if qid in set(all_questions(data))]
    randomized = [qid for qid in used if data.question(qid).is_private]
    if randomized:
        raise AnalysisError(f"formula: {', '.join(randomized)} {'is' if len(randomized) == 1 else 'are'} randomized; "
                            "covariates must be public questions (privacy: none), whose answers are known")
    frame = formula_frame(data, outcome, used, terms, design)
    sample = panel_covariance_sample(data, design, outcome, frame)  # every response keeps its PSU, also one left out
    if question.split_ballot is not None:
        frame[outcome] = frame[outcome].map(lambda report: randomized_arm(question.split_ballot, report))
    frame = frame.assign(**{outcome: frame[outcome].where(frame[outcome].map(lambda r: not missing_report(r)))})
    try:
        exog = patsy.dmatrix(terms, frame, return_type="dataframe", NA_action="drop")
    except patsy.PatsyError as error:
        raise AnalysisError(f"formula {formula!r}: {error}") from None
    exog = exog[frame.loc[exog.index, outcome].notna().to_numpy()]
    rows = frame.index.get_indexer(exog.index)
    weights = sample.weights[rows] / sample.weights[rows].mean()  # scale-free: the estimate does not depend on it
    if grouped:  # the latent-class model (`LatentClassLogit`), weighted
        try:
            checked = [mechanism.validate_report(r) for r in frame[outcome].iloc[rows]]
        except ValueError as error:
            raise AnalysisError(f"reports: {error}") from None
        groups = np.array([mechanism.groups.index(r["group"]) for r in checked], dtype=int)
        endog = pd.Series([float(r["report"] == "yes") for r in checked], index=exog.index, name="report_yes")
        model = LatentClassLogit(endog, exog, groups, _yes_given(mechanism), mechanism.design, case_weights=weights)
        starts = [np.r_[np.zeros(exog.shape[1]), theta] for theta in (-2.0, 0.0, 2.0)]
        fitted = fit_from_starts(model, starts, fit_kwargs, method="bfgs")
    else:
        channel = channels.binary_channel(mechanism)
        endog = pd.Series((frame[outcome].iloc[rows] == mechanism.reports[0]).astype(float).to_numpy(),
                          index=exog.index, name="report_yes")
        model = RandomizedLogit(endog, exog, channel.p, channel.q, case_weights=weights)
        fitted = fit_from_starts(model, [np.zeros(exog.shape[1])], fit_kwargs)
    params = np.asarray(fitted.params)
    scores = np.zeros((len(frame), len(params)))
    scores[rows] = model.score_obs(params)  # weighted; zero for the responses the model leaves out
    bread = np.linalg.pinv(model.hessian(params))
    fitted.cov_params_default = bread @ sample.covariance(scores) @ bread
    fitted.normalized_cov_params = fitted.cov_params_default
    fitted.use_t, fitted.df_resid = True, sample.df
    fitted.sample = sample_words(design, sample)
    fitted._cache = {}  # statsmodels caches bse and the tests it derives: from the covariance set here
    result = RegressionResults(fitted)
    if grouped:
        result._results.class_share = _class_share(result, model.constant_class)
    return _judge_boundary(result, False)
