"""What a process opens it closes (invariant 13): a loaded survey owns the connection `load(db=…)` opened, and the
dashboard reads through the request's own store. Before: each `load` kept one of PostgreSQL's 32 pooled
connections, so the 33rd `load` in a process failed and a worker's 32nd estimates page answered 500."""

import gc
import os

import pytest

from deniable import storage
from deniable.analysis import LoadError, estimate, load
from tests.server.conftest import ANSWERS, sign_in, wait_for_background

pytestmark = pytest.mark.both_engines


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _connections_out(db_path) -> int:
    """Connections lent by this process's pool for the database (PostgreSQL), or 0."""
    pools = [pool for (url, pid), pool in storage.postgresql._POOLS.items() if url == db_path and pid == os.getpid()]
    return sum(pool.get_stats()["pool_size"] - pool.get_stats()["pool_available"] for pool in pools)


@pytest.fixture
def answered(store, survey):
    for i in range(20):
        store.submit("tax", survey.hash, f"key-{i:08d}", survey.randomize(ANSWERS))
    return survey


@pytest.fixture
def no_log_timer(monkeypatch):
    """The log's reset timer (`storage.link_window`) opens a connection of its own for a moment when a window ends:
    not a leak, but one more descriptor if it ends between the two counts. Its window is longer than the test."""
    from deniable.storage import link_window

    monkeypatch.setattr(link_window, "LINK_WINDOW_SECONDS", 3600.0)


def test_a_hundred_loads_in_one_process_leave_nothing_open(no_log_timer, db_path, answered, engine):
    with load(db=db_path, survey_id="tax") as warm:  # imports and first-use files (not per load) before counting
        estimate(warm, "dodged")
    gc.collect()
    before = _open_descriptors(), _connections_out(db_path)
    shares = set()
    for i in range(100):
        if i % 2:
            with load(db=db_path, survey_id="tax") as data:
                shares.add(round(float(estimate(data, "dodged").table["estimate"].iloc[0]), 12))
        else:  # never closed by hand: released when the loaded survey is collected
            data = load(db=db_path, survey_id="tax")
            shares.add(round(float(estimate(data, "dodged").table["estimate"].iloc[0]), 12))
            del data
    gc.collect()
    assert len(shares) == 1
    assert (_open_descriptors(), _connections_out(db_path)) == before


def test_a_closed_loaded_survey_keeps_what_it_read_and_says_so_for_the_rest(db_path, answered):
    data = load(db=db_path, survey_id="tax")
    first = estimate(data, "dodged").table["estimate"].tolist()
    data.close()
    data.close()  # twice is harmless
    assert estimate(data, "dodged").table["estimate"].tolist() == first  # counted before the close
    with pytest.raises(LoadError, match="closed; load it again"):
        data.frame()  # one row per response: never read before the close


def test_load_takes_an_open_store_and_leaves_it_open(store, answered):
    with load(store=store, survey_id="tax") as data:
        estimate(data, "dodged")
    assert store.response_count("tax") == 20  # still the caller's, still open
    with pytest.raises(LoadError, match="one of db=, store= and url="):
        load(store=store, db="x.db", survey_id="tax")


@pytest.mark.slow
def test_a_hundred_dashboard_views_answer_200_and_leave_nothing_open(no_log_timer, client, db_path, answered):
    sign_in(client)
    assert client.get("/admin/surveys/tax").status_code == 200  # the first view imports and plans
    wait_for_background()  # what the first view left to the background thread holds a connection while it runs
    gc.collect()
    before = _open_descriptors(), _connections_out(db_path)
    statuses = [client.get("/admin/surveys/tax").status_code for _ in range(100)]
    gc.collect()
    assert set(statuses) == {200}
    assert (_open_descriptors(), _connections_out(db_path)) == before
