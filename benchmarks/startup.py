"""Start-up time of the `deniable` command beside the floor of importing the client, in one run.

    python benchmarks/startup.py [--repeats 7]

Each command runs in a fresh process; the median and the best of the repeats are printed, and how
far each median is above the floor (`python -c "import deniable.client"`). Goal: `deniable --help`
and `deniable survey check` within 0.2 s of the floor. `survey check` prints planning figures by
default, which load numpy (55 ms here) and bootstrap the ordinal and numeric questions (50-60 ms for
the examples); `--no-plan` only validates. `deniable survey list` opens a SQLite database (a scratch one with the
example survey) through the standard library's sqlite3: neither sqlite-utils nor the pandas and numpy it would import
(0.3 s) are loaded (sqlite-utils only writes `deniable export --format sqlite`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DENIABLE = str(Path(sys.executable).with_name("deniable"))
COMMANDS = {
    'python -c "import deniable.client" (floor)': [sys.executable, "-c", "import deniable.client"],
    "deniable --help": [DENIABLE, "--help"],
    "deniable survey check examples/tax.yaml": [DENIABLE, "survey", "check", str(ROOT / "examples/tax.yaml")],
    "deniable survey check examples/questionnaire.yaml": [DENIABLE, "survey", "check", str(ROOT / "examples/questionnaire.yaml")],
    "deniable survey check --no-plan examples/tax.yaml": [DENIABLE, "survey", "check", "--no-plan", str(ROOT / "examples/tax.yaml")],
}
SCRATCH = Path(tempfile.mkdtemp(prefix="deniable-startup-")) / "survey.db"
COMMANDS["deniable survey list --db (a SQLite file)"] = [DENIABLE, "survey", "list", "--db", str(SCRATCH)]


#: As an installed deniable runs: with its bytecode cached. A shell that sets PYTHONDONTWRITEBYTECODE (some CI
#: images do) would otherwise have every command compile ~130 modules first (0.35 s here), not deniable's cost.
ENVIRONMENT = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENVIRONMENT)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    subprocess.run([DENIABLE, "survey", "add", str(ROOT / "examples/tax.yaml"), "--db", str(SCRATCH)], check=True,
                   stdout=subprocess.DEVNULL, env=ENVIRONMENT)
    floor = None
    for label, command in COMMANDS.items():
        timed(command)  # warm the file cache and write the bytecode
        runs = [timed(command) for _ in range(args.repeats)]
        median = statistics.median(runs)
        floor = median if floor is None else floor
        print(f"{label:<52} median {median:6.3f} s  best {min(runs):6.3f} s  above the floor {median - floor:+6.3f} s")
    shutil.rmtree(SCRATCH.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
