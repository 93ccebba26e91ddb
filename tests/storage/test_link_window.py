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
        # The log is cut to nothing at a commit once the window has passed: it never grows over a window's commits.
        resets = sum(1 for (_, before), (_, after) in zip(sizes, sizes[1:]) if after < before)
        elapsed = sizes[-1][0]
        assert resets >= int(elapsed / WINDOW) - 1, (resets, elapsed)
        assert store.response_count("tax") == 400
