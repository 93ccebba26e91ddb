"""A randomized yes/no answer as a predictor: ``linear("trust ~ dodged + age", data)`` and
``logistic("voted ~ dodged + C(region)", data)`` with a public outcome and one randomized covariate (R's
``rr::rrreg.predictor``, RRreg's ``RRlin``).

Nobody's true answer z is known, only its randomized report r, whose channel P(r | z) is exact. The true answer
is modelled jointly with the outcome,

    P(z = 1 | x) = σ(x_zᵀγ)                  (the predictor's own model: by default on the outcome's other terms)
    y | z, x     ~ f(y; η_z),  η_z = xᵀβ + δ·z   (normal with scale s, or Bernoulli with σ(η_z))

so each respondent's likelihood is the mixture Σ_z P(z | x)·f(y | z, x)·P(r | z), maximised over (β, δ, γ[, log s])
directly (BFGS, then Newton on the analytic score), with design weights as a pseudo-likelihood. What makes the fit
trustworthy is checked on every result (`Optimality`): the score is zero to round-off and the observed information
is positive definite, so the answer is a strict local maximum; several starts are tried. Standard errors come from
the inverse information, or with a `SampleDesign` from the sandwich whose middle is the design-based covariance of
the respondents' scores (PSU totals within strata), with t tests on the design's degrees of freedom.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import patsy
from scipy.special import expit, log_expit
from statsmodels.base.model import GenericLikelihoodModel
from statsmodels.tools.numdiff import approx_fprime

from deniable.client.compliance import GroupedMechanism

from . import channels
from .errors import AnalysisError
from .formulas import RegressionResults, all_questions, fit_from_starts, formula_frame, formula_names, randomized_arm
from .weighted import panel_covariance_sample, sample_words

FAMILIES = ("linear", "logistic")
#: A fit is taken for a maximum when its largest score is this small against the information's scale.
SCORE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Optimality:
    """How the fit proves itself: the largest |score| (relative to √n times the information's scale) and the
    smallest eigenvalue of the observed information (positive: a strict local maximum)."""

    max_score: float
    min_information_eigenvalue: float
    starts: int

    @property
    def certified(self) -> bool:
        return self.max_score <= SCORE_TOLERANCE and self.min_information_eigenvalue > 0


class LatentPredictorModel(GenericLikelihoodModel):
    """The mixture likelihood above. ``exog``: the outcome's design matrix, whose column ``latent`` holds the
    randomized answer (its values unused: the model sums over z ∈ {0, 1}); None for a model without one.
    ``latent_exog``: the predictor's own design matrix; ``first``: 1 where the report is the channel's first report;
    ``p``, ``q``: P(first report | yes), P(first report | no)."""

    def __init__(self, endog, exog, family: str, latent: int | None = None, latent_exog=None, first=None,
                 p: float = 1.0, q: float = 0.0, latent_name: str = "z", case_weights=None, **kwargs):
        self.family, self.latent = family, latent
        self.latent_exog: np.ndarray | None = None if latent is None else np.asarray(latent_exog, dtype=float)
        extra = [] if latent is None else [f"{latent_name} ~ {name}" for name in latent_exog.columns]
        if family == "linear":
            extra.append("log(scale)")
        super().__init__(endog, exog, extra_params_names=extra, **kwargs)
        self.k_outcome = self.exog.shape[1]
        self.k_latent = 0 if self.latent_exog is None else self.latent_exog.shape[1]
        if latent is not None:
            first = np.asarray(first, dtype=float)
            # P(report | z = 1), P(report | z = 0) of each respondent's own report
            self.given_yes = first * p + (1 - first) * (1 - p)
            self.given_no = first * q + (1 - first) * (1 - q)
            self.exog_yes, self.exog_no = self.exog.copy(), self.exog.copy()
            self.exog_yes[:, latent], self.exog_no[:, latent] = 1.0, 0.0
        self.case_weights = None if case_weights is None else np.asarray(case_weights, dtype=float)

    def _split(self, params):
        params = np.asarray(params, dtype=float)
        beta = params[:self.k_outcome]
        gamma = params[self.k_outcome:self.k_outcome + self.k_latent]
        log_scale = params[-1] if self.family == "linear" else None
        return beta, gamma, log_scale

    def _outcome(self, exog, beta, log_scale):
        """(log f(y | η), d log f / dη, d log f / d log s) at η = exog·β."""
        eta = exog @ beta
        y = self.endog
        if self.family == "logistic":
            return y * log_expit(eta) + (1 - y) * log_expit(-eta), y - expit(eta), None
        scale = np.exp(log_scale)
        residual = (y - eta) / scale
        return -0.5 * residual**2 - log_scale - 0.5 * np.log(2 * np.pi), residual / scale, residual**2 - 1

    def _parts(self, params):
        """Per respondent: log-likelihood and the posterior P(z = 1 | y, r, x), with the pieces the score needs."""
        beta, gamma, log_scale = self._split(params)
        if self.latent is None:
            log_f, d_eta, d_scale = self._outcome(self.exog, beta, log_scale)
            return log_f, None, (d_eta, d_scale, None, None)
        linear_z = self.latent_exog @ gamma
        log_yes, d_yes, s_yes = self._outcome(self.exog_yes, beta, log_scale)
        log_no, d_no, s_no = self._outcome(self.exog_no, beta, log_scale)
        with np.errstate(divide="ignore"):
            a = log_expit(linear_z) + log_yes + np.log(self.given_yes)
            b = log_expit(-linear_z) + log_no + np.log(self.given_no)
        top = np.maximum(a, b)
        loglike = top + np.log(np.exp(a - top) + np.exp(b - top))
        posterior = np.exp(a - loglike)
        return loglike, posterior, (d_yes, d_no, s_yes, s_no, expit(linear_z))

    def _weighted(self, values):
        return values if self.case_weights is None else self.case_weights.reshape((-1,) + (1,) * (values.ndim - 1)) * values

    def loglikeobs(self, params):
        return self._weighted(self._parts(params)[0])

    def nloglikeobs(self, params):
        return -self.loglikeobs(params)

    def score_obs(self, params):
        _, posterior, pieces = self._parts(params)
        if self.latent is None:
            d_eta, d_scale, _, _ = pieces
            columns = [d_eta[:, None] * self.exog]
            if self.family == "linear":
                columns.append(d_scale[:, None])
            return self._weighted(np.hstack(columns))
        d_yes, d_no, s_yes, s_no, share = pieces
        columns = [(posterior * d_yes)[:, None] * self.exog_yes + ((1 - posterior) * d_no)[:, None] * self.exog_no,
                   (posterior - share)[:, None] * self.latent_exog]
        if self.family == "linear":
            columns.append((posterior * s_yes + (1 - posterior) * s_no)[:, None])
        return self._weighted(np.hstack(columns))

    def score(self, params):
        return self.score_obs(params).sum(axis=0)

    def hessian(self, params):
        # Central differences of the exact score: the mixture's second derivatives, steadily.
        jacobian = approx_fprime(np.asarray(params, dtype=float), self.score, centered=True)
        return (jacobian + jacobian.T) / 2

    def starts(self) -> list[np.ndarray]:
        """Starting points: the outcome model fitted with the randomized answer's unbiased transform in its place
        (moments corrected for the channel's noise), and δ set to 0 and to ±1 around it."""
        y = self.endog
        x = self.exog.copy()
        gram = x.T @ x
        if self.latent is not None:
            gram[self.latent, self.latent] = x[:, self.latent].sum()  # E[z²] = E[z]: the transform's noise removed
        try:
            beta = np.linalg.solve(gram + 1e-9 * np.eye(len(gram)), x.T @ (y if self.family == "linear" else 4 * (y - y.mean())))
        except np.linalg.LinAlgError:
            beta = np.zeros(self.k_outcome)
        if self.family == "logistic":
            beta[0] = beta[0] + float(np.log(max(y.mean(), 1e-3) / max(1 - y.mean(), 1e-3))) if self.k_outcome else 0
        tail = []
        if self.latent is not None:
            share = float(np.clip(x[:, self.latent].mean(), 0.05, 0.95))
            tail = list(np.r_[np.log(share / (1 - share)), np.zeros(self.k_latent - 1)])
        scale = [float(np.log(max(np.std(y - x @ beta), 1e-6)))] if self.family == "linear" else []
        first = np.r_[beta, tail, scale]
        found = [first]
        if self.latent is not None:
            for delta in (-1.0, 1.0):
                other = first.copy()
                other[self.latent] += delta * (np.std(y) if self.family == "linear" else 1.0)
                found.append(other)
        return found


def latent_predictor_model(formula: str, data, family: str, design=None, predictor_terms: str | None = None,
                           columns: tuple[str, ...] = ()):
    """The model of `fit_latent_predictor` before its fit: (the `LatentPredictorModel`, the data's frame, the rows of
    it the model holds, the design's sample or None, the randomized covariate's id or None). ``columns``: more of the
    data's questions or columns to keep in the frame (a multilevel model's groups: `mixed`)."""
    if family not in FAMILIES:
        raise AnalysisError(f"family: one of {', '.join(FAMILIES)}", "family")
    if formula.count("~") != 1:
        raise AnalysisError(f"formula {formula!r}: write it as 'outcome ~ covariates', e.g. 'trust ~ dodged + age'")
    outcome, terms = (part.strip() for part in formula.split("~"))
    question = data.question(outcome)
    if question.is_private:
        raise AnalysisError(f"{outcome}: the outcome is randomized; with a randomized outcome use logistic('{formula}', "
                            "data), whose covariates are public")
    wanted = {"linear": ("number",), "logistic": ("yes_no",)}[family]
    if question.type not in wanted:
        raise AnalysisError(f"{outcome}: {family}() needs a {' or '.join(wanted)} outcome, got a {question.type} "
                            "question")
    known = set(all_questions(data))
    used = list(dict.fromkeys(qid for qid in [*formula_names(terms), *columns] if qid in known and qid != outcome))
    randomized = [qid for qid in used if data.question(qid).is_private]
    if len(randomized) > 1:
        raise AnalysisError(f"formula: {', '.join(randomized)} are randomized; a model takes one randomized answer "
                            "among its covariates")
    latent_id = randomized[0] if randomized else None
    if latent_id is not None:
        latent_question = data.question(latent_id)
        mechanism = latent_question.mechanism
        if isinstance(mechanism, GroupedMechanism) or mechanism.answers != ["yes", "no"]:
            raise AnalysisError(f"{latent_id}: a randomized predictor must be a yes/no question randomized on the "
                                "device (not a compliance design such as cheating detection)", latent_id)
    frame = formula_frame(data, outcome, used, " + ".join([terms, *columns]), design, latent=latent_id)
    sample = panel_covariance_sample(data, design, outcome, frame)
    channel = None
    if latent_id is not None:
        channel = channels.binary_channel(mechanism)
        reports = frame[latent_id]
        if latent_question.split_ballot is not None:
            reports = reports.map(lambda r: randomized_arm(latent_question.split_ballot, r))
        present = reports.map(lambda r: isinstance(r, str))
        first = (reports == mechanism.reports[0]).astype(float)
        # The unbiased transform stands in for z in the design matrix (so patsy drops the responses without a
        # report); the model replaces it by 0 and 1.
        frame[latent_id] = ((first - channel.q) / (channel.p - channel.q)).where(present)
    if family == "linear":
        frame[outcome] = pd.to_numeric(frame[outcome])
    else:
        frame[outcome] = frame[outcome].map({"yes": 1.0, "no": 0.0})
    try:
        exog = patsy.dmatrix(terms, frame, return_type="dataframe", NA_action="drop")
    except patsy.PatsyError as error:
        raise AnalysisError(f"formula {formula!r}: {error}") from None
    exog = exog[frame.loc[exog.index, outcome].notna().to_numpy()]
    if len(exog) < exog.shape[1] + 2:
        raise AnalysisError(f"formula {formula!r}: {len(exog)} complete responses for {exog.shape[1]} terms")
    latent = latent_exog = None
    if latent_id is not None:
        depends = [column for column in exog.columns if latent_id in formula_names(column)]
        if depends != [latent_id]:
            raise AnalysisError(f"formula {formula!r}: the randomized {latent_id!r} enters as a main effect only "
                                f"(its true yes as 0/1), not as {', '.join(depends)}")
        latent = list(exog.columns).index(latent_id)
        exog = exog.rename(columns={latent_id: f"{latent_id}[yes]"})
        own = [c for c in exog.columns if c != f"{latent_id}[yes]"] if predictor_terms is None else None
        if predictor_terms is None:
            latent_exog = exog[own] if own else pd.DataFrame({"Intercept": 1.0}, index=exog.index)
        else:
            try:
                latent_exog = patsy.dmatrix(predictor_terms, frame.loc[exog.index], return_type="dataframe",
                                            NA_action="raise")
            except patsy.PatsyError as error:
                raise AnalysisError(f"predictor_terms {predictor_terms!r}: {error}") from None
    rows = frame.index.get_indexer(exog.index)
    weights = None if design is None else sample.weights[rows] / sample.weights[rows].mean()
    endog = pd.Series(frame[outcome].iloc[rows].to_numpy(dtype=float), index=exog.index, name=outcome)
    first_report = None if latent_id is None else first.iloc[rows].to_numpy()
    model = LatentPredictorModel(endog, exog, family, latent, latent_exog, first_report,
                                 1.0 if channel is None else channel.p, 0.0 if channel is None else channel.q,
                                 latent_name=latent_id or "z", case_weights=weights)
    return model, frame, rows, sample, latent_id


def fit_latent_predictor(formula: str, data, family: str, design=None, predictor_terms: str | None = None,
                         **fit_kwargs):
    """``linear``/``logistic`` of a public outcome on public terms and at most one randomized yes/no answer (module
    docstring). Returns statsmodels results (params, bse, conf_int(), summary()) with ``optimality`` and ``sample``."""
    model, frame, rows, sample, latent_id = latent_predictor_model(formula, data, family, design, predictor_terms)
    starts = model.starts()
    fitted = fit_from_starts(model, starts, fit_kwargs, method="bfgs")
    params = np.asarray(fitted.params)
    information = -model.hessian(params)
    scale = np.sqrt(np.abs(np.diag(information))) + 1e-300
    fitted.optimality = Optimality(float(np.max(np.abs(model.score(params)) / scale)),
                                   float(np.linalg.eigvalsh(information / np.outer(scale, scale)).min()), len(starts))
    if sample is not None:
        scores = np.zeros((len(frame), len(params)))
        scores[rows] = model.score_obs(params)
        bread = np.linalg.pinv(information)
        fitted.cov_params_default = bread @ sample.covariance(scores) @ bread
        fitted.normalized_cov_params = fitted.cov_params_default
        if design is not None:
            fitted.use_t, fitted.df_resid = True, sample.df
        fitted._cache = {}
    fitted.sample = sample_words(design, sample)
    fitted.latent = latent_id
    return RegressionResults(fitted)


def linear(formula: str, data, *, design=None, predictor_terms: str | None = None, **fit_kwargs):
    """Linear regression of a public number question on public questions and at most one randomized yes/no answer,
    e.g. ``linear("trust ~ dodged + age", data)``: the coefficient ``dodged[yes]`` is the difference in mean trust
    between those whose true answer is yes and no, other terms held equal (R's ``RRlin``; module `predictor`).
    ``predictor_terms``: the randomized answer's own model (``"1"``: one share for everyone; default: the outcome's
    other terms). ``design``: a `SampleDesign` (weights, strata, clusters): design-based standard errors."""
    return fit_latent_predictor(formula, data, "linear", design, predictor_terms, **fit_kwargs)
