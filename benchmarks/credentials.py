"""What blind-signed credentials cost, on each side, against the token they replace.

    python benchmarks/credentials.py [--rounds 5] [--responses 300] [--no-browser]

- The device: blinding and unblinding one credential (2048-bit key) in Python, in Node (the npm module) and in
  Chromium (the page's own module), Chromium also at 4× CPU slowdown (Lighthouse's stand-in for a mid-range phone).
- The server, per issue: the key read and the blind signature (RSASP1 by CRT, checked with the public exponent).
- The server, per response: CPU time of storing a response that spends a credential (signature verified, serial
  written) against one that spends a token, on SQLite, in interleaved rounds; the ratio of each pair.

CPU time is the process's (user + system), never wall time. Bounded: --responses per round, --rounds rounds.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable import storage  # noqa: E402
from deniable.client import Survey, blind_rsa  # noqa: E402
from deniable.server import signing  # noqa: E402
from tests.support.credentials import device_credential  # noqa: E402

ANSWERS = {"dodged": "yes", "region": "North", "cash": "Cash in hand", "fairness": "Agree", "undeclared": ["Tips"],
           "hours": 10}


def _cpu() -> float:
    return time.process_time()


def device_python(count: int = 50) -> float:
    """ms of CPU to blind and unblind one credential in Python (the signature made by the server's code)."""
    public, private = signing.new_key()
    spent = 0.0
    for _ in range(count):
        serial = blind_rsa.prepare(secrets.token_bytes(32))
        start = _cpu()
        blinded, inverse = blind_rsa.blind(public, serial)
        middle = _cpu()
        signed = signing.blind_sign(private, blinded)
        end = _cpu()
        blind_rsa.finalize(public, serial, signed, inverse)
        spent += (middle - start) + (_cpu() - end)
    return 1000 * spent / count


def _throwaway_key() -> dict:
    """A new 2048-bit key as {n, e, d} in hexadecimal: the devices' benchmarks sign with it (untimed)."""
    from cryptography.hazmat.primitives import serialization

    _, private_pem = signing.new_key()
    numbers = serialization.load_pem_private_key(private_pem.encode(), password=None).private_numbers()
    return {"n": f"{numbers.public_numbers.n:x}", "e": f"{numbers.public_numbers.e:x}", "d": f"{numbers.d:x}"}


def device_node() -> dict:
    """ms per credential in the npm module under Node, for a new 2048-bit key ({"ms", "bits"})."""
    out = subprocess.run(["node", str(ROOT / "benchmarks/credentials.mjs")], input=json.dumps(_throwaway_key()),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def device_chromium() -> dict:
    """ms per credential in the page's module, at full speed and at 4× CPU slowdown."""
    from playwright.sync_api import sync_playwright

    from deniable.server import create_app
    from tests.support.serving import served

    folder = tempfile.mkdtemp()
    app = create_app({"DATABASE": os.path.join(folder, "bench.db"), "ADMIN_TOKEN": "x" * 32, "TESTING": True,
                      "RATELIMIT_ENABLED": False})
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    key = _throwaway_key()
    script = (ROOT / "benchmarks/credentials_page.js").read_text()
    found = {}
    with served(app) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                             args=["--no-sandbox", "--disable-dev-shm-usage"])
        page = browser.new_page()
        page.goto(f"{base}/healthz")
        session = page.context.new_cdp_session(page)
        for slowdown in (1, 4):
            session.send("Emulation.setCPUThrottlingRate", {"rate": slowdown})
            found[f"{slowdown}x"] = page.evaluate(script, {"key": key, "count": 20, "module": "/js/deniable.js"})
        browser.close()
    return found


def server_issue(count: int = 200) -> float:
    """ms of server CPU per blind signature (the key's numbers read once, as a worker keeps them)."""
    public, private = signing.new_key()
    blinded = [blind_rsa.blind(public, blind_rsa.prepare(secrets.token_bytes(32)))[0] for _ in range(count)]
    signing.blind_sign(private, blinded[0])
    start = _cpu()
    for message in blinded:
        signing.blind_sign(private, message)
    return 1000 * (_cpu() - start) / count


def _prepared(store, survey, count: int) -> tuple[list, list]:
    tokens = store.issue_tokens("tax", 2 * count)
    credentials = [device_credential(store, "tax", token) for token in tokens[count:]]
    return tokens[:count], credentials


def server_responses(rounds: int, count: int) -> list[tuple[float, float]]:
    """[(µs of CPU per response with a token, with a credential)] per round, the two interleaved."""
    survey = Survey.from_file(ROOT / "examples/tax.yaml")
    pairs = []
    for _ in range(rounds):
        folder = tempfile.mkdtemp()
        with storage.Store(os.path.join(folder, "bench.db")) as store:
            store.add_survey(survey, access="token")
            tokens, credentials = _prepared(store, survey, count)
            bodies = [survey.randomize(ANSWERS) for _ in range(2 * count)]
            spent = {"token": 0.0, "credential": 0.0}
            for i in range(count):
                for kind in ("token", "credential"):
                    start = _cpu()
                    if kind == "token":
                        store.submit("tax", survey.hash, secrets.token_hex(16), bodies[2 * i], tokens[i])
                    else:
                        store.submit("tax", survey.hash, secrets.token_hex(16), bodies[2 * i + 1],
                                     credential=credentials[i])
                    spent[kind] += _cpu() - start
        pairs.append((1e6 * spent["token"] / count, 1e6 * spent["credential"] / count))
    return pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--responses", type=int, default=300)
    parser.add_argument("--no-browser", action="store_true")
    options = parser.parse_args()
    print("The device, per credential (2048-bit key): blind, then unblind and verify")
    print(f"  Python                     {device_python():7.2f} ms CPU")
    node = device_node()
    print(f"  Node (npm module)          {node['ms']:7.2f} ms ({node['bits']}-bit key)")
    if not options.no_browser:
        for slowdown, ms in device_chromium().items():
            print(f"  Chromium, CPU {slowdown:>3}        {ms:7.2f} ms")
    print(f"The server, per credential issued: {server_issue():.2f} ms CPU (RSASP1 by CRT, checked)")
    pairs = server_responses(options.rounds, options.responses)
    ratios = [credential / token for token, credential in pairs]
    print(f"The server, per response stored (SQLite, {options.responses} of each per round, interleaved):")
    for token, credential in pairs:
        print(f"  token {token:8.0f} µs   credential {credential:8.0f} µs   ratio {credential / token:.3f}")
    print(f"  ratio min {min(ratios):.3f}  median {statistics.median(ratios):.3f}  max {max(ratios):.3f}")


if __name__ == "__main__":
    main()
