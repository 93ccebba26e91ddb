"""The ``deniable`` command's entry point.

It imports only the standard library before the command itself, so that an install without the
server extra (``pip install deniable``) prints the one command that adds it instead of a traceback.
"""

from __future__ import annotations

import sys


def main():
    try:
        from deniable.server.cli import main as command
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] == "deniable":
            raise
        print(f"The deniable command needs the server extra (missing module: {error.name}). Install it with:\n"
              f"    pip install 'deniable[server]'", file=sys.stderr)
        raise SystemExit(1) from None
    command()
