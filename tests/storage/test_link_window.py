"""SQLite's write-ahead log keeps no commit longer than the link window (`storage.link_window`): a response stored with
its invitation is one commit with its token's bitmap page, and from a copy of a live server's files the log joined
each address to its response. Tested by the red team's method: the files copied as they are, the log read."""

import shutil
import time

import pytest

from deniable import storage
from deniable.client import Survey
from deniable.storage import link_window
from tests.conftest import EXAMPLES, SeededSource
from tests.databases import ANSWERS

WINDOW = 0.5


@pytest.fixture
def short_window(monkeypatch):
    monkeypatch.setattr(link_window, "LINK_WINDOW_SECONDS", WINDOW)


def _answer(store, survey, tokens, first: int, count: int):
    for i in range(first, first + count):
        store.submit("tax", survey.hash, f"key-{i:06d}", survey.randomize(ANSWERS, rng=SeededSource(i)), tokens[i])


def _copied_log(db_path, tmp_path) -> bytes:
    """The log as a copy of the live server's files would hold it."""
    shutil.copy(f"{db_path}-wal", tmp_path / "copy.db-wal")
    return (tmp_path / "copy.db-wal").read_bytes()


def test_a_quiet_server_s_log_holds_no_commit_past_the_window(db_path, tmp_path, short_window):
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    with storage.Store(db_path) as store:
        store.add_survey(survey, access="token")
        tokens = store.issue_tokens("tax", 20)
        _answer(store, survey, tokens, 0, 20)
        assert len(_copied_log(db_path, tmp_path)) > 0  # within the window the commits are there ...
        time.sleep(WINDOW + 1.5)  # ... and then nothing commits: the timer resets the log
        assert _copied_log(db_path, tmp_path) == b""
        assert store.response_count("tax") == 20 and store.token_counts("tax")["used"] == 20


def test_a_busy_server_resets_its_log_at_a_commit_once_the_window_has_passed(db_path, tmp_path, short_window):
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    sizes = []
    with storage.Store(db_path) as store:
        store.add_survey(survey, access="token")
        tokens = store.issue_tokens("tax", 400)
        started = time.monotonic()
        for batch in range(40):
            _answer(store, survey, tokens, batch * 10, 10)
            sizes.append((time.monotonic() - started, len(_copied_log(db_path, tmp_path))))
            time.sleep(0.05)
        # The log is cut to nothing at the first commit once the window has passed: no stretch without a cut lasts
        # longer than the window and the batches around it. Read from the samples' own times, so a loaded machine's
        # slower batches widen the bound instead of failing it.
        times = [at for at, _ in sizes]
        longest_gap = max(b - a for a, b in zip([0.0, *times], times))
        cuts = [0.0] + [at for (_, before), (at, after) in zip(sizes, sizes[1:]) if after < before] + [times[-1]]
        assert len(cuts) > 3, sizes  # the log was cut again and again, not once
        longest_stretch = max(b - a for a, b in zip(cuts, cuts[1:]))
        assert longest_stretch <= WINDOW + 2 * longest_gap, (longest_stretch, longest_gap, sizes)
        assert store.response_count("tax") == 400
