"""Regenerate docs/validation.md from the studies in tests/support/validation.py (the tests check the same figures
against their tolerances).

    python scripts/validation.py               # every section (hours on two cores)
    python scripts/validation.py --only NAME   # one section in place: grid, random, se, poisoning, audit
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository, for tests.support

from tests.support.validation import SECTIONS, main, replace_section  # noqa: E402

if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    if len(sys.argv) == 3 and sys.argv[1] == "--only" and sys.argv[2] in SECTIONS:
        replace_section(sys.argv[2])
    elif len(sys.argv) == 1:
        main()
    else:
        sys.exit(__doc__)
