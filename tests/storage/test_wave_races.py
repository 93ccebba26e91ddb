"""Waves that race safely (both engines, PostgreSQL the one where they raced): one open wave at a time, held by the
database; a label opened twice at once is one wave and a 409; a close waits for the responses being stored into
its wave; the no-JavaScript form is bound to the wave it was served in."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from deniable import storage
from deniable.client.memo import Memo
from tests.databases import PANEL_ANSWERS

pytestmark = pytest.mark.both_engines

def _each(db_path, count, work):
    """``work(store, i)`` in ``count`` threads with a store each, started together; outcomes or errors."""
    start = threading.Barrier(count)

    def run(i):
        with storage.Store(db_path, migrate=False) as own:
            start.wait(30)
            try:
                return work(own, i)
            except Exception as error:  # noqa: BLE001 - the outcome under test
                return error

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def test_concurrent_opens_leave_one_wave_open(db_path, store, pulse):
    """Before: two concurrent opens left two waves open (3 of 6 trials on PostgreSQL)."""
    for trial in range(4):
        outcomes = _each(db_path, 6, lambda own, i: own.open_wave("pulse", f"t{trial}-{i}"))
        assert all(isinstance(o, dict) for o in outcomes), outcomes
        assert len([w for w in store.waves("pulse") if w["closed_on"] is None]) == 1
    with pytest.raises(Exception, match="(?i)unique|constraint"):  # and the database itself refuses a second
        store.execute("INSERT INTO waves (survey_id, label, position, opened_on, closed_on) "
                      "VALUES ('pulse', 'sneaked', 99, '2026-11-26', NULL)")


def test_one_label_opened_twice_at_once_is_one_wave_and_a_409(db_path, store, pulse):
    """Before: a 500 with a UniqueViolation traceback (4 of 6 trials on PostgreSQL)."""
    outcomes = _each(db_path, 6, lambda own, i: own.open_wave("pulse", "2026-12"))
    opened = [o for o in outcomes if isinstance(o, dict)]
    refused = [o for o in outcomes if not isinstance(o, dict)]
    assert len(opened) == 1 and all(isinstance(o, storage.Conflict) and o.field == "wave" for o in refused), outcomes
    assert [w["label"] for w in store.waves("pulse")] == ["2026-12"]


def test_a_close_waits_for_the_responses_being_stored_into_its_wave(db_path, store, pulse):
    """Responses stream in while the wave closes: every response stored into it was stored before the close returned
    (before: 7 were committed after), and every later one is refused as for a closed wave, never counted in another."""
    store.open_wave("pulse", "w1")
    closed = threading.Event()
    counted_at_close = []

    def respond(own, i):
        outcomes = []
        for j in range(25):
            body = pulse.randomize(PANEL_ANSWERS, memo=Memo.from_secret(bytes([i, j]) * 16))
            # Whether the close had returned before this submission began: one that began earlier may still be
            # stored (the close waits for it), and read the flag only after the close has set it.
            after = closed.is_set()
            try:
                own.submit("pulse", pulse.hash, f"key-{i:02d}-{j:03d}", body, wave="w1")
                outcomes.append(("stored", after))
            except storage.StorageError as error:
                outcomes.append((type(error).__name__, after))
            if i == 0 and j == 8:
                with storage.Store(db_path, migrate=False) as closer:
                    closer.close_wave("pulse")
                    counted_at_close.append(closer.response_count("pulse"))
                closed.set()
        return outcomes

    outcomes = [o for each in _each(db_path, 6, respond) for o in each]
    assert counted_at_close and store.response_count("pulse") == counted_at_close[0]
    assert all(kind == "Gone" for kind, after in outcomes if after)  # refused once it closed
    assert {w["label"]: w["responses"] for w in store.waves("pulse")} == {"w1": counted_at_close[0]}
