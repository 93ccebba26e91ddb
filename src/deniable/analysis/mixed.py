"""Multilevel logistic regression of a randomized yes/no answer: fixed effects of public covariates and a random
intercept per group (a school, a village, a clinic), as RRreg's ``RRmixed`` fits through lme4's ``glmer``.

    mixed("cheated ~ age + C(sex) + (1 | school)", data)

The randomized answer's channel is in the likelihood (`mixed_likelihood`): P(report = yes) = q + (p − q)·σ(xᵀβ + u),
u ~ N(0, τ²) per group. Fitted by maximum likelihood with adaptive Gauss–Hermite quadrature, starting from 15 nodes
and adding nodes until doubling them moves the log-likelihood at the estimate by less than 1e-4 (randomized groups
of 40 or more need 31 to 63: `mixed_likelihood` says why), and certified as the other fits are: Newton steps polish
the optimum until the Newton decrement (what one more step could add to the log-likelihood) is below 1e-6, and the
information is positive definite. τ's interval inverts the
profile likelihood (its lower end is 0 when τ = 0 is inside), and its test against τ = 0 is the likelihood ratio
against the 50:50 mixture of χ²₀ and χ²₁ (τ = 0 is on the boundary).

Several grouping factors, crossed or nested, are fitted by the Laplace approximation (`mixed_laplace`), the only
method lme4 offers for them: their integral has as many dimensions as there are groups. A public outcome (a number,
or a yes/no answer) with one randomized yes/no covariate, ``mixed("trust ~ dodged + age + (1 | psu)", data)``, is the
multilevel form of `predictor`'s models (`mixed_predictor`).

Supported: random intercepts, yes/no designs (any channel with two reports). Refused, by name: a random slope, a design
with groups of reports (cheating detection, the lie detector), and design weights (a pseudo-likelihood with scaled
weights is not implemented).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import patsy

from deniable.client.compliance import GroupedMechanism

from . import channels
from .errors import AnalysisError
from .formulas import all_questions, fit_from_starts, formula_frame, formula_names, missing_report, randomized_arm
from .mixed_fit import MOST_NODES, NODES, MixedResult, fit_mixed
from .mixed_laplace import CrossedReports
from .mixed_likelihood import GroupedReports
from .mixed_predictor import PredictorReports
from .predictor import latent_predictor_model
from .regression import logistic
from .sample_design import SampleDesign

_RANDOM = re.compile(r"\(\s*([^()|]+?)\s*\|\s*([^()|]+?)\s*\)")

__all__ = ["MixedResult", "fit_mixed", "mixed"]


def mixed(formula: str, data, *, level: float = 0.95, nodes: int | None = None, design=None) -> MixedResult:
    """Fit ``outcome ~ covariates + (1 | group)`` over loaded data (`load`): the outcome a randomized yes/no question,
    the covariates public questions or the data's own columns, the group a public question or a column (a frame's
    PSU, say). A group of one respondent is allowed (it informs τ little, and says so through its conditional SE).
    A public outcome, a number (linear) or a yes/no answer (logistic), takes one randomized yes/no covariate instead.
    Several grouping factors, crossed or nested, each take a term: ``(1 | school) + (1 | district)``, and
    ``(1 | school/class)`` is lme4's ``(1 | school) + (1 | school:class)``, classes within schools.

    ``nodes``: None adds quadrature nodes until the log-likelihood is settled (the default); a number holds them
    there (1: the Laplace approximation, lme4's and RRreg's default; a note says when doubling them would move the
    log-likelihood by more than 1e-4). Several factors are fitted by the Laplace approximation, as lme4 does."""
    if design is not None:
        raise AnalysisError("design: mixed() does not take design weights (a pseudo-likelihood with scaled weights, "
                            "as Stata's melogit with pweight, is not implemented); fit it unweighted or use "
                            "logistic(..., design=...)", "design")
    if not 0 < level < 1:
        raise AnalysisError(f"level must be between 0 and 1, got {level!r}", "level")
    if nodes is not None and (not isinstance(nodes, int) or not 1 <= nodes <= MOST_NODES):
        raise AnalysisError(f"nodes: a whole number from 1 (Laplace) to {MOST_NODES}, or None, got {nodes!r}", "nodes")
    if not hasattr(data, "design_frame") or not hasattr(data, "question"):
        raise TypeError("mixed(formula, data) needs data from deniable.analysis.load()")
    outcome, fixed_terms, factors = _parsed(formula)
    if len(factors) > 1 and nodes not in (None, 1):
        raise AnalysisError(f"nodes: several grouping factors are fitted by the Laplace approximation only (nodes=1, "
                            f"as lme4's glmer), got {nodes!r}", "nodes")
    question = data.question(outcome)
    if not question.is_private:
        return _with_randomized_covariate(formula, data, outcome, fixed_terms, factors, level, nodes)
    mechanism = question.mechanism
    if isinstance(mechanism, GroupedMechanism) or len(getattr(mechanism, "answers", [])) != 2:
        raise AnalysisError(f"{outcome}: mixed() models a yes/no answer through a channel of two reports; "
                            f"{mechanism.design} is not one", "formula")
    bases = list(dict.fromkeys(name for factor in factors for name in factor.split(":")))
    used = [qid for qid in formula_names(" + ".join([fixed_terms, *bases])) if qid in set(all_questions(data))]
    randomized = [qid for qid in used if data.question(qid).is_private]
    if randomized:
        raise AnalysisError(f"formula: {', '.join(randomized)} is randomized; covariates and groups must be public",
                            "formula")
    spec_design = SampleDesign.of(data.survey) if hasattr(data, "survey") else None
    weighted = spec_design if spec_design is not None and spec_design.weights is not None else None
    frame = formula_frame(data, outcome, used, " + ".join([fixed_terms, *bases]), design=weighted)
    for base in bases:
        if base not in frame.columns:
            raise AnalysisError(f"formula: the grouping factor {base!r} is neither a public question nor a column of "
                                "the data", "formula")
    split = question.split_ballot
    reports = frame[outcome].map(lambda r: randomized_arm(split, r) if split is not None else r)
    keep = reports.map(lambda r: not missing_report(r))
    for base in bases:
        keep &= frame[base].map(lambda g: not missing_report(g))
    frame, reports = frame[keep], reports[keep]
    try:
        exog = patsy.dmatrix(fixed_terms, frame, return_type="dataframe", NA_action="drop")
    except patsy.PatsyError as error:
        raise AnalysisError(f"formula {formula!r}: {error}", "formula") from None
    reports, rows = reports.loc[exog.index], frame.loc[exog.index]
    coded = [pd.factorize(rows[factor.split(":")].astype(str).agg(":".join, axis=1), sort=True) for factor in factors]
    channel = channels.binary_channel(mechanism)
    yes = (reports == mechanism.answers[0]).to_numpy(dtype=float)
    start = _fixed_start(question, reports, exog)
    if len(factors) == 1:
        codes, names = coded[0]
        result = fit_mixed(GroupedReports(yes, exog.to_numpy(), codes, channel.p, channel.q), list(exog.columns),
                           list(names), formula=formula, group=factors[0], level=level, nodes=nodes or NODES,
                           adapt=nodes is None, start=start)
    else:
        result = fit_mixed(CrossedReports(yes, exog.to_numpy(), [codes for codes, _ in coded], channel.p, channel.q),
                           list(exog.columns), [list(names) for _, names in coded], formula=formula, group=factors,
                           level=level, start=start)
    # The sample's own covariate cells, each respondent counted by its design weight (1 without one): the population
    # `small_areas(fit, "sample")` post-stratifies over when no census table is at hand.
    covariates = [name for name in frame.columns if name not in (outcome, *bases)
                  and name in formula_names(fixed_terms)]
    cells = rows[[*covariates, *bases]].copy()
    cells["weight"] = weighted.resolve(rows).weights if weighted is not None else 1.0
    return dataclasses.replace(result, design_info=exog.design_info, sample=cells,
                               sample_weights=None if weighted is None else str(weighted.weights)
                               if isinstance(weighted.weights, str) else "the design's weights")


def _with_randomized_covariate(formula: str, data, outcome: str, fixed_terms: str, factors: list[str], level: float,
                               nodes: int | None) -> MixedResult:
    """A public outcome (a number: linear; yes/no: logistic) with one randomized yes/no covariate and a random
    intercept per group (`mixed_predictor`), started from the fit without the groups (`predictor`)."""
    question = data.question(outcome)
    family = {"number": "linear", "yes_no": "logistic"}.get(question.type)
    if family is None:
        raise AnalysisError(f"{outcome}: a public outcome of mixed() is a number (linear) or a yes/no answer "
                            f"(logistic), not a {question.type} question", "formula")
    if len(factors) > 1:
        raise AnalysisError(f"formula: a public outcome with a randomized covariate takes one grouping factor; "
                            f"({' | '.join(factors[1:2])}) is a second", "formula")
    group = factors[0]
    bases = group.split(":")
    private = [name for name in bases if name in set(all_questions(data)) and data.question(name).is_private]
    if private:
        raise AnalysisError(f"formula: {private[0]} is randomized; groups must be public", "formula")
    model, frame, rows, _, latent = latent_predictor_model(f"{outcome} ~ {fixed_terms}", data, family,
                                                           columns=tuple(bases))
    if latent is None:
        raise AnalysisError(f"formula: {outcome} is public and no covariate is randomized: fit it with a tool for "
                            "ordinary multilevel models (statsmodels' MixedLM, lme4), or model a randomized "
                            "answer", "formula")
    for base in bases:
        if base not in frame.columns:
            raise AnalysisError(f"formula: the grouping factor {base!r} is neither a public question nor a column of "
                                "the data", "formula")
    labels = frame.iloc[rows][bases].astype(str).agg(":".join, axis=1)
    keep = frame.iloc[rows][bases].map(lambda g: not missing_report(g)).all(axis=1).to_numpy()
    if not keep.all():
        raise AnalysisError(f"formula: {int((~keep).sum())} responses have no {group}; a response without its group "
                            "cannot be placed", "formula")
    codes, names = pd.factorize(labels, sort=True)
    start = fit_from_starts(model, model.starts(), {}, method="bfgs").params
    result = fit_mixed(PredictorReports(model, codes), list(model.exog_names), list(names), formula=formula,
                       group=group, level=level, nodes=nodes or NODES, adapt=nodes is None,
                       start=np.asarray(start, dtype=float))
    return dataclasses.replace(result, model=f"{family} regression with a randomized covariate ({latent})")


def _parsed(formula: str) -> tuple[str, str, list[str]]:
    """(outcome, fixed terms, the grouping factors) of ``y ~ x + (1 | g) + …``, ``(1 | a/b)`` read as lme4 reads it,
    ``(1 | a) + (1 | a:b)``; refusals name what is not supported."""
    if formula.count("~") != 1:
        raise AnalysisError(f"formula {formula!r}: write it as 'outcome ~ covariates + (1 | group)'", "formula")
    outcome, terms = (part.strip() for part in formula.split("~"))
    random = _RANDOM.findall(terms)
    if not random:
        raise AnalysisError(f"formula {formula!r}: no random intercept; add '+ (1 | group)' (or use logistic())",
                            "formula")
    slopes = [f"({left} | {right})" for left, right in random if left.replace(" ", "") not in ("1", "1+0", "0+1")]
    if slopes:
        raise AnalysisError(f"formula: {slopes[0]} is a random slope; mixed() fits random intercepts only, "
                            "(1 | group)", "formula")
    factors: list[str] = []
    for _, right in random:
        parts = [part.strip() for part in right.split("/")]
        if not all(re.fullmatch(r"[^\s:/+*()]+(\s*:\s*[^\s:/+*()]+)*", part) for part in parts):
            raise AnalysisError(f"formula: ({right}) is not a grouping factor mixed() reads: write (1 | group), "
                                "(1 | a/b) or (1 | a:b)", "formula")
        for depth in range(1, len(parts) + 1):
            factor = ":".join(re.sub(r"\s*:\s*", ":", part) for part in parts[:depth])
            if factor in factors:
                raise AnalysisError(f"formula: the grouping factor {factor!r} appears twice", "formula")
            factors.append(factor)
    # the terms without the random ones: the empty pieces between their '+' dropped (a '+' inside I(a + b) is kept)
    fixed = " + ".join(piece.strip() for piece in _RANDOM.sub("", terms).split("+") if piece.strip()) or "1"
    return outcome, fixed, factors


def _fixed_start(question, reports: pd.Series, exog: pd.DataFrame) -> np.ndarray | None:
    """The fixed-effects fit's coefficients (τ = 0), where it converges: the mixed fit's start."""
    try:
        return np.asarray(logistic(question, reports, exog, intercept=False).params, dtype=float)
    except Exception:  # noqa: BLE001 - a start only: a separated or degenerate fixed fit leaves zeros
        return None
