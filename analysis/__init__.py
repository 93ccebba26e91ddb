"""deniable.analysis: debiased estimates, uncertainty, subgroups, regression and planning.

    from deniable.analysis import load, estimate
    data = load(db="deniable.db", survey_id="tax")
    estimate(data, "dodged").to_frame()
"""

from .estimators import BINARY_METHODS, DEFAULT_BINARY_METHOD, ConfidenceInterval
from .groups import Comparison, compare, subgroup_frame, subgroups
from .likelihood import Certificate, ConvergenceWarning
from .load import LoadedSurvey, LoadError, PoolingError, Version, load
from .planning import compare_designs, margin_of_error, power, sample_size, unit_variance
from .regression import logistic
from .results import CATEGORICAL_METHODS, EstimateResult, MeanEstimate, Summary, estimate, population

__all__ = [
    "BINARY_METHODS", "CATEGORICAL_METHODS", "Certificate", "Comparison", "ConvergenceWarning", "ConfidenceInterval", "DEFAULT_BINARY_METHOD", "EstimateResult", "LoadError",
    "LoadedSurvey", "MeanEstimate", "PoolingError", "Version", "Summary", "compare", "compare_designs", "estimate", "load", "logistic",
    "margin_of_error", "population", "power", "sample_size", "subgroup_frame", "subgroups", "unit_variance",
]
