"""A time limit that holds inside a computation: the long fits check it between steps, so a caller that gives a
page one second gets its answer (or `OutOfTime`) after about one second, not after the one fit that takes a minute
(a plan's bootstrap of a 0..1000 grid: over 100 s of CPU; one of its fits alone, 21 s).

The clock is the calling thread's CPU time: what the computation itself spent, which other requests and other
processes on a loaded machine do not inflate (a limit in wall time cut the same plan at different places from one
run to the next, and left a test's questions unplanned on a busy machine)."""

from __future__ import annotations

import contextlib
import contextvars
import time

from .errors import OutOfTime

#: When the computation under way must stop (`time.thread_time()`), or None.
_DEADLINE: contextvars.ContextVar = contextvars.ContextVar("deadline", default=None)


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Inside, `check_time` raises `OutOfTime` once this thread has spent ``seconds`` of CPU (None: no limit). Limits
    nest: an inner one never extends an outer one."""
    if seconds is None:
        yield
        return
    deadline = time.thread_time() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_time():
    deadline = _DEADLINE.get()
    if deadline is not None and time.thread_time() > deadline:
        raise OutOfTime("out of time")
