"""A WSGI app served from a thread on 127.0.0.1 for the length of a ``with`` block, for the tests that need a real
address (the clients' examples, a flaky proxy, `load(url=...)`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from werkzeug.serving import make_server


@contextlib.contextmanager
def served(app) -> Iterator[str]:
    """Yields the base URL, ``http://127.0.0.1:PORT``; the server is shut down when the block ends."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
