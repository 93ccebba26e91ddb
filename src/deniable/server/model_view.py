"""The dashboard's multilevel model page as data, without Flask: the fit of a formula (`analysis.mixed`), its terms,
its groups' effects and its small-area estimates over the sample's own cells (`analysis.small_areas`), ordered, with
the chart's geometry. `admin` routes the page; a fit is worked out once per data and formula and remembered."""

from __future__ import annotations

import collections
import logging
import threading

import numpy as np

from deniable.analysis.mixed import mixed
from deniable.analysis.mixed_likelihood import GroupedReports
from deniable.analysis.small_areas import small_areas
from deniable.client.errors import DeniableError

from .dashboard import bars

#: Fits remembered in this process, by (where, survey, version, responses, formula, level): the next view, and the
#: area table's download, reuse them.
MODELS_KEPT = 32
_models: collections.OrderedDict = collections.OrderedDict()
_lock = threading.Lock()


def suggested_formula(survey) -> str:
    """A first formula to edit: the first randomized yes/no question by the first public choice question (or frame
    column) as the groups; empty when the survey has neither."""
    outcome = next((qid for qid, q in survey.questions.items()
                    if q.is_private and q.type == "yes_no"), None)
    group = next((qid for qid, q in survey.questions.items() if not q.is_private and q.type == "choice"), None)
    group = group or next(iter(survey.sample.get("frame", [])), None)
    return f"{outcome} ~ 1 + (1 | {group})" if outcome and group else ""


def remembered(key):
    with _lock:
        found = _models.get(key)
        if found is not None:
            _models.move_to_end(key)
        return found


def fit_model(key, data, formula: str, level: float) -> dict:
    """The page's figures for ``formula`` over ``data`` (remembered under ``key``): the terms, the groups and the
    areas, or ``error``, the refusal's message, when the formula cannot be fitted."""
    try:
        fit = mixed(formula, data, level=level)
        areas = small_areas(fit, "sample") if _has_areas(fit) else None
    except DeniableError as error:
        view = {"error": error.message}
    except (ArithmeticError, ValueError, np.linalg.LinAlgError) as error:
        # remembered as the page's answer: a failure left unremembered sent the page round its reload for ever
        logging.getLogger("deniable").exception("the model %r failed", formula)
        view = {"error": f"the fit failed ({type(error).__name__}: {error}); the server's log has the details"}
    else:
        view = _view(fit, areas)
    with _lock:
        _models[key] = view
        while len(_models) > MODELS_KEPT:
            _models.popitem(last=False)
    return view


def _has_areas(fit) -> bool:
    """Whether each group has a share to estimate: a model of a randomized answer with one grouping factor."""
    return isinstance(fit.data, GroupedReports) and len(fit.components) == 1


def _view(fit, areas) -> dict:
    frame = fit.to_frame()
    terms = [{"term": term, "estimate": row["estimate"], "se": row["se"], "low": row["ci_low"], "high": row["ci_high"],
              "pvalue": row["pvalue"]} for term, row in frame.iterrows()]
    components = [{"factor": factor, "sd": row["sd"], "low": row["ci_low"], "high": row["ci_high"],
                   "pvalue": row["pvalue"], "groups": int(row["groups"])} for factor, row in fit.components.iterrows()]
    view = {"formula": fit.formula, "group": fit.group, "n": fit.n, "components": components, "icc": fit.icc,
            "method": fit.method, "converged": fit.converged, "newton_decrement": fit.newton_decrement,
            "terms": terms, "notes": list(fit.notes), "level": fit.level, "areas": None, "model": fit.model,
            "no_areas": None if _has_areas(fit) else
            (f"this model has {len(components)} grouping factors" if len(components) > 1 else
             "this model's outcome is public (its randomized answer is a covariate)")}
    if areas is None:
        return view
    table = areas.table.sort_values("estimate")
    chart = bars(table)
    for row, (name, area) in zip(chart, table.iterrows()):
        row.update(label=str(name), respondents=int(area["respondents"]), population=float(area["population"]),
                   direct=area["direct"], direct_se=area["direct_se"], shrinkage=area["shrinkage"])
    view.update(areas=chart, notes=view["notes"] + list(areas.notes), area_csv=areas.to_frame().to_csv(),
                area_json=areas.to_frame().reset_index().to_json(orient="records", double_precision=15))
    return view
