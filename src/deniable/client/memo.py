"""A panel respondent's memo: one random secret kept on the device, from which the permanent randomized
report of each (survey, question, true answer) is derived, so a repeated survey's waves repeat it instead
of drawing afresh (the permanent randomized response of RAPPOR, Erlingsson et al. 2014).

The secret says nothing about any answer and no answer is stored: the same answer gives the same
permanent report because the randomness is HMAC-SHA256(secret, message ‖ counter), a deterministic stream
of words drawn exactly like the operating system's (`randomness.WordSource`). The message names its
purpose and positions only (`message`), so the JS client (``src/memo.js``) derives the same report from
the same secret.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import struct
import tempfile
from pathlib import Path

from .errors import DeniableError
from .files import durable, durable_folder
from .randomness import WordSource

#: Bytes of the secret; the file holds them as lowercase hex and a newline.
SECRET_BYTES = 32
_DOMAIN = b"deniable memo v1"


class MemoError(DeniableError):
    """A memo file that cannot serve as one (unreadable, the wrong length, readable by others)."""

    def __init__(self, message: str):
        super().__init__(message, "memo")


def message(survey_id: str, question_id: str, purpose: str, position: int | None = None) -> bytes:
    """What the stream of one draw is keyed on: the survey and question ids (identifiers: no NUL in them), the
    purpose (``report`` for the permanent report, ``group``/``arm`` for the group or arm a respondent keeps in
    every wave) and, for a report, the true answer's position in the answer alphabet (an index, a grid index,
    a multi-select bitmask) as decimal digits."""
    parts = [_DOMAIN, survey_id.encode(), question_id.encode(), purpose.encode()]
    if position is not None:
        parts.append(str(int(position)).encode())
    return b"\x00".join(parts)


class MemoStream(WordSource):
    """32-bit words (big-endian) of HMAC-SHA256(secret, message ‖ counter as 4 bytes big-endian), counter
    0, 1, …: a deterministic source with ``randbelow`` for the samplers."""

    def __init__(self, secret: bytes, message: bytes):
        self._key = hmac.new(secret, digestmod=hashlib.sha256)
        self._message = message
        self._counter = 0
        self._words: tuple = ()
        self._next = 0

    def word(self) -> int:
        if self._next == len(self._words):
            block = self._key.copy()
            block.update(self._message + struct.pack(">I", self._counter))
            self._words = struct.unpack(">8I", block.digest())
            self._counter += 1
            self._next = 0
        word = self._words[self._next]
        self._next += 1
        return word


class Memo:
    """The device's panel secret, in a file the embedding app chooses (``Memo(path)``): created with a new
    secret when missing (0600, written whole: two processes creating it at once keep one secret), refused
    when unreadable, not a memo, or readable by other users. Keep it as long as the respondent stays in the
    panel: a new secret draws new permanent reports, and the guarantee over all waves then counts twice."""

    def __init__(self, path):
        self.path = Path(path)
        self._secret = self._read_or_create()

    @classmethod
    def from_secret(cls, secret: bytes) -> "Memo":
        """A memo held in memory (simulations, tests): no file."""
        if not isinstance(secret, bytes) or len(secret) != SECRET_BYTES:
            raise MemoError(f"memo: a secret is {SECRET_BYTES} bytes")
        memo = cls.__new__(cls)
        memo.path, memo._secret = None, secret
        return memo

    @classmethod
    def new(cls) -> "Memo":
        """A fresh memo in memory (a simulated respondent)."""
        return cls.from_secret(secrets.token_bytes(SECRET_BYTES))

    def stream(self, survey_id: str, question_id: str, purpose: str, position: int | None = None) -> MemoStream:
        return MemoStream(self._secret, message(survey_id, question_id, purpose, position))

    def _read_or_create(self) -> bytes:
        try:
            return self._read()
        except FileNotFoundError:
            pass
        self._create()
        return self._read()

    def _create(self):
        # Written whole under a temporary name, then linked into place: link fails when another process got
        # there first, and that process's secret is the one both then read.
        try:
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        except OSError as error:
            raise MemoError(f"memo {self.path}: cannot create it ({error.strerror})") from None
        try:
            os.chmod(temporary, 0o600)
            with os.fdopen(handle, "w", encoding="ascii") as stream:
                stream.write(secrets.token_hex(SECRET_BYTES) + "\n")
                durable(stream)
            try:
                os.link(temporary, self.path)
                durable_folder(self.path.parent)
            except FileExistsError:
                pass
        except OSError as error:
            raise MemoError(f"memo {self.path}: cannot create it ({error.strerror})") from None
        finally:
            Path(temporary).unlink(missing_ok=True)

    def _read(self) -> bytes:
        where = f"memo {self.path}"
        try:
            mode = os.lstat(self.path).st_mode
            if stat.S_ISLNK(mode):  # followed, a link could point at another device's memo or at nothing
                raise MemoError(f"{where}: a symbolic link; a memo is a file of its own (give its real path)")
            if not stat.S_ISREG(mode):
                raise MemoError(f"{where}: not a file")
            if mode & 0o077:
                raise MemoError(f"{where}: readable by other users (mode {stat.S_IMODE(mode):04o}); it must be 0600 "
                                f"(chmod 600 {self.path}), since whoever reads it can link this device's reports across waves")
            descriptor = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(descriptor, "rb") as stream:
                raw = stream.read(4 * SECRET_BYTES)
        except FileNotFoundError:
            raise
        except OSError as error:
            raise MemoError(f"{where}: cannot read it ({error.strerror})") from None
        text = raw.decode("ascii", "replace").strip()
        if len(text) != 2 * SECRET_BYTES or any(c not in "0123456789abcdef" for c in text):
            raise MemoError(f"{where}: holds {len(raw)} bytes, not the {2 * SECRET_BYTES} hex digits of a memo secret; "
                            "it is not a memo (move it away to start a new one: the permanent reports then change)")
        return bytes.fromhex(text)

    def __repr__(self) -> str:
        return f"<Memo {self.path or 'in memory'}>"
