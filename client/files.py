"""Files a client keeps on the respondent's device (an outbox, a panel memo): this user's only, never
half written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a new file readable by this user only (0600), moved over the old one:
    a reader sees the old content or the new, never a part."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.chmod(temporary, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            durable(stream)
        os.replace(temporary, path)
        durable_folder(path.parent)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
