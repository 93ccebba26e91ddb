"""Ingest throughput on loopback against a real `deniable serve`, on SQLite and PostgreSQL, with
1, 2 and 4 worker processes, beside raw-insert floors and a trivial Flask app.

    python benchmarks/ingest.py [--seconds 4] [--clients 8] [--batch 500] [--workers 1,2,4]
                                [--engines sqlite,postgresql] [--pg-url postgresql://…] [--rounds 5]
    python benchmarks/ingest.py --latency 0,0.5,1 [--workers 2] [--clients 8] [--rounds 3] [--seconds 4]

For each engine and worker count: responses/s through the single endpoint and reports/s through
the batch endpoint. Beside them, in the same run: the same rows inserted through the same driver
directly (per-row commits for the single case, one transaction per batch for the batch case), and
a trivial Flask + SQLite one-row POST app (benchmarks/trivial_app.py) under gunicorn with the same
number of workers. Without --pg-url a throwaway PostgreSQL cluster is started (tests/postgres.py).
Bounded in time and count; talks only to 127.0.0.1; stops every server it started. Rate limits are
off for the run (one client address sends everything).

When `wrk` is installed (Debian's package), a second table: the trivial app and deniable serve both
running, loaded in turn by wrk (C, event-driven: the load generator takes little of the CPU the
servers need) for --rounds pairs of runs, each deniable run beside the trivial run just before it;
the ratios of the pairs (min / median / max), each engine's against the trivial app on the same engine (on
PostgreSQL: one insert in its own transaction). wrk gives up on a request after WRK_TIMEOUT seconds: those are counted
and printed as slow, not a failed run. Every wrk request to deniable carries a fresh
idempotency key, so each one is a stored response (checked: the stored count covers wrk's count). Beside the rates,
each server's CPU time per request (its processes' user and system time, from /proc): the figure that says where a
ratio comes from on a machine whose load moves the rates.

With --latency, only a third table: a database on another host costs each round trip ~0.3–1 ms, which loopback
hides. Both deniable and the trivial app (on PostgreSQL: one insert in its own transaction) talk to a throwaway
PostgreSQL through a proxy on loopback that delays what they send by the given milliseconds (`DelayingProxy`); the
table gives responses/s at each latency, the round trips each response took, and the ratios of interleaved pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.postgres: the throwaway cluster

from deniable import storage  # noqa: E402
from deniable.client import Survey  # noqa: E402
from deniable.server.demo import demo_survey, simulated_answers  # noqa: E402

MAX_SINGLE = 20_000
MAX_BATCH_REPORTS = 500_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


def response_body(survey: Survey) -> dict:
    return {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(16),
            "reports": survey.randomize(simulated_answers())}


def single_endpoint(base: str, survey: Survey, seconds: float, clients: int) -> tuple[int, float]:
    bodies = [response_body(survey) for _ in range(MAX_SINGLE)]
    url = f"{base}/api/v1/surveys/{survey.id}/responses"
    lock, position, done = threading.Lock(), [0], [0]
    deadline = time.perf_counter() + seconds

    def worker():
        while time.perf_counter() < deadline:
            with lock:
                if position[0] >= len(bodies):
                    return
                body = bodies[position[0]]
                position[0] += 1
            status, _ = post(url, body)
            assert status == 201, status
            with lock:
                done[0] += 1

    elapsed = in_threads(worker, clients)
    return done[0], elapsed


def in_threads(worker, clients: int) -> float:
    """Run ``worker`` in ``clients`` threads until every one returns: the seconds it took."""
    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def batch_endpoint(base: str, survey: Survey, seconds: float, batch: int) -> tuple[int, float]:
    url = f"{base}/api/v1/surveys/{survey.id}/responses:batch"
    # Randomized once, before the clock starts (the client's own randomizing is not the server's
    # cost); each batch gets fresh idempotency keys.
    pool = [response_body(survey) for _ in range(batch * 4)]
    sent, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds and sent * len(survey.questions) < MAX_BATCH_REPORTS:
        items = [{**pool[(sent + i) % len(pool)], "idempotency_key": secrets.token_hex(16)} for i in range(batch)]
        status, result = post(url, {"items": items})
        assert status == 200 and result["statuses"] == {"201": batch}, result["statuses"]
        sent += batch
    return sent * len(survey.questions), time.perf_counter() - start


def raw_floor(survey: Survey, count: int, per_transaction: int, url: str) -> float:
    """Seconds to insert `count` responses (and their report rows) through the engine's driver
    directly: sqlite-utils on SQLite, psycopg on PostgreSQL; the same schema, no HTTP, no checks.
    ``per_transaction`` responses go in each transaction, with executemany: 1 beside the single
    endpoint, the batch size beside the batch endpoint (each batch is one transaction there too)."""
    rows = [response_body(survey) for _ in range(count)]

    def records(body):
        response_id = secrets.token_hex(16)
        response = (response_id, survey.id, body["spec_hash"], "2026-01-01", body["idempotency_key"], "x")
        return response, [(response_id, body["spec_hash"], q, json.dumps(v)) for q, v in body["reports"].items()]

    batches = [rows[i:i + per_transaction] for i in range(0, len(rows), per_transaction)]
    insert_response = "INSERT INTO responses (id, survey_id, spec_hash, received_on, idempotency_key, fingerprint) VALUES "
    insert_report = "INSERT INTO reports (response_id, spec_hash, question_id, value) VALUES "
    if storage.is_postgres(url):
        import psycopg

        with storage.Store(url):
            pass  # the same schema
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("TRUNCATE responses, reports")
            start = time.perf_counter()
            for batch in batches:
                with connection.transaction(), connection.cursor() as cursor:
                    pairs = [records(body) for body in batch]
                    cursor.executemany(insert_response + "(%s, %s, %s, %s, %s, %s)", [p[0] for p in pairs])
                    cursor.executemany(insert_report + "(%s, %s, %s, %s)", [r for p in pairs for r in p[1]])
            elapsed = time.perf_counter() - start
            connection.execute("TRUNCATE responses, reports")
        return elapsed
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "floor.db")
        with storage.Store(path):
            pass  # the same schema
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA cache_size=-32768")  # the settings deniable's engine uses: the floor gets them too
        db.execute("PRAGMA wal_autocheckpoint=10000")
        start = time.perf_counter()
        for batch in batches:
            with db:
                pairs = [records(body) for body in batch]
                db.executemany(insert_response + "(?, ?, ?, ?, ?, ?)", [p[0] for p in pairs])
                db.executemany(insert_report + "(?, ?, ?, ?)", [r for p in pairs for r in p[1]])
        elapsed = time.perf_counter() - start
        db.close()
        return elapsed


def wait_until_up(url: str):
    for _ in range(300):
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def stop(process: subprocess.Popen):
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def trivial_app(workers: int, clients: int, seconds: float) -> float:
    """POSTs/s to the one-row Flask + SQLite app under gunicorn with this many workers."""
    with tempfile.TemporaryDirectory() as folder:
        server, base = serve_trivial(folder, workers, clients)
        try:
            done, elapsed = trivial_load(base, seconds, clients)
            return done / elapsed
        finally:
            stop(server)


def measure(url: str, survey: Survey, workers: int, args) -> dict:
    server, base = serve_deniable(url, survey, workers, args.clients)
    try:
        singles, single_time = single_endpoint(base, survey, args.seconds, args.clients)
        reports, batch_time = batch_endpoint(base, survey, args.seconds, args.batch)
    finally:
        stop(server)
    return {"single": singles / single_time, "batch": reports / batch_time,
            "floor_single": singles / raw_floor(survey, singles, 1, url),
            "floor_batch": reports / raw_floor(survey, reports // len(survey.questions), args.batch, url),
            "singles": singles, "reports": reports}


WRK_SCRIPT = """
-- Each request a fresh idempotency key (wrk thread id, counter): every one is a new response.
local made = 0
function setup(thread)
  made = made + 1
  thread:set("id", made)
end
function init(args)
  counter = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end
function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, string.format(TEMPLATE, PREFIX, id, counter))
end
"""


#: wrk's per-request timeout: a request unanswered this long is counted as slow (and reported), not a failed run.
WRK_TIMEOUT = 10


def wrk_rate(url: str, body: dict, seconds: float, connections: int) -> tuple[float, int, int]:
    """(requests/s, requests, slow requests) of one wrk run POSTing ``body`` with a fresh idempotency key each time;
    a request unanswered within `WRK_TIMEOUT` seconds is a slow one, reported; a non-2xx answer, or a connection
    refused, reset or unwritable, fails the run."""
    key = secrets.token_hex(8)
    template = json.dumps({**body, "idempotency_key": "KEY"}).replace("%", "%%").replace('"KEY"', '"%s-%d-%d"')
    lua = f"TEMPLATE = [=[{template}]=]\nPREFIX = \"{key}\"\n" + WRK_SCRIPT
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua)
    try:
        out = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{seconds:g}s", "--timeout",
                              f"{WRK_TIMEOUT}s", "-s", script.name, url],
                             capture_output=True, text=True, timeout=seconds + WRK_TIMEOUT + 60, check=True).stdout
    finally:
        os.unlink(script.name)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    connect, read, write, slow = (int(value) for value in errors.groups()) if errors else (0, 0, 0, 0)
    if "Non-2xx" in out or connect or read or write:
        raise RuntimeError(f"wrk saw failed requests at {url}:\n{out}")
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1)), requests, slow


def serve_trivial(folder: str, workers: int, threads: int) -> tuple[subprocess.Popen, str]:
    sys.path.insert(0, str(Path(__file__).parent))
    from trivial_app import prepare

    prepare(str(Path(folder) / "trivial.db"))
    return _gunicorn_trivial(workers, threads, {"TRIVIAL_DB": str(Path(folder) / "trivial.db")})


def _gunicorn_trivial(workers: int, threads: int, environment: dict) -> tuple[subprocess.Popen, str]:
    port = free_port()
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    server = subprocess.Popen([gunicorn, "-w", str(workers), "-k", "gthread", "--threads", str(threads),
                               "-b", f"127.0.0.1:{port}", "--chdir", str(Path(__file__).parent), "trivial_app:app"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **environment})
    wait_until_up(f"http://127.0.0.1:{port}/")
    return server, f"http://127.0.0.1:{port}"


def serve_deniable(url: str, survey: Survey, workers: int, threads: int) -> tuple[subprocess.Popen, str]:
    with storage.Store(url) as store:
        store.add_survey(survey)
    port = free_port()
    deniable = str(Path(sys.executable).with_name("deniable"))
    server = subprocess.Popen([deniable, "serve", "--db", url, "--port", str(port), "--threads", str(threads),
                               "--workers", str(workers), "--no-rate-limits"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "DENIABLE_ADMIN_TOKEN": "bench"})
    wait_until_up(f"http://127.0.0.1:{port}/healthz")
    return server, f"http://127.0.0.1:{port}"


class DelayingProxy:
    """A TCP proxy on loopback that holds every chunk a client sends for ``delay`` seconds before passing it on (the
    answers come straight back): each database round trip costs ``delay`` more, as with a database on another host.
    A chunk's delay does not hold up the ones behind it (they keep their order), so it is latency, not a throttle.
    Counts the chunks it passes each way: with one statement or one sync per message, the round trips."""

    def __init__(self, target_port: int, delay: float):
        import asyncio

        self.target_port, self.delay, self.sent = target_port, delay, 0
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)

    def _run(self, ready: threading.Event):
        import asyncio

        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", self.port))
        ready.set()
        self._loop.run_forever()

    async def _connection(self, client_reader, client_writer):
        import asyncio

        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        held: asyncio.Queue = asyncio.Queue()

        async def receive():
            while data := await client_reader.read(65536):
                held.put_nowait((self._loop.time() + self.delay, data))
            held.put_nowait((None, b""))

        async def deliver():
            while True:
                due, data = await held.get()
                if due is None:
                    server_writer.close()
                    return
                await asyncio.sleep(max(0.0, due - self._loop.time()))
                self.sent += 1
                server_writer.write(data)
                await server_writer.drain()

        async def answer():
            while data := await server_reader.read(65536):
                client_writer.write(data)
                await client_writer.drain()
            client_writer.close()

        try:
            await asyncio.gather(receive(), deliver(), answer(), return_exceptions=True)
        except asyncio.CancelledError:  # the proxy closing: the connection ends quietly
            client_writer.close()
            server_writer.close()

    def close(self):
        import asyncio

        async def shutdown():
            self._server.close()
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def through(url: str, port: int) -> str:
    """``url`` (a PostgreSQL URL on 127.0.0.1) with its port replaced."""
    return re.sub(r"@127\.0\.0\.1:\d+/", f"@127.0.0.1:{port}/", url)


def latency_table(cluster, survey: Survey, args):
    """Single responses/s of deniable serve and of the trivial app, both on PostgreSQL through a `DelayingProxy`, at
    each added latency: --rounds interleaved pairs (a fresh database each), medians, and the round trips per
    response each needed (chunks the proxy passed to PostgreSQL, over the responses stored)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from trivial_app import prepare_postgresql

    workers = int(args.workers.split(",")[0])
    print(f"\nPostgreSQL through a proxy adding a fixed latency to each round trip; {workers} worker(s), {args.clients} "
          f"client threads, {max(args.rounds, 1)} interleaved pairs of {args.seconds:g} s runs (medians)")
    print(f"{'latency ms':>10}{'deniable resp/s':>17}{'trips/resp':>12}{'trivial resp/s':>16}{'trips/resp':>12}"
          f"{'ratio min':>11}{'median':>8}")
    for latency in [float(value) for value in args.latency.split(",")]:
        rates, trips, ratios = {"deniable": [], "trivial": []}, {"deniable": [], "trivial": []}, []
        for _ in range(max(args.rounds, 1)):
            pair = {}
            for name in ("trivial", "deniable"):
                url = cluster.fresh_url()
                proxy = DelayingProxy(int(re.search(r"@127\.0\.0\.1:(\d+)/", url).group(1)), latency / 1000)
                try:
                    if name == "deniable":
                        server, base = serve_deniable(through(url, proxy.port), survey, workers, args.clients)
                        target = lambda: single_endpoint(base, survey, args.seconds, args.clients)  # noqa: E731
                    else:
                        prepare_postgresql(url)
                        server, base = serve_trivial_postgresql(through(url, proxy.port), workers, args.clients)
                        target = lambda: trivial_load(base, args.seconds, args.clients)  # noqa: E731
                    try:
                        before = proxy.sent
                        done, elapsed = target()
                        trips[name].append((proxy.sent - before) / max(done, 1))
                    finally:
                        stop(server)
                finally:
                    proxy.close()
                pair[name] = done / elapsed
                rates[name].append(pair[name])
            ratios.append(pair["deniable"] / pair["trivial"])
        ratios.sort()
        print(f"{latency:>10g}{statistics.median(rates['deniable']):>17,.0f}{statistics.median(trips['deniable']):>12.2f}"
              f"{statistics.median(rates['trivial']):>16,.0f}{statistics.median(trips['trivial']):>12.2f}"
              f"{ratios[0]:>11.2f}{statistics.median(ratios):>8.2f}", flush=True)


def serve_trivial_postgresql(url: str, workers: int, threads: int) -> tuple[subprocess.Popen, str]:
    return _gunicorn_trivial(workers, threads, {"TRIVIAL_PG_URL": url})


def trivial_load(base: str, seconds: float, clients: int) -> tuple[int, float]:
    """POSTs to the trivial app's one-row endpoint from ``clients`` threads for ``seconds``: (done, elapsed)."""
    url = f"{base}/r"
    body = {"spec_hash": "x" * 64, "idempotency_key": "y" * 32, "reports": simulated_answers()}
    lock, done = threading.Lock(), [0]
    deadline = time.perf_counter() + seconds

    def worker():
        while time.perf_counter() < deadline:
            status, _ = post(url, body)
            assert status == 201
            with lock:
                done[0] += 1

    elapsed = in_threads(worker, clients)
    return done[0], elapsed


def tree_cpu(pid: int) -> float | None:
    """CPU seconds (user and system) spent so far by a process and its descendants that are still running (a server's
    master and workers), from /proc; None where /proc does not list children."""
    total, pending = 0.0, [pid]
    try:
        while pending:
            current = pending.pop()
            with open(f"/proc/{current}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending += [int(child) for child in children.read().split()]
    except (OSError, ValueError):
        return None
    return total


def wrk_pairs(url: str, survey: Survey, workers: int, args, trivial_url: str | None = None) -> dict:
    """Interleaved wrk runs against the trivial app and deniable (both up throughout); the trivial app on the
    PostgreSQL database ``trivial_url`` when given (deniable's engine's peer), else on a SQLite file."""
    body = response_body(survey)
    with tempfile.TemporaryDirectory() as folder:
        if trivial_url is None:
            trivial, trivial_base = serve_trivial(folder, workers, args.clients)
        else:
            from trivial_app import prepare_postgresql

            prepare_postgresql(trivial_url)
            trivial, trivial_base = serve_trivial_postgresql(trivial_url, workers, args.clients)
        try:
            server, base = serve_deniable(url, survey, workers, args.clients)
        except BaseException:
            stop(trivial)
            raise
        try:
            trivial_rates, deniable_rates, sent = [], [], 0
            cpu = {"trivial": [], "deniable": []}  # server CPU per request, each run
            slow = {"trivial": 0, "deniable": 0}  # requests unanswered within WRK_TIMEOUT

            def run(name, process, target):
                before = tree_cpu(process.pid)
                rate, requests, timed_out = wrk_rate(target, body, args.seconds, args.clients)
                after = tree_cpu(process.pid)
                if before is not None and after is not None:
                    cpu[name].append((after - before) / requests)
                slow[name] += timed_out
                return rate, requests

            for _ in range(args.rounds):
                trivial_rates.append(run("trivial", trivial, f"{trivial_base}/r")[0])
                rate, requests = run("deniable", server, f"{base}/api/v1/surveys/{survey.id}/responses")
                deniable_rates.append(rate)
                sent += requests
        finally:
            stop(server)
            stop(trivial)
    with storage.Store(url, read_only=True) as store:
        stored = store.response_count(survey.id)
    # wrk counts a request it gave up on (timed out) as not done, though the server may still store it.
    if stored < sent:
        raise RuntimeError(f"wrk counted {sent} responses, {stored} are stored")
    ratios = sorted(d / t for d, t in zip(deniable_rates, trivial_rates))
    return {"deniable": statistics.median(deniable_rates), "trivial": statistics.median(trivial_rates),
            "ratios": ratios, "stored": stored, "sent": sent, "slow": slow,
            "cpu": {name: statistics.median(values) if values else None for name, values in cpu.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--pg-url", help="An existing, empty PostgreSQL database (default: a throwaway cluster).")
    parser.add_argument("--rounds", type=int, default=5, help="Interleaved pairs of wrk runs (when wrk is installed; 0: none).")
    parser.add_argument("--only-wrk", action="store_true", help="Only the interleaved wrk table.")
    parser.add_argument("--latency", metavar="MS[,MS…]",
                        help="Only the latency table: PostgreSQL through a proxy adding these milliseconds to each "
                             "round trip (e.g. 0,0.5,1), deniable beside the trivial app on PostgreSQL.")
    args = parser.parse_args()
    survey = demo_survey()
    workers = [int(w) for w in args.workers.split(",")]
    engines = args.engines.split(",")
    cluster = None
    if "postgresql" in engines and not args.pg_url:
        from tests.postgres import ThrowawayPostgres

        cluster = ThrowawayPostgres()
    print(f"demo survey: {len(survey.questions)} questions per response; deniable serve (gunicorn gthread, "
          f"{args.clients} threads per worker; waitress for 1 worker); {os.cpu_count()} CPUs")
    if args.latency:
        from tests.postgres import ThrowawayPostgres

        cluster = cluster or ThrowawayPostgres()
        try:
            latency_table(cluster, survey, args)
        finally:
            cluster.stop()
        return
    try:
        if not args.only_wrk:
            print(f"\n{args.clients} Python client threads on 127.0.0.1 (they share the CPUs with the servers)")
            print(f"{'engine':<11}{'workers':>8}{'single resp/s':>15}{'raw floor':>11}{'ratio':>7}{'trivial app':>13}"
                  f"{'vs app':>8}{'batch reports/s':>17}{'raw floor':>11}{'ratio':>7}")
            trivial = {w: trivial_app(w, args.clients, args.seconds) for w in workers}
            for engine in engines:
                for w in workers:
                    with tempfile.TemporaryDirectory() as folder:
                        url = str(Path(folder) / "bench.db") if engine == "sqlite" else (args.pg_url or cluster.fresh_url())
                        r = measure(url, survey, w, args)
                    print(f"{engine:<11}{w:>8}{r['single']:>15,.0f}{r['floor_single']:>11,.0f}"
                          f"{r['single'] / r['floor_single']:>7.2f}{trivial[w]:>13,.0f}{r['single'] / trivial[w]:>8.2f}"
                          f"{r['batch']:>17,.0f}{r['floor_batch']:>11,.0f}{r['batch'] / r['floor_batch']:>7.2f}", flush=True)
        if args.rounds < 1:
            return
        if shutil.which("wrk") is None:
            print("\nwrk is not installed (apt install wrk): no interleaved wrk table")
            return
        print(f"\nwrk, {args.clients} connections, {args.rounds} interleaved pairs of {args.seconds:g} s runs: "
              "single responses/s, deniable / trivial app per pair")
        print("(server CPU: user and system time of each server's processes per request, medians of the runs; "
              "PostgreSQL's own processes not included)")
        print(f"(each engine's row against the trivial app on the same engine; slow: requests unanswered within "
              f"{WRK_TIMEOUT} s, deniable / trivial, over all runs)")
        print(f"{'engine':<11}{'workers':>8}{'deniable':>10}{'trivial':>9}{'ratio min':>11}{'median':>8}{'max':>7}"
              f"{'stored':>9}{'server CPU µs: deniable':>25}{'trivial':>9}{'slow':>9}")
        for engine in engines:
            for w in workers:
                with tempfile.TemporaryDirectory() as folder:
                    if engine == "sqlite":
                        url, trivial_url = str(Path(folder) / "bench.db"), None
                    else:  # the trivial app's table beside deniable's in a given database, else a database of its own
                        url = args.pg_url or cluster.fresh_url()
                        trivial_url = args.pg_url or cluster.fresh_url()
                    r = wrk_pairs(url, survey, w, args, trivial_url)
                ratios = r["ratios"]
                cpu = {name: "–" if value is None else f"{value * 1e6:,.0f}" for name, value in r["cpu"].items()}
                slow = f"{r['slow']['deniable']}/{r['slow']['trivial']}"
                print(f"{engine:<11}{w:>8}{r['deniable']:>10,.0f}{r['trivial']:>9,.0f}{ratios[0]:>11.2f}"
                      f"{statistics.median(ratios):>8.2f}{ratios[-1]:>7.2f}{r['stored']:>9,}{cpu['deniable']:>25}"
                      f"{cpu['trivial']:>9}{slow:>9}", flush=True)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
