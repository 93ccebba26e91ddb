"""What the regressions share (`regression`'s logistic, `predictor`'s latent predictor): the frame a formula reads
from loaded data, the questions and columns it names, a split ballot's randomized arm, the best fit from several
starting points with the terms it left at the boundary, and the results a user gets (`RegressionResults`)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
from statsmodels.base.model import LikelihoodResultsWrapper
from statsmodels.tools.sm_exceptions import ConvergenceWarning, HessianInversionWarning

from .errors import AnalysisError


class RegressionResults(LikelihoodResultsWrapper):
    """A fitted model's results as statsmodels gives them (``params``, ``bse``, ``conf_int()``, ``summary()``, …) and
    as every deniable result reads: ``to_frame(level)``, a one-line ``repr``, the summary as a notebook's HTML."""

    def to_frame(self, level: float = 0.95) -> pd.DataFrame:
        """One row per term: the estimate, its standard error, the ``level`` interval, the Wald statistic and p."""
        if not 0 < level < 1:
            raise AnalysisError(f"level: between 0 and 1, got {level!r}", "level")
        params = pd.Series(self.params)
        intervals = np.asarray(self.conf_int(alpha=1 - level), dtype=float)
        frame = pd.DataFrame({"estimate": params.to_numpy(), "se": np.asarray(self.bse, dtype=float),
                              "ci_low": intervals[:, 0], "ci_high": intervals[:, 1],
                              "z": np.asarray(self.tvalues, dtype=float), "p_value": np.asarray(self.pvalues, dtype=float)},
                             index=pd.Index([str(name) for name in params.index], name="term"))
        frame.attrs.update(level=level, n=int(self.nobs), model=type(self.model).__name__,
                           sample=getattr(self._results, "sample", None))
        return frame

    def __repr__(self) -> str:
        return (f"<{type(self.model).__name__} n={int(self.nobs):,} terms={len(pd.Series(self.params))} "
                f"log-likelihood={self.llf:.6g}>")

    def _repr_html_(self) -> str:
        return self.summary().as_html()

#: A coefficient this large on the logit scale (odds × 20,000), or a standard error this large, is taken for a
#: fit that ran off to the boundary: some group's reports are fitted best by a share of exactly 0 or 1.
BOUNDARY_COEFFICIENT = 10.0
BOUNDARY_SE = 100.0


def boundary_terms(result) -> list[str]:
    """The terms whose coefficient ran off to the boundary (`BOUNDARY_COEFFICIENT`, `BOUNDARY_SE`)."""
    params, bse = pd.Series(result.params), pd.Series(result.bse)
    return [str(term) for term in params.index
            if abs(params[term]) >= BOUNDARY_COEFFICIENT or not bse[term] < BOUNDARY_SE]


def fit_from_starts(model, starts, fit_kwargs, method="newton"):
    """The best of fits from several starting points (a latent-class likelihood may have more than one peak, and
    may be flat far from it): a start that fails is skipped; AnalysisError when every start fails."""
    fit_kwargs = {"method": method, "maxiter": 500 if method == "bfgs" else 200, "disp": False, **fit_kwargs}
    best, failures, diverged = None, [], None
    for start in starts:
        try:
            fitted = _quietly(model, start, fit_kwargs)
            if fit_kwargs["method"] == "bfgs":  # Newton's steps from BFGS's answer: the gradient to round-off
                polished = _quietly(model, fitted.params, {**fit_kwargs, "method": "newton", "maxiter": 50})
                if polished.mle_retvals.get("converged") and polished.llf >= fitted.llf - 1e-9:
                    fitted = polished
        except (np.linalg.LinAlgError, ValueError) as error:
            failures.append(str(error))
            continue
        if not fitted.mle_retvals.get("converged", True) or not np.isfinite(fitted.bse).all():
            failures.append("did not converge" if np.isfinite(fitted.bse).all() else "a singular information matrix")
            if np.isfinite(fitted.llf) and boundary_terms(fitted) and (diverged is None or fitted.llf > diverged.llf):
                diverged = fitted  # still climbing toward a coefficient of ±∞: separation, said by the caller
            continue
        if best is None or fitted.llf > best.llf + 1e-9:
            best = fitted
    if best is None and diverged is not None:
        return diverged
    if best is None:
        raise AnalysisError(f"the maximum-likelihood fit did not converge from any start ({'; '.join(failures)})")
    return best


def _quietly(model, start, fit_kwargs):
    """One fit; its warnings (no convergence, a singular Hessian) are judged by `fit_from_starts`, not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", HessianInversionWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return model.fit(start_params=np.asarray(start, dtype=float), **fit_kwargs)


def missing_report(report) -> bool:
    return report is None or (isinstance(report, float) and np.isnan(report))


def randomized_arm(split, report):
    """A split ballot's report as the design's own, or None in the direct arm (left out of the model)."""
    if missing_report(report):
        return None
    try:
        arm, inner = split.unwrap(split.validate_report(report))
    except ValueError as error:
        raise AnalysisError(f"reports: {error}") from None
    return inner if arm == "randomized" else None


def formula_frame(data, outcome: str, used: list, terms: str, design=None, latent: str | None = None):
    """One row per response: the outcome, the public questions ``used`` typed for patsy (numbers numeric; a choice, an
    ordinal or a yes/no categorical in the question's order, so its first option is the reference), the columns of the
    data that are no question's which ``terms`` names (a frame's or an export's covariates: numbers when every value
    is one), and the design's columns. ``latent``: a randomized covariate left as reports (`predictor`)."""
    extra = []
    if hasattr(data, "auxiliary"):
        columns = data.auxiliary().columns
        extra = [name for name in formula_names(terms) if name in columns and name not in used and name != outcome]
    names = [*used, *extra, *(design.column_names() if design is not None else [])]
    frame = data.design_frame(outcome, list(dict.fromkeys(names)))
    for qid in used:
        if qid == latent:
            continue
        covariate = data.question(qid)
        if covariate.type == "number":  # reports arrive as JSON values: make numbers numeric for patsy
            frame[qid] = pd.to_numeric(frame[qid])
        elif covariate.type in ("choice", "ordinal", "yes_no"):
            levels = ["no", "yes"] if covariate.type == "yes_no" else covariate.options
            frame[qid] = pd.Categorical(frame[qid], categories=levels)
    for name in extra:
        numbers = pd.to_numeric(frame[name], errors="coerce")
        if numbers.notna().sum() == frame[name].map(lambda v: not missing_report(v) and v != "").sum():
            frame[name] = numbers
    return frame


def formula_names(terms: str) -> list[str]:
    """The identifiers a formula's right-hand side mentions (question ids may hold '.' or '-', which patsy
    reads as Q('a-b'))."""
    quoted = re.findall(r"""Q\(\s*["']([^"']+)["']\s*\)""", terms)
    return quoted + re.findall(r"[A-Za-z_][A-Za-z0-9_]*", terms)


def all_questions(data) -> list[str]:
    return [qid for version in data.versions for qid in version.survey.questions]
