"""Work a page started and could not finish in its time: one thread per server process finishes it, so the next
view of the page finds it done (a plan's bootstrap of a wide number grid took minutes; the page waits 1 s).

The thread is a daemon: a process that stops (a worker restarted, Ctrl-C, the test run ending) does not wait for
unfinished work, which only ever fills a cache."""

from __future__ import annotations

import logging
import os
import queue
import threading
import time

#: Jobs waiting or running at once in a process; more are not queued (the page says so and asks again later).
MAX_JOBS = 4

_lock = threading.Lock()
_state: dict = {}


def _jobs() -> tuple[queue.Queue, dict]:
    # A forked worker starts with no thread of its parent's: its own queue, job list and thread.
    if _state.get("pid") != os.getpid():
        _state.update(pid=os.getpid(), queue=queue.Queue(), jobs={})
        threading.Thread(target=_work, args=(_state["queue"], _state["jobs"]), name="deniable-background",
                         daemon=True).start()
    return _state["queue"], _state["jobs"]


def _work(waiting: queue.Queue, jobs: dict):
    while True:
        key, work = waiting.get()
        try:
            work()
        except Exception:  # noqa: BLE001 - a background job has nobody to answer: its failure is logged
            logging.getLogger("deniable").exception("background job %r failed", key)
        finally:
            with _lock:
                jobs.pop(key, None)


def finish_later(key, work) -> bool:
    """Run ``work()`` in the background unless a job under ``key`` is queued or running already. False when the
    queue is full (nothing was started)."""
    with _lock:
        waiting, jobs = _jobs()
        if key in jobs:
            return True
        if len(jobs) >= MAX_JOBS:
            return False
        jobs[key] = work
        waiting.put((key, work))
        return True


def pending(key) -> bool:
    with _lock:
        return key in _jobs()[1]


def wait_until_idle(timeout: float = 300.0) -> bool:
    """Wait until this process has no job waiting or running (tests, and a process about to stop); False if some
    remained after ``timeout`` seconds."""
    waited = time.monotonic()
    while True:
        with _lock:
            busy = bool(_state.get("pid") == os.getpid() and _state["jobs"])
        if not busy:
            return True
        if time.monotonic() - waited > timeout:
            return False
        time.sleep(0.02)
