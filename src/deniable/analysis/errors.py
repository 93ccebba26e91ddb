"""The analysis room's errors: each is a `DeniableError` (and a ValueError, as bad arguments are)."""

from __future__ import annotations

from deniable.client.errors import DeniableError


class AnalysisError(DeniableError, ValueError):
    """An estimate, test or plan that cannot be made from what was given; the message says why."""


class LoadError(AnalysisError):
    """The data could not be loaded; the message says which source and why."""


class PoolingError(LoadError):
    """A question's randomization differs between the versions asked for: they cannot be pooled."""


class OutOfTime(AnalysisError):
    """A computation under a time limit (`deadline.time_limit`) was not finished when it ran out."""


class DesignNotSupported(AnalysisError):
    """A question whose design-based estimate is not available (`weighted.design_estimate` says which)."""
