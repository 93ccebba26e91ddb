"""Files a client keeps on the respondent's device (an outbox, a panel memo): this user's only, never
half written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_atomically(path: Path, write, mode: int | None = None) -> None:
    """Write a new file beside ``path`` with ``write(temporary_path)`` and move it over ``path``: a reader sees the old
    content or the new, never a part, and both the bytes and the rename are on the disk before it returns. The new
    file is created exclusively under a name nobody can predict (a link planted beside it is never followed).
    ``mode``: its permissions (default: an ordinary new file's, under the umask, not mkstemp's 0600)."""
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(handle)
    temporary = Path(name)
    try:
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        write(temporary)
        with temporary.open("rb") as stream:
            os.fsync(stream.fileno())
        os.replace(temporary, path)
        durable_folder(path.parent)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a new file readable by this user only (0600), moved over the old one
    (`replace_atomically`)."""
    replace_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8"), mode=0o600)


def durable(stream) -> None:
    """The file's bytes on the disk before it is linked into place: after a crash the new name holds all of it,
    never an empty file (for a memo, a new secret would draw new permanent reports)."""
    stream.flush()
    os.fsync(stream.fileno())


def durable_folder(folder: Path) -> None:
    """The folder's entry (a rename or a link) on the disk too, where the system allows it."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
