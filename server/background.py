"""Work a page started and could not finish in its time: one thread per server process finishes it, so the next
view of the page finds it done (a plan's bootstrap of a wide number grid took minutes; the page waits 2 s)."""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading

#: Jobs waiting or running at once in a process; more are not queued (the page says so and asks again later).
MAX_JOBS = 4

_lock = threading.Lock()
_state: dict = {}


def _executor():
    # A forked worker starts with no thread of its parent's: its own executor and job list.
    if _state.get("pid") != os.getpid():
        _state.update(pid=os.getpid(), executor=concurrent.futures.ThreadPoolExecutor(1, "deniable-background"),
                      jobs={})
    return _state["executor"], _state["jobs"]


def finish_later(key, work) -> bool:
    """Run ``work()`` in the background unless a job under ``key`` is queued or running already. False when the
    queue is full (nothing was started)."""
    with _lock:
        executor, jobs = _executor()
        if key in jobs:
            return True
        if len(jobs) >= MAX_JOBS:
            return False

        def run():
            try:
                work()
            except Exception:  # noqa: BLE001 - a background job has nobody to answer: its failure is logged
                logging.getLogger("deniable").exception("background job %r failed", key)
            finally:
                with _lock:
                    jobs.pop(key, None)

        jobs[key] = executor.submit(run)
        return True


def pending(key) -> bool:
    with _lock:
        return key in _executor()[1]
