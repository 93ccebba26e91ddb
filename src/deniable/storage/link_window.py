"""How long SQLite's write-ahead log may hold a commit: at most `LINK_WINDOW_SECONDS`.

A response sent with an invitation is stored in one commit with its token's bitmap page, and the log keeps that commit's
pages, in order, until it is checkpointed and reset: from a copy of a live server's files, whoever also held the
contact list (addresses with their tokens) could join each address to its response (30 of 30 in a red team's test).
The main file holds no such link (rows by random id, the bitmap's bits as they are now, deleted content zeroed by
``secure_delete``), so the log is what must not keep it. After a commit, once the window has passed since the log was
last reset, the committing connection resets it (``wal_checkpoint(TRUNCATE)``: every page copied into the main file,
the log cut to nothing); and a commit with no other after it is reset by a timer when its window ends, so a quiet
server keeps no commit longer either. A reset that a reader holds up (busy) is tried again at the next commit or
timer, a second later.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import urllib.parse

#: The longest a commit stays in SQLite's log. A reset costs a checkpoint of what the window wrote (about 11 pages a
#: response: `schema.migrate_to_7`).
LINK_WINDOW_SECONDS = float(os.environ.get("DENIABLE_LINK_WINDOW_SECONDS", "60"))

_RESET: dict = {}  # database path → time.monotonic() of its last reset (or of this process's first commit)
_TIMERS: dict = {}  # database path → the pending timer that resets a quiet server's log
_LOCK = threading.Lock()


def after_commit(connection: sqlite3.Connection, path: str) -> None:
    """Called by the writer that just committed to ``path`` (still holding deniable's writer lock): resets the log if
    the window has passed since its last reset, and makes sure a timer will when this commit's window ends."""
    now = time.monotonic()
    with _LOCK:
        last = _RESET.setdefault(path, now)
    if now - last >= LINK_WINDOW_SECONDS:
        reset(connection, path)
    _ensure_timer(path)


def reset(connection: sqlite3.Connection, path: str) -> bool:
    """Checkpoint the whole log into the main file and cut it to nothing; False when a reader held it up."""
    busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if not busy:
        with _LOCK:
            _RESET[path] = time.monotonic()
    return not busy


def _ensure_timer(path: str, delay: float | None = None) -> None:
    with _LOCK:
        if path in _TIMERS:
            return
        timer = threading.Timer(LINK_WINDOW_SECONDS if delay is None else delay, _on_timer, [path])
        timer.daemon = True  # a process that exits closes its connections; SQLite then checkpoints the log itself
        _TIMERS[path] = timer
    timer.start()


def _on_timer(path: str) -> None:
    """A commit's window has ended: reset the log from a connection of the timer's own, unless a commit already did."""
    with _LOCK:
        _TIMERS.pop(path, None)
        since = time.monotonic() - _RESET.get(path, 0.0)
    if since < LINK_WINDOW_SECONDS:  # a commit reset it meanwhile: the window of what came after ends later
        _ensure_timer(path, LINK_WINDOW_SECONDS - since)
        return
    try:
        # mode=rw: a file gone since (a moved database, a test's) is not created anew, empty
        connection = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=rw", uri=True, timeout=30,
                                     isolation_level=None)
    except sqlite3.Error:
        return  # the file went (a test's, a moved database): nothing to keep
    try:
        done = reset(connection, path)
    except sqlite3.Error:
        done = False
    finally:
        connection.close()
    if not done:
        _ensure_timer(path, 1.0)  # a reader held it up: tried again in a second
