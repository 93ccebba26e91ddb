"""One BLAS thread for the matrices analysis works on: at most a few thousand wide, where a BLAS's threads spin more
than they compute (a k = 100 estimate took ten times the CPU with OpenBLAS's default threads; a plan's 1001 × 1001
inverse, 7 s of the process's CPU beside 0.3 s of its own on a busy machine). The `deniable` command sets it for the
whole process before numpy loads; a notebook or a server embedding the library gets it here."""

from __future__ import annotations

import functools

from threadpoolctl import ThreadpoolController


def one_thread():
    """A context in which the loaded BLAS libraries use one thread each (restored after)."""
    return _controller().limit(limits=1, user_api="blas")


@functools.cache
def _controller() -> ThreadpoolController:
    """The loaded BLAS libraries, found once: `threadpool_limits` reads /proc/self/maps on every call (2.3 ms, 40% of
    a 10-answer estimate); numpy, the library that matters here, is loaded before the first use."""
    return ThreadpoolController()
