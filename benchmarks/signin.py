"""Sign-in under attack, against a real `deniable serve --workers 4` (gunicorn) on SQLite and PostgreSQL:
the figures issue 22 asked for.

    python benchmarks/signin.py [--engines sqlite,postgresql] [--workers 4] [--guesses 40] [--pg-url …]

1. A flood of concurrent wrong passwords for one account, each from its own browser session: every guess is
   sent again after a 429 (the per-process bound on password hashing) until the server has answered it
   otherwise, as a patient attacker would. The server runs with its password check wrapped, before gunicorn
   forks, to count each check against the account's real hash (a check against the dummy hash that
   unknown, locked and over-the-count names get is not one): how many were checked, whether the account
   ends locked, and whether the right password is refused afterwards.
2. The time of one sign-in for an unknown name, a locked account and an existing account (a wrong
   password, one guess per account), interleaved, medians: equal when the time says nothing about names.
3. A respondent's page (GET /s/<survey>) every 50 ms, alone and then beside 64 concurrent wrong sign-ins
   sent in waves for a few seconds: its median and worst latency, and how the flood's answers split.
4. The XLSForm zip bomb (a sheet unpacking to 200 MiB, 0.2 MB on disk) through `deniable survey check`:
   the command's time, its peak memory, and what it prints.

Rate limits are off (one client address sends everything here; they would hide the lock's atomicity).
Talks only to 127.0.0.1; stops every server it started. Without --pg-url a throwaway PostgreSQL cluster
is started (tests/postgres.py).
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.postgres, benchmarks.ingest

from benchmarks.ingest import free_port, stop, wait_until_up  # noqa: E402
from deniable import storage  # noqa: E402
from deniable.server.demo import demo_survey  # noqa: E402

PASSWORD = "correct horse battery staple"

#: Run as `python -c COUNTING serve …`: the password check is wrapped in the master process, so every gunicorn
#: worker forked from it appends one line to $DENIABLE_BENCH_CHECKS per check against a real account's hash.
COUNTING = """
import os, sys
import werkzeug.security
from deniable.storage.accounts import _DUMMY_HASH
real = werkzeug.security.check_password_hash
def counting(stored_hash, password):
    if stored_hash != _DUMMY_HASH:
        with open(os.environ["DENIABLE_BENCH_CHECKS"], "a") as log:
            log.write("checked\\n")
    return real(stored_hash, password)
werkzeug.security.check_password_hash = counting
from deniable.server.cli import main
main(prog_name="deniable")
"""


def _form_secret(page: str) -> str | None:
    """The sign-in form's CSRF value on a page (a refused sign-in's page carries a new one)."""
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    return None if found is None else found.group(1)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Browser:
    """One browser session: its own cookies, the sign-in form's CSRF value."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
                                                  _NoRedirect)
        self.csrf = _form_secret(self.opener.open(f"{base}/admin/login", timeout=60).read().decode())

    def sign_in(self, name: str, password: str) -> int:
        body = urllib.parse.urlencode({"csrf": self.csrf, "name": name, "password": password}).encode()
        try:
            with self.opener.open(f"{self.base}/admin/login", data=body, timeout=120) as response:
                return response.status
        except urllib.error.HTTPError as error:
            self.csrf = _form_secret(error.read().decode()) or self.csrf  # a refused sign-in sets a new one
            return error.code


def serve(url: str, workers: int, checks: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", COUNTING, "serve", "--db", url, "--port", str(port),
                               "--workers", str(workers), "--no-rate-limits"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "DENIABLE_BENCH_CHECKS": str(checks)})
    wait_until_up(f"http://127.0.0.1:{port}/healthz")
    return server, f"http://127.0.0.1:{port}"


def flood(base: str, name: str, guesses: int) -> dict:
    """``guesses`` wrong passwords at once, each retried after a 429 until answered otherwise."""
    browsers = [Browser(base) for _ in range(guesses)]
    barrier = threading.Barrier(guesses)
    answers, retries = [], []

    def guess(i):
        barrier.wait()
        tries = 0
        while (status := browsers[i].sign_in(name, f"wrong guess {i}")) == 429:
            tries += 1
            time.sleep(0.02)
        answers.append(status)
        retries.append(tries)

    start = time.perf_counter()
    threads = [threading.Thread(target=guess, args=(i,)) for i in range(guesses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"seconds": time.perf_counter() - start, "answers": answers, "retried 429s": sum(retries)}


def name_timing(base: str, url: str, rounds: int) -> dict:
    """Median seconds of one wrong sign-in per kind of name, interleaved round by round."""
    with storage.Store(url, migrate=False) as store:
        for i in range(rounds):
            store.add_admin(f"existing{i}", PASSWORD)
    browser = Browser(base)
    times = {"unknown": [], "locked": [], "existing": []}
    for i in range(rounds):
        for kind, name in (("unknown", f"nobody{secrets.token_hex(4)}"), ("locked", "ana"), ("existing", f"existing{i}")):
            start = time.perf_counter()
            status = browser.sign_in(name, "a wrong password")
            times[kind].append(time.perf_counter() - start)
            assert status == 401, (kind, status)
    return {kind: statistics.median(values) for kind, values in times.items()}


def respondent_latency(base: str, survey_id: str, seconds: float, flood_size: int | None) -> dict:
    """GET /s/<survey> every 50 ms for ``seconds``; with ``flood_size``, that many wrong sign-ins at once in
    waves meanwhile. The page's latencies (median, worst) and the flood's answers."""
    stop_at = time.monotonic() + seconds
    latencies, flood_answers = [], []

    def respondent():
        while time.monotonic() < stop_at:
            start = time.perf_counter()
            with urllib.request.urlopen(f"{base}/s/{survey_id}", timeout=60) as response:
                response.read()
                assert response.status == 200
            latencies.append(time.perf_counter() - start)
            time.sleep(0.05)

    def attacker(browser):
        while time.monotonic() < stop_at:
            flood_answers.append(browser.sign_in("existing0", "a wrong password"))

    attackers = [threading.Thread(target=attacker, args=(Browser(base),)) for _ in range(flood_size or 0)]
    for thread in attackers:
        thread.start()
    respondent()
    for thread in attackers:
        thread.join()
    return {"median ms": statistics.median(latencies) * 1000, "worst ms": max(latencies) * 1000,
            "requests": len(latencies),
            "flood answers": {status: flood_answers.count(status) for status in sorted(set(flood_answers))}}


def zip_bomb(folder: Path) -> dict:
    """`deniable survey check` on a workbook whose sheet unpacks to 200 MiB: its time and peak memory."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "survey"
    sheet.append(["type", "name", "label"])
    sheet.append(["select_one yn", "q", "Q?"])
    choices = book.create_sheet("choices")
    choices.append(["list_name", "name", "label"])
    choices.append(["yn", "yes", "Yes"])
    choices.append(["yn", "no", "No"])
    base, bomb = folder / "base.xlsx", folder / "bomb.xlsx"
    book.save(base)
    with zipfile.ZipFile(base) as source, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as target:
        for part in source.infolist():
            data = source.read(part)
            if part.filename == "xl/worksheets/sheet1.xml":
                data += b" " * (200 * 2**20)
            target.writestr(part, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    deniable = str(Path(sys.executable).with_name("deniable"))
    # Measured from a small helper process: a child forked from this one, which built the 200 MiB sheet, would
    # count this process's memory as its own until it execs.
    helper = ("import resource, subprocess, sys, time\n"
              "start = time.perf_counter()\n"
              "result = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
              "seconds = time.perf_counter() - start\n"
              "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
              "print(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, result.returncode)\n"
              "print((result.stderr or result.stdout).strip().splitlines()[-1])\n")
    figures, says = subprocess.run([sys.executable, "-c", helper, deniable, "survey", "check", str(bomb)],
                                   capture_output=True, text=True, check=True).stdout.splitlines()
    seconds, cpu, peak, status = figures.split()
    return {"file MB": bomb.stat().st_size / 1e6, "seconds": float(seconds), "cpu seconds": float(cpu),
            "peak MB": int(peak) / 1024, "exit": int(status), "says": [says]}


def run_engine(engine: str, url: str, args, folder: Path):
    survey = demo_survey()
    with storage.Store(url) as store:
        store.add_survey(survey)
        store.add_admin("ana", PASSWORD)
    checks = folder / f"checks-{engine}.log"
    checks.touch()
    server, base = serve(url, args.workers, checks)
    try:
        result = flood(base, "ana", args.guesses)
        checked = len(checks.read_text().splitlines())
        after = Browser(base).sign_in("ana", PASSWORD)
        with storage.Store(url, migrate=False) as store:
            locked = next(a for a in store.admins() if a["name"] == "ana")["locked_until"] is not None
        answers = {status: result["answers"].count(status) for status in sorted(set(result["answers"]))}
        print(f"\n## {engine}, {args.workers} workers\n")
        print(f"{args.guesses} concurrent wrong passwords: {checked} checked against the account's hash "
              f"(at most {storage.SIGN_IN_FAILURES}), answers {answers} after {result['retried 429s']} retried 429s, "
              f"{result['seconds']:.1f} s; account locked: {locked}; the right password afterwards: "
              f"{'refused' if after != 303 else 'ACCEPTED'} ({after})")
        timing = name_timing(base, url, args.rounds)
        print(f"one wrong sign-in, median of {args.rounds} interleaved: unknown {timing['unknown'] * 1000:.0f} ms, "
              f"locked {timing['locked'] * 1000:.0f} ms, existing {timing['existing'] * 1000:.0f} ms")
        quiet = respondent_latency(base, survey.id, args.seconds, None)
        loud = respondent_latency(base, survey.id, args.seconds, 64)
        print(f"respondent page alone: median {quiet['median ms']:.1f} ms, worst {quiet['worst ms']:.1f} ms "
              f"({quiet['requests']} requests)")
        print(f"respondent page beside 64 concurrent wrong sign-ins: median {loud['median ms']:.1f} ms, worst "
              f"{loud['worst ms']:.1f} ms ({loud['requests']} requests); the flood's answers {loud['flood answers']}")
    finally:
        stop(server)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--guesses", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--pg-url")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        print("## XLSForm zip bomb\n")
        bomb = zip_bomb(folder)
        print(f"{bomb['file MB']:.2f} MB on disk, sheet 200 MiB unpacked: deniable survey check took "
              f"{bomb['seconds']:.2f} s ({bomb['cpu seconds']:.2f} s CPU), peak memory {bomb['peak MB']:.0f} MB, "
              f"exit {bomb['exit']}: {' '.join(bomb['says'])}")
        for engine in args.engines.split(","):
            if engine == "sqlite":
                run_engine(engine, str(folder / "signin.db"), args, folder)
            elif args.pg_url:
                run_engine(engine, args.pg_url, args, folder)
            else:
                from tests.postgres import ThrowawayPostgres

                cluster = ThrowawayPostgres()
                try:
                    run_engine(engine, cluster.url, args, folder)
                finally:
                    cluster.stop()


if __name__ == "__main__":
    main()
