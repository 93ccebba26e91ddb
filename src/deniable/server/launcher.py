"""The ``deniable`` command's entry point.

It imports only the standard library before the command itself, so that an install without the
server extra (``pip install deniable``) prints the one command that adds it instead of a traceback.
"""

from __future__ import annotations

import os
import sys


def main():
    # BLAS on one thread unless the caller chose otherwise, set before numpy loads: deniable's matrices are at most a
    # few thousand wide, where OpenBLAS's threads spin more than they compute (`survey check` burnt 0.19 s of CPU
    # beside its 0.36 s on two cores), and a server's parallelism is its workers.
    for variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    try:
        from deniable.server.cli import main as command  # after the BLAS setting above; a missing extra said in words
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] == "deniable":
            raise
        print(f"The deniable command needs the server extra (missing module: {error.name}). Install it with:\n"
              f"    pip install 'deniable[server]'", file=sys.stderr)
        raise SystemExit(1) from None
    command()
