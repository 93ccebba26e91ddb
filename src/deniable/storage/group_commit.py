"""Group commit: the single submissions that arrive together in one server process are stored by one of
their threads in one transaction, and each is acknowledged after that commit.

A commit's cost is mostly fixed (BEGIN, the survey and settings reads, one multi-row statement per table,
COMMIT and its fsync), so eight responses that wait on each other's commit cost little more than one. No
thread of its own: the first submission to find nobody writing becomes the leader, writes what is queued
(its own response first), then hands the lead to the oldest waiting submission, if any. Nothing is
acknowledged before the commit that stored it (invariant 6): a follower returns only when the leader has
set its outcome after COMMIT. Validation happens before a response joins the queue, in its own thread, so
one bad response never reaches the shared transaction; a transaction that fails for another reason is
redone response by response, so one response cannot fail its neighbours.
"""

from __future__ import annotations

import os
import threading

from .errors import StorageError, Unavailable
from .transactions import retrying

#: At most this many responses per shared transaction (a burst is written in several).
MAX_GROUP = 256


class _Waiting:
    __slots__ = ("entry", "outcome", "done", "lead")

    def __init__(self, entry):
        self.entry, self.outcome, self.done, self.lead = entry, None, False, False


class GroupCommit:
    """One per server process, shared by its request threads' stores (``Store(url, group_commit=…)``)."""

    def __init__(self, max_group: int = MAX_GROUP):
        self.max_group = max_group
        self._reset()

    def _reset(self):
        # A forked worker starts with its own queue and lock, never a copy of the parent's state.
        self._pid = os.getpid()
        self._changed = threading.Condition(threading.Lock())
        self._queue: list[_Waiting] = []
        self._leading = False
        self.groups = 0  # transactions written (tests and benchmarks read it)
        self.responses = 0

    def submit(self, store, entry):
        """Store one prepared response (`Writes._prepare`) with whatever else is waiting; (acknowledgement,
        created), or the StorageError it earned, raised."""
        if self._pid != os.getpid():
            self._reset()
        waiting = _Waiting(entry)
        with self._changed:
            self._queue.append(waiting)
            if self._leading:
                while not (waiting.done or waiting.lead):
                    self._changed.wait()
            else:
                self._leading = True
                waiting.lead = True
        if not waiting.done:
            self._lead(store)
        if isinstance(waiting.outcome, BaseException):
            raise waiting.outcome
        return waiting.outcome

    def _lead(self, store):
        """Write groups until this thread's own response is stored, then pass the lead on."""
        group: list[_Waiting] = []
        try:
            with self._changed:
                group = self._queue[:self.max_group]  # the leader's own response is first: it was queued first
                del self._queue[:self.max_group]
            outcomes = _write(store, [w.entry for w in group])
        except BaseException as error:  # noqa: BLE001 - every waiting thread must hear of it, then it goes on up
            # Only the leader was writing: the others get a refusal of their own to answer with.
            outcomes = [error] + [Unavailable("not stored: the server failed while storing it; send it again with the "
                                              "same idempotency key") for _ in group[1:]]
            raise
        finally:
            with self._changed:
                for waiting, outcome in zip(group, outcomes):
                    waiting.outcome, waiting.done = outcome, True
                self.groups += 1
                self.responses += len(group)
                if self._queue:
                    self._queue[0].lead = True
                else:
                    self._leading = False
                self._changed.notify_all()


def _write(store, entries: list) -> list:
    """Each entry's outcome. On PostgreSQL new responses to an open survey go in one statement (one round trip,
    `Writes.store_in_one_statement`); the rest (or all, elsewhere) in one transaction, or, if that fails as a whole,
    one each."""
    if not store.writes.in_one_statement(entries):
        results = [None] * len(entries)
    else:
        try:
            results = retrying(lambda: store.writes.store_in_one_statement(entries))
        except StorageError:  # judged step by step instead, each earning its own answer
            results = [None] * len(entries)
    left = [position for position, outcome in enumerate(results) if outcome is None]
    # Step by step, each response is judged by its survey's record as it is now (not one remembered from before).
    refreshed = []
    for position in left:
        try:
            refreshed.append((position, store.writes.refreshed(entries[position])))
        except StorageError as error:  # the survey is gone meanwhile: that response's answer
            results[position] = error
    for (position, _), outcome in zip(refreshed, _step_by_step(store, [entry for _, entry in refreshed])
                                      if refreshed else []):
        results[position] = outcome
    return results


def _step_by_step(store, entries: list) -> list:
    results: list = [None] * len(entries)
    by_survey: dict[str, list] = {}
    for position, entry in enumerate(entries):
        by_survey.setdefault(entry.survey_id, []).append(entry._replace(position=position))

    def together():
        with store.transaction():
            for survey_id, group in by_survey.items():
                store.writes.store_batch(survey_id, group, results)
        return results

    try:
        return retrying(together)
    except Exception:  # noqa: BLE001 - not one response's refusal (those are results): try each alone
        if len(entries) == 1:
            raise
    return [_alone(store, entry) for entry in entries]


def _alone(store, entry):
    try:
        return store.writes.store_one(entry)
    except StorageError as error:
        return error
