"""Files the commands read and write: an output is written whole or not at all (`atomic_write`, over the client's
`replace_atomically`), a frame is read as CSV (`read_frame`)."""

from __future__ import annotations

from pathlib import Path

import click

from deniable import storage
from deniable.client.files import replace_atomically


def atomic_write(target: Path, write):
    """Write ``target`` with ``write(temporary_path)`` whole or not at all (`replace_atomically`); the target must be
    a regular file or not exist yet. A failure is a one-line message."""
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise click.ClickException(f"{target}: not a regular file (a link, a folder or a device); choose another output")
    try:
        replace_atomically(target, write)
    except OSError as error:
        raise click.ClickException(f"{target}: cannot write ({error.strerror})") from None


def write_chunks(path: Path, chunks, binary: bool):
    with (path.open("wb") if binary else path.open("w", encoding="utf-8", newline="")) as handle:
        for chunk in chunks:
            handle.write(chunk)


def read_frame(path: str) -> list[dict]:
    """The rows of a frame CSV file (UTF-8, a header line), as {column: text}."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise click.ClickException(f"{path}: no such file") from None
    except (UnicodeDecodeError, OSError) as error:
        raise click.ClickException(f"{path}: not a readable UTF-8 file ({error})") from None
    try:
        return storage.frame_rows_from_csv(text)
    except storage.StorageError as error:
        raise click.ClickException(f"{path}: {error.message}") from None
