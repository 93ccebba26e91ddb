"""A time limit that holds inside a computation: the long fits check it between steps, so a caller that gives a
page two seconds gets its answer (or `OutOfTime`) in about two seconds, not after the one fit that takes a minute
(a plan's bootstrap of a 0..1000 grid: over 100 s of CPU; one of its fits alone, 21 s)."""

from __future__ import annotations

import contextlib
import contextvars
import time

from .errors import OutOfTime

#: When the computation under way must stop (`time.perf_counter()`), or None.
_DEADLINE: contextvars.ContextVar = contextvars.ContextVar("deadline", default=None)


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Inside, `check_time` raises `OutOfTime` once ``seconds`` have passed (None: no limit). Limits nest: an inner
    one never extends an outer one."""
    if seconds is None:
        yield
        return
    deadline = time.perf_counter() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_time():
    deadline = _DEADLINE.get()
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime("out of time")
