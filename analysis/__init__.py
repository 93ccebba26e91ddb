"""deniable.analysis: debiased estimates, uncertainty, subgroups, regression and planning.

    from deniable.analysis import load, estimate
    data = load(db="deniable.db", survey_id="tax")
    estimate(data, "dodged").to_frame()

Names are imported from their modules on first use, so a command that only plans (numpy) never
loads scipy, pandas or statsmodels.
"""

from __future__ import annotations

import importlib

#: public name → the module that defines it
_HOMES = {
    "BINARY_METHODS": "estimators", "DEFAULT_BINARY_METHOD": "estimators", "ConfidenceInterval": "estimators",
    "Comparison": "groups", "compare": "groups", "subgroup_frame": "groups", "subgroups": "groups",
    "Certificate": "likelihood", "ConvergenceWarning": "likelihood",
    "LoadError": "errors", "PoolingError": "errors", "load": "loading",
    "QuestionPlan": "planning", "compare_designs": "planning", "describe_plan": "planning",
    "margin_of_error": "planning", "plan": "planning", "power": "planning", "sample_size": "planning",
    "unit_variance": "planning",
    "logistic": "regression", "SeparationWarning": "regression", "linear": "predictor",
    "correlation": "correlation", "Correlation": "correlation",
    "EstimateTable": "tables", "estimate_table": "tables",
    "CATEGORICAL_METHODS": "results", "EstimateResult": "results", "MeanEstimate": "results", "Summary": "results",
    "estimate": "estimation", "population": "estimation", "AnalysisError": "errors",
    "LoadedSurvey": "loaded", "Version": "loaded", "SampleDesign": "sampling",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOMES))
