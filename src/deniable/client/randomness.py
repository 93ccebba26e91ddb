"""Randomness for the samplers: the operating system's CSPRNG read in blocks, drawn exactly.

A randomness source is anything with ``randbelow(n) -> int`` uniform on ``range(n)``; the default
is the `secrets` module, and `WordPool` the block reader that batches use. Tests may inject a
seeded one; real use must not. Twin of the JS client's ``src/randomness.js``.
"""

from __future__ import annotations

import os
import threading
from array import array

#: One word: 32 random bits.
WORD = 1 << 32


class WordSource:
    """Exact uniform draws (``randbelow``) from a stream of 32-bit words (``word``), by rejection: the one
    algorithm behind the operating system's pool here and a panel memo's derived stream (`memo`), and the
    twin of ``randomBelow`` in the JS client, so the same words give the same draws in both."""

    def word(self) -> int:
        raise NotImplementedError

    def below(self, limit: int) -> int:
        """A uniform int in [0, limit) for 1 ≤ limit ≤ 2^32, from one word (rarely more: rejection)."""
        ceiling = WORD - WORD % limit
        word = self.word()
        while word >= ceiling:
            word = self.word()
        return word % limit

    def randbelow(self, n: int) -> int:
        if n <= 0:
            raise ValueError("randbelow needs n > 0")
        if n <= WORD:
            return self.below(n)
        words = (max(n - 1, 1).bit_length() + 31) // 32
        excess = 32 * words - max(n - 1, 1).bit_length()
        while True:
            value = 0
            for _ in range(words):
                value = value << 32 | self.word()
            value >>= excess
            if value < n:
                return value


class WordPool(WordSource):
    """A `secrets`-grade source (``randbelow``) that reads the operating system's randomness in blocks of
    ``words`` 32-bit words rather than once per draw: what `randomize_many` amortises."""

    def __init__(self, words: int = 4096):
        self._size = max(64, words)
        self._words = array("I")
        self._next = 0
        self.pid = os.getpid()
        assert self._words.itemsize == 4

    def take(self, count: int) -> array:
        """The next ``count`` words at once, fresh from the operating system (a batch's loop reads them without a
        call per word); the pool's own buffer is left as it was."""
        return array("I", os.urandom(4 * count))

    def word(self) -> int:
        if self._next == len(self._words):
            self._words = array("I", os.urandom(4 * self._size))
            self._next = 0
        word = self._words[self._next]
        self._next += 1
        return word

    def randbelow(self, n: int) -> int:
        # `WordSource.randbelow` → `below` → `word`, read in place: the same words give the same draws, in one call
        # where a single report took three (a k-ary report: 0.96 → 0.80 µs).
        if not 0 < n <= WORD:
            return super().randbelow(n)
        ceiling = WORD - WORD % n
        words, position = self._words, self._next
        while True:
            if position == len(words):
                words = self._words = array("I", os.urandom(4 * self._size))
                position = 0
            word = words[position]
            position += 1
            if word < ceiling:
                self._next = position
                return word % n


def bernoulli(numerator: int, denominator: int, source) -> bool:
    """True with probability numerator/denominator exactly, from as few 32-bit words as it takes (usually one):
    U's first 32 bits decide unless the threshold falls inside the interval they leave open, and then the next
    word refines U. A denominator near 2^32 or above (an ε met on the 2^-32 grid) would cost a multi-word
    rejection draw each time by ``randbelow``; this costs one word. Twin of the JS client's ``bernoulli``."""
    word = source.word if hasattr(source, "word") else (lambda: source.randbelow(WORD))
    value, scale = word(), WORD
    while True:
        threshold = numerator * scale
        if (value + 1) * denominator <= threshold:
            return True
        if value * denominator >= threshold:
            return False
        value, scale = value * WORD + word(), scale * WORD


_local = threading.local()


def default_source() -> WordPool:
    """The source a single draw uses when none is given: this thread's pool of the operating system's words
    (256 words read at a time), so one report costs a few array reads rather than an ``os.urandom`` call. Never
    shared: one pool per thread (two threads never read the same word), and a forked process starts its own
    (a child must not replay the words its parent has buffered)."""
    pool = getattr(_local, "pool", None)
    if pool is None or _CHECK_PID and pool.pid != os.getpid():
        pool = _local.pool = WordPool(256)
    return pool


def _forget_after_fork():
    _local.__dict__.pop("pool", None)


# Where the interpreter tells us of a fork, the child forgets its pool there; asking getpid() on every draw instead
# was a system call costing a sixth of a single report's time.
_CHECK_PID = not hasattr(os, "register_at_fork")
if not _CHECK_PID:
    os.register_at_fork(after_in_child=_forget_after_fork)
