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
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
