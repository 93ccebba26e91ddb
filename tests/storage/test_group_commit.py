"""Group commit: concurrent single submissions of one process stored in one transaction, each acknowledged
only after that commit, each judged as it would be alone (storage/group_commit.py)."""

import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from deniable import storage
from deniable.client import Survey
from deniable.storage.writes import Writes
from tests.conftest import EXAMPLES
from tests.databases import ANSWERS

pytestmark = pytest.mark.both_engines



def body(survey: Survey, key: str | None = None):
    return (survey.hash, key or secrets.token_hex(16), survey.randomize(ANSWERS))


class HeldWrites(Writes):
    """A write part whose first shared write waits until ``hold`` is set, and which records, while it writes a group,
    which of the callers had already been answered."""

    def __init__(self, store, hold: threading.Event | None = None, during=None):
        super().__init__(store)
        self.hold, self.during = hold, during

    def in_one_statement(self, entries):
        return False  # held on the shared transaction's path, which a group takes wherever one statement cannot

    def store_batch(self, survey_id, entries, results):
        if self.hold is not None:
            assert self.hold.wait(30)
        if self.during is not None:
            self.during(entries)
        return super().store_batch(survey_id, entries, results)


class HeldStore(storage.Store):
    """A store whose writes are `HeldWrites`."""

    def __init__(self, *args, hold: threading.Event | None = None, during=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.writes = HeldWrites(self, hold, during)


def reported(reader, question_id: str) -> int:
    """The running total of one question's reports (every report of a response is counted with it)."""
    return sum(row["count"] for row in reader.counts("tax")["counts"][question_id])


def wait_for(condition, seconds=30):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_waiting_submissions_are_one_transaction_acknowledged_after_its_commit(db_path, survey):
    committer = storage.GroupCommit()
    release = threading.Event()
    answered: list = []
    seen_during_write: list = []

    def submit(store, item):
        outcome = store.submit("tax", *item)
        answered.append(outcome)
        return outcome

    leader = HeldStore(db_path, migrate=False, group_commit=committer, hold=release)
    others = [HeldStore(db_path, migrate=False, group_commit=committer,
                        during=lambda entries: seen_during_write.append((len(entries), len(answered))))
              for _ in range(7)]
    try:
        with ThreadPoolExecutor(8) as pool:
            first = pool.submit(submit, leader, body(survey))
            wait_for(lambda: committer._leading)
            rest = [pool.submit(submit, store, body(survey)) for store in others]
            wait_for(lambda: len(committer._queue) == 7)
            assert not any(f.done() for f in [first, *rest])
            release.set()
            outcomes = [f.result(30) for f in [first, *rest]]
    finally:
        for store in [leader, *others]:
            store.close()
    assert committer.groups == 2 and committer.responses == 8
    # The second group: all seven written together by one of them, and none had its answer before the write.
    assert seen_during_write == [(7, 1)]
    assert all(created for _, created in outcomes)
    assert len({ack["id"] for ack, _ in outcomes}) == 8
    with storage.Store(db_path, read_only=True) as reader:
        assert reader.response_count("tax") == 8
        assert reported(reader, "dodged") == 8


def test_many_threads_every_acknowledged_response_stored_once(db_path, survey):
    committer = storage.GroupCommit()
    stores = [storage.Store(db_path, migrate=False, group_commit=committer) for _ in range(12)]
    items = [body(survey) for _ in range(240)]
    retries = items[::10]  # sent twice: the second is a retry and gets the first acknowledgement

    def work(position):
        store = stores[position % len(stores)]
        return [store.submit("tax", *item) for item in items[position::len(stores)]]

    try:
        with ThreadPoolExecutor(len(stores)) as pool:
            outcomes = [o for batch in pool.map(work, range(len(stores))) for o in batch]
        again = [stores[0].submit("tax", *item) for item in retries]
    finally:
        for store in stores:
            store.close()
    assert sum(created for _, created in outcomes) == 240
    assert not any(created for _, created in again)
    first_ids = {key: ack["id"] for (_, key, _), (ack, _) in zip(
        [i for p in range(12) for i in items[p::12]], outcomes)}
    assert all(ack["id"] == first_ids[key] for (_, key, _), (ack, _) in zip(retries, again))
    assert committer.responses == 240 + len(retries) and committer.groups <= committer.responses
    with storage.Store(db_path, read_only=True) as reader:
        assert reader.response_count("tax") == 240
        assert reported(reader, "dodged") == reported(reader, "cash") == 240


def test_one_group_judges_each_response_alone(db_path, store, demo):
    """A duplicate key, a spent token and a good response in one group: each gets what it would get alone."""
    store.add_survey(demo)
    invited = Survey.from_file(EXAMPLES / "tax.yaml")
    invited_spec = invited.to_dict()
    invited_spec["id"] = "invited"
    invited = Survey.from_dict(invited_spec)
    store.add_survey(invited, access="token")
    token, spent = store.issue_tokens("invited", 2)
    store.submit("invited", *body(invited), token=spent)
    committer = storage.GroupCommit()
    release = threading.Event()
    duplicate = body(demo)
    leader = HeldStore(db_path, migrate=False, group_commit=committer, hold=release)
    others = [storage.Store(db_path, migrate=False, group_commit=committer) for _ in range(4)]
    calls = [(others[0], "tax", duplicate, None), (others[1], "tax", duplicate, None),
             (others[2], "invited", body(invited), spent), (others[3], "invited", body(invited), token)]

    def call(store, survey_id, item, token):
        try:
            return store.submit(survey_id, *item, token=token)
        except storage.StorageError as error:
            return error

    try:
        with ThreadPoolExecutor(5) as pool:
            first = pool.submit(call, leader, "tax", body(demo), None)
            wait_for(lambda: committer._leading)
            rest = [pool.submit(call, *c) for c in calls]
            wait_for(lambda: len(committer._queue) == 4)
            release.set()
            first, dup_a, dup_b, refused, accepted = [f.result(30) for f in [first, *rest]]
    finally:
        for s in [leader, *others]:
            s.close()
    assert committer.groups == 2
    assert first[1] is True
    assert {dup_a[1], dup_b[1]} == {True, False} and dup_a[0]["id"] == dup_b[0]["id"]
    assert isinstance(refused, storage.Conflict) and refused.field == "token"
    assert accepted[1] is True
    assert store.response_count("tax") == 2 and store.response_count("invited") == 2
    assert store.token_counts("invited")["used"] == 2


def test_a_group_that_fails_as_a_whole_is_written_one_by_one(db_path, survey):
    committer = storage.GroupCommit()
    release = threading.Event()
    failed = []

    class FailingOnceWrites(HeldWrites):
        def store_batch(self, survey_id, entries, results):
            if len(entries) > 1 and not failed:
                failed.append(len(entries))
                raise RuntimeError("the shared transaction fails")
            return super().store_batch(survey_id, entries, results)

    class FailingOnce(storage.Store):
        def __init__(self, *args, hold=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.writes = FailingOnceWrites(self, hold)

    stores = [FailingOnce(db_path, migrate=False, group_commit=committer, hold=release if i == 0 else None)
              for i in range(6)]
    try:
        with ThreadPoolExecutor(6) as pool:
            first = pool.submit(stores[0].submit, "tax", *body(survey))
            wait_for(lambda: committer._leading)
            rest = [pool.submit(s.submit, "tax", *body(survey)) for s in stores[1:]]
            wait_for(lambda: len(committer._queue) == 5)
            release.set()
            outcomes = [f.result(30) for f in [first, *rest]]
    finally:
        for store in stores:
            store.close()
    assert failed == [5]
    assert all(created for _, created in outcomes)
    with storage.Store(db_path, read_only=True) as reader:
        assert reader.response_count("tax") == 6


def test_a_forked_process_starts_with_its_own_queue(db_path, survey):
    committer = storage.GroupCommit()
    committer._leading = True  # as a fork taken while the parent's leader was writing would inherit it
    committer._pid = -1
    with storage.Store(db_path, migrate=False, group_commit=committer) as store:
        _, created = store.submit("tax", *body(survey))
    assert created and committer.groups == 1 and not committer._leading


def test_a_writer_without_its_lock_file_still_writes(tmp_path, monkeypatch, demo):
    """The lock file beside the database cannot be created (a folder others own): SQLite's own wait serves."""
    import os

    path = str(tmp_path / "locked.db")
    with storage.Store(path) as store:
        store.add_survey(demo)
    real_open = os.open

    def refuse(name, *args, **kwargs):
        if str(name).endswith("-writer"):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    with storage.Store(path, migrate=False) as store:
        _, created = store.submit("tax", *body(demo))
        assert created and store.response_count("tax") == 1
