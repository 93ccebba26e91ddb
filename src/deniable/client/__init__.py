"""deniable.client: randomize survey answers on the respondent's device.

Standard library only. Every mechanism is an exact channel (`fractions.Fraction` entries);
ε is computed from it. See docs/mechanisms.md.
"""

from .catalogue import english_statement as privacy_statement
from .errors import AnswerError, DeniableDeprecationWarning, DeniableError, DeniableWarning, SpecError
from .exact import EpsilonRequest
from .laplace import LaplaceMechanism
from .mechanisms import ChannelMechanism, Mechanism, UnaryMechanism
from .memo import Memo, MemoError
from .privacy import posterior_bound
from .questions import QUESTION_TYPES, Question
from .reports import ReportError, grouping_question, validate_reports
from .submit import (
    Flushed,
    NoWaveOpen,
    Outbox,
    QuotaFull,
    ResponseRejected,
    RetryLater,
    SpecMismatch,
    StaleSpec,
    Submission,
    SubmitError,
    SurveyClosed,
    SurveyNotFound,
    TokenAlreadyUsed,
    WaveClosed,
    fetch_survey,
    post_response,
    submit,
)
from .survey import Survey

__all__ = [
    "AnswerError",
    "ChannelMechanism",
    "DeniableDeprecationWarning",
    "DeniableError",
    "DeniableWarning",
    "EpsilonRequest",
    "LaplaceMechanism",
    "Mechanism",
    "Memo",
    "MemoError",
    "QUESTION_TYPES",
    "Question",
    "ReportError",
    "SpecError",
    "Survey",
    "NoWaveOpen",
    "QuotaFull",
    "ResponseRejected",
    "RetryLater",
    "SpecMismatch",
    "StaleSpec",
    "Submission",
    "SubmitError",
    "SurveyClosed",
    "SurveyNotFound",
    "TokenAlreadyUsed",
    "UnaryMechanism",
    "WaveClosed",
    "fetch_survey",
    "grouping_question",
    "Flushed",
    "Outbox",
    "post_response",
    "posterior_bound",
    "privacy_statement",
    "submit",
    "validate_reports",
]
