"""What `deniable.analysis` exports, and from where: read by type checkers and IDEs, and by `lazy_loader` at run time,
which imports each module on the first use of one of its names (a command that only plans never loads scipy, pandas
or statsmodels). A name added here is public."""

from .correlation import Correlation, correlation
from .errors import AnalysisError, LoadError, PoolingError
from .estimation import estimate
from .estimators import (
    BINARY_METHODS,
    DEFAULT_BINARY_METHOD,
    ConfidenceInterval,
)
from .family import Result, Summary
from .formulas import RegressionResults
from .groups import (
    Comparison,
    compare,
    subgroup_frame,
    subgroups,
)
from .likelihood import Certificate, ConvergenceWarning
from .loaded_survey import LoadedSurvey
from .loading import load
from .mixed import MixedResult, mixed
from .planned_design import PlannedDesign, planned_design
from .plans import Plans, QuestionPlan, describe_plan, plan
from .precision import (
    compare_designs,
    margin_of_error,
    power,
    sample_size,
    unit_variance,
)
from .predictor import linear
from .regression import SeparationWarning, logistic
from .results import (
    CATEGORICAL_METHODS,
    EstimateResult,
    MeanEstimate,
)
from .sample_design import SampleDesign
from .small_areas import SmallAreas, small_areas
from .survey_data import SurveyData, Version, population
from .tables import EstimateTable, estimate_table

__all__ = [
    "AnalysisError", "BINARY_METHODS", "CATEGORICAL_METHODS", "Certificate", "Comparison", "ConfidenceInterval",
    "ConvergenceWarning", "Correlation", "DEFAULT_BINARY_METHOD", "EstimateResult", "EstimateTable", "LoadError",
    "LoadedSurvey", "MeanEstimate", "MixedResult", "Plans", "PlannedDesign", "PoolingError", "QuestionPlan",
    "RegressionResults", "Result", "SampleDesign", "SeparationWarning", "SmallAreas", "Summary", "SurveyData",
    "Version", "compare", "compare_designs", "correlation", "describe_plan", "estimate", "estimate_table", "linear",
    "load", "logistic", "margin_of_error", "mixed", "plan", "planned_design", "population", "power", "sample_size",
    "small_areas", "subgroup_frame", "subgroups", "unit_variance",
]
