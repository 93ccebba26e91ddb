"""Worst-case time of every slow input the hardening tests know (tests/server/worst_cases.py):
each is run a few times against an in-process app and its slowest time printed, beside the
status it got. Run from the repository root: python benchmarks/worst_inputs.py"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package holds the cases

from tests.server.worst_cases import CASES, Context, timed  # noqa: E402

REPEATS = 3


def main():
    with tempfile.TemporaryDirectory() as folder:
        context = Context(Path(folder))
        worst_overall = (0.0, "")
        for case in CASES:
            runs = [timed(case, context) for _ in range(REPEATS)]
            seconds = max(t for _, t in runs)
            statuses = sorted({s for s, _ in runs})
            flag = "" if statuses == [case.expected] or case.expected == 201 and set(statuses) <= {200, 201} else "  UNEXPECTED"
            print(f"{seconds * 1000:8.1f} ms  status {','.join(map(str, statuses)):>7}  {case.name}{flag}")
            worst_overall = max(worst_overall, (seconds, case.name))
        print(f"worst: {worst_overall[0] * 1000:.1f} ms ({worst_overall[1]})")


if __name__ == "__main__":
    main()
