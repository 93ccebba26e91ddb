"""Print the ε audit of the shipped clients (tests/support/epsilon_audit.py) as docs/validation.md shows it;
``python scripts/validation.py --only audit`` writes it there."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository, for tests.support

from tests.support.epsilon_audit import section  # noqa: E402

if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    section(sys.stdout)
