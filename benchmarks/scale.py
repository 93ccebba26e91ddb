"""What a survey costs as it grows: 10⁴, 10⁵ (and 10⁶ with --sizes) stored responses to the demo survey, on SQLite
and on PostgreSQL (a throwaway cluster, tests/postgres.py, when its binaries are installed).

    python benchmarks/scale.py [--sizes 10000,100000,1000000] [--engines sqlite,postgresql] [--seed 1]

For each size, each operation runs in a fresh process (imports included, as a user meets them) and prints its CPU
time, wall time and peak resident memory: `deniable estimate`, `deniable estimate --by region`, `deniable export`
(CSV to a file: streamed), `load()` with its per-response frame, and the dashboard's estimates page (first view, in a
test client). Nothing here should grow faster than n, and estimates should not grow at all (they read the running
totals). The responses are the demo's simulated respondents, randomized as the page would, stored in batches.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DENIABLE = str(Path(sys.executable).with_name("deniable"))

#: Each operation, as a Python snippet run in a fresh interpreter with DB bound to the database's path or URL and
#: FOLDER to a scratch folder.
OPERATIONS = {
    "deniable estimate": f"import subprocess; subprocess.run([{DENIABLE!r}, 'estimate', 'tax', '--db', DB], "
                         "check=True, stdout=subprocess.DEVNULL)",
    "deniable estimate --by region": f"import subprocess; subprocess.run([{DENIABLE!r}, 'estimate', 'tax', '--db', DB, "
                                     "'--by', 'region'], check=True, stdout=subprocess.DEVNULL)",
    "deniable export (csv)": f"import subprocess; subprocess.run([{DENIABLE!r}, 'export', 'tax', '--db', DB, "
                             "'--output', FOLDER + '/export.csv'], check=True, stdout=subprocess.DEVNULL, "
                             "stderr=subprocess.DEVNULL)",
    "load() + frame()": "from deniable.analysis import load; data = load(db=DB, survey_id='tax'); data.frame()",
    "dashboard estimates page": (
        "import re; from deniable.server import create_app; "
        "app = create_app({'DATABASE': DB, 'ADMIN_TOKEN': 't', 'TESTING': True, 'RATELIMIT_ENABLED': False}); "
        "c = app.test_client(); page = c.get('/admin/login').get_data(as_text=True); "
        "c.post('/admin/login', data={'csrf': re.search(r'name=\"csrf\" value=\"([^\"]+)\"', page).group(1), 'token': 't'}); "
        "assert c.get('/admin/surveys/tax').status_code == 200"),
}

MEASURE = """
import resource, time, json
DB, FOLDER = {db!r}, {folder!r}
started, cpu = time.perf_counter(), time.process_time()
{code}
own = resource.getrusage(resource.RUSAGE_SELF)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({{"wall": time.perf_counter() - started,
                   "cpu": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime,
                   "peak_mb": max(own.ru_maxrss, children.ru_maxrss) / 1024}}))
"""


class Seeded:
    def __init__(self, seed):
        self.random = random.Random(seed)

    def randbelow(self, n):
        return self.random.randrange(n)


def fill(db: str, n: int, seed: int) -> float:
    from deniable import storage
    from deniable.server.demo import demo_survey, simulated_answers

    survey, source = demo_survey(), Seeded(seed)
    started = time.perf_counter()
    with storage.Store(db) as store:
        store.add_survey(survey)
        for start in range(0, n, 1000):
            items = [(survey.hash, secrets.token_hex(16), survey.randomize(simulated_answers(source), rng=source), None)
                     for _ in range(min(1000, n - start))]
            store.submit_many(survey.id, items)
    return time.perf_counter() - started


def measure(db: str, code: str, folder: str) -> dict:
    result = subprocess.run([sys.executable, "-c", MEASURE.format(db=db, folder=folder, code=code)], capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engines", default="sqlite,postgresql")
    args = parser.parse_args()
    engines = args.engines.split(",")
    cluster = None
    if "postgresql" in engines:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.postgres: the throwaway cluster
        from tests.postgres import ThrowawayPostgres, binaries

        if binaries() is None:
            print("PostgreSQL's binaries are not installed: SQLite only")
            engines.remove("postgresql")
        else:
            cluster = ThrowawayPostgres()
    print("CPU: the operation's process and its children (PostgreSQL's own server processes not included)")
    print(f"{'engine':<11}{'responses':>10}  {'operation':<32} {'CPU s':>7} {'wall s':>7} {'peak MB':>8}")
    try:
        with tempfile.TemporaryDirectory() as folder:
            for engine in engines:
                for n in (int(size) for size in args.sizes.split(",")):
                    db = str(Path(folder) / f"scale-{n}.db") if engine == "sqlite" else cluster.fresh_url()
                    filled = fill(db, n, args.seed)
                    print(f"{engine:<11}{n:>10,}  {'(stored in ' + format(filled, '.1f') + ' s)':<32}", flush=True)
                    for name, code in OPERATIONS.items():
                        figures = measure(db, code, folder)
                        print(f"{engine:<11}{n:>10,}  {name:<32} {figures['cpu']:>7.2f} {figures['wall']:>7.2f} "
                              f"{figures['peak_mb']:>8.0f}", flush=True)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
