"""Logistic regression of a randomized yes/no answer on public covariates.

The design-adjusted model: P(report = yes | x) = q + (p − q)·σ(xᵀβ), with p = P(yes|yes) and
q = P(yes|no) from the exact channel. Fitted by maximum likelihood with statsmodels'
GenericLikelihoodModel: standard errors from the information matrix, the familiar summary.
With p = 1, q = 0 (no randomization) it is ordinary logistic regression.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit
from statsmodels.base.model import GenericLikelihoodModel, LikelihoodResultsWrapper

from deniable.client import Question
from deniable.client.mechanisms import Mechanism

from . import channels
from .errors import AnalysisError


class RandomizedLogit(GenericLikelihoodModel):
    """P(y = 1 | x) = q + (p − q)·σ(xβ) for a randomized-response outcome y."""

    def __init__(self, endog, exog, p: float, q: float, **kwargs):
        super().__init__(endog, exog, **kwargs)
        self.p_yes, self.q_yes = p, q

    def nloglikeobs(self, params):
        probability = self.q_yes + (self.p_yes - self.q_yes) * expit(self.exog @ params)
        probability = np.clip(probability, 1e-15, 1 - 1e-15)
        return -(self.endog * np.log(probability) + (1 - self.endog) * np.log1p(-probability))

    def score_obs(self, params):
        linear = self.exog @ params
        sigma = expit(linear)
        probability = np.clip(self.q_yes + (self.p_yes - self.q_yes) * sigma, 1e-15, 1 - 1e-15)
        derivative = (self.p_yes - self.q_yes) * sigma * (1 - sigma)
        weight = (self.endog / probability - (1 - self.endog) / (1 - probability)) * derivative
        return weight[:, None] * self.exog

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
        weights = second * d1**2 + first * d2
        return (self.exog * weights[:, None]).T @ self.exog


def logistic(question_or_mechanism, reports, covariates: pd.DataFrame | None = None, *, intercept: bool = True,
             **fit_kwargs):
    """Fit the design-adjusted logistic regression; returns statsmodels results with ``params``,
    ``bse``, ``conf_int()`` and ``summary()`` indexed by term (``Intercept`` first).

    Either a formula and loaded data, as statsmodels users write it::

        logistic("drugs ~ C(region) + age", data)   # data from load(); region, age: public questions

    (patsy formulas: a choice question is categorical with or without ``C()``), or the parts:
    ``logistic(question, reports, covariates)`` with a DataFrame of numeric covariates.
    """
    if isinstance(question_or_mechanism, str):
        if covariates is not None:
            raise TypeError("logistic(formula, data): the covariates come from the formula")
        return _from_formula(question_or_mechanism, reports, fit_kwargs)
    if covariates is None:
        raise TypeError("logistic(question, reports, covariates): covariates are required (or use a formula)")
    mechanism = question_or_mechanism.mechanism if isinstance(question_or_mechanism, Question) else question_or_mechanism
    if not isinstance(mechanism, Mechanism) or mechanism.answers != ["yes", "no"]:
        raise AnalysisError("logistic() needs a yes/no question or mechanism")
    channel = channels.binary_channel(mechanism)
    if not isinstance(covariates, pd.DataFrame):
        raise TypeError("covariates must be a pandas DataFrame of numeric columns")
    y = pd.Series(list(reports), index=covariates.index if len(covariates) == len(list(reports)) else None)
    if len(y) != len(covariates):
        raise AnalysisError(f"reports ({len(y)}) and covariates ({len(covariates)}) differ in length")
    # The model is for the first report (yes; same for crosswise; no_to_both for triangular), through the channel.
    first = mechanism.reports[0]
    if isinstance(first, dict):
        raise AnalysisError("logistic() with a design whose reports carry a group (cheating detection, the lie "
                            "detector) is not supported yet: estimate its shares with estimate()")
    if not set(y.dropna()) <= set(mechanism.reports):
        raise AnalysisError(f"reports must be {' or '.join(map(repr, mechanism.reports))}")
    design = covariates.astype(float)
    if intercept:
        design = design.copy()
        design.insert(0, "Intercept", 1.0)
    keep = y.notna().to_numpy() & design.notna().all(axis=1).to_numpy()
    endog = pd.Series((y[keep] == first).astype(float).to_numpy(), index=design.index[keep], name="report_yes")
    exog = design[keep]
    model = RandomizedLogit(endog, exog, channel.p, channel.q)
    fit_kwargs.setdefault("method", "newton")
    fit_kwargs.setdefault("maxiter", 200)
    fit_kwargs.setdefault("disp", False)
    # The wrapper gives pandas-labelled params, bse and conf_int, as statsmodels' own models do.
    result = LikelihoodResultsWrapper(model.fit(start_params=np.zeros(exog.shape[1]), **fit_kwargs))
    return result


def _from_formula(formula: str, data, fit_kwargs: dict):
    """``outcome ~ terms`` over a loaded survey: the outcome a yes/no question, the terms public questions."""
    import patsy

    if not hasattr(data, "frame") or not hasattr(data, "question"):
        raise TypeError("logistic(formula, data) needs data from deniable.analysis.load()")
    if formula.count("~") != 1:
        raise AnalysisError(f"formula {formula!r}: write it as 'outcome ~ covariates', e.g. 'drugs ~ C(region) + age'")
    outcome, terms = (part.strip() for part in formula.split("~"))
    question = data.question(outcome)  # names an unknown question
    used = [qid for qid in _names(terms) if qid in set(_all_questions(data))]
    randomized = [qid for qid in used if data.question(qid).is_private]
    if randomized:
        raise AnalysisError(f"formula: {', '.join(randomized)} {'is' if len(randomized) == 1 else 'are'} randomized; "
                         "covariates must be public questions (privacy: none), whose answers are known")
    frame = data.frame([outcome, *used])
    for qid in used:
        covariate = data.question(qid)
        if covariate.type == "number":  # reports arrive as JSON values: make numbers numeric for patsy
            frame[qid] = pd.to_numeric(frame[qid])
        elif covariate.type in ("choice", "ordinal", "yes_no"):
            # Levels in the question's order, so the first option is the reference level ("no" for yes/no).
            levels = ["no", "yes"] if covariate.type == "yes_no" else covariate.options
            frame[qid] = pd.Categorical(frame[qid], categories=levels)
    try:
        design = patsy.dmatrix(terms, frame, return_type="dataframe", NA_action="drop")
    except patsy.PatsyError as error:
        raise AnalysisError(f"formula {formula!r}: {error}") from None
    reports = frame.loc[design.index, outcome]
    return logistic(question, reports, design, intercept=False, **fit_kwargs)


def _names(terms: str) -> list[str]:
    """The identifiers a formula's right-hand side mentions (question ids may hold '.' or '-', which patsy
    reads as Q('a-b'))."""
    import re

    quoted = re.findall(r"""Q\(\s*["']([^"']+)["']\s*\)""", terms)
    return quoted + re.findall(r"[A-Za-z_][A-Za-z0-9_]*", terms)


def _all_questions(data) -> list[str]:
    return [qid for version in data.versions for qid in version.survey.questions]
