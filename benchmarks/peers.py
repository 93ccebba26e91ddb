"""deniable beside the LDP libraries, in interleaved rounds, as ratios (deniable's speed / the peer's).

    pip install 'deniable[bench]'       # pure-ldp, multi-freq-ldpy (numba), opendp, diffprivlib: benchmark only
    python benchmarks/peers.py [--rounds 7] [--seconds 0.3]

Each row times deniable and one peer on the same task in alternation (round 1: deniable then the peer,
round 2: the peer then deniable, ...) and prints the min / median / max of the per-round ratios, so a
busy machine moves both sides alike. Ratios above 1 favour deniable.

What is compared, and how the mechanisms differ:

* single answers, k-ary randomized response (k = 10, ε = ln 3): deniable draws from the operating system's
  CSPRNG with exact integer thresholds; pure-ldp and multi-freq-ldpy use numpy's Mersenne Twister and float
  comparisons (not a CSPRNG, not exact).
* single answers, multi-select (unary, k = 10): deniable's ε covers the whole subset; multi-freq-ldpy's
  `UE_Client` is optimized unary encoding of one item (a different, single-item mechanism), compiled by numba.
* estimation from counts, k-ary RR (n = 10⁴): deniable's certified maximum likelihood, intervals and fit test;
  multi-freq-ldpy's `GRR_Aggregator_MI` (unbiased estimate, clipped and normalised; no intervals).
* Laplace: deniable's `randomize_many` against its own single calls (no peer draws a bounded discrete
  Laplace exactly); OpenDP's discrete Laplace (a CSPRNG, exact) on single values where installed.

MSE against the truth is printed for the estimation rows (both sides estimate the same reports).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from deniable.analysis import channels
from deniable.analysis.from_counts import estimate_counts
from deniable.client import Survey


def question(qtype: str, privacy: dict, **extra):
    return Survey.from_dict({"id": "bench", "title": "bench", "questions": [
        {"id": "q", "type": qtype, "text": "?", "privacy": privacy, **extra}]}).questions["q"]


def per_second(function, seconds: float) -> float:
    function()
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        function()
        count += 1
    return count / elapsed


def interleaved(ours, theirs, rounds: int, seconds: float) -> list[float]:
    ratios = []
    for round_ in range(rounds):
        if round_ % 2:
            peer = per_second(theirs, seconds)
            mine = per_second(ours, seconds)
        else:
            mine = per_second(ours, seconds)
            peer = per_second(theirs, seconds)
        ratios.append(mine / peer)
    return ratios


def show(what: str, peer: str, ratios: list[float], extra: str = ""):
    print(f"{what:<52} vs {peer:<28} min {min(ratios):8.3f}  median {statistics.median(ratios):8.3f}  "
          f"max {max(ratios):8.3f}{extra}")


def single_krr(rounds, seconds):
    options = [str(i) for i in range(10)]
    mechanism = question("choice", {"design": "k_rr", "epsilon": "ln 3"}, options=options).mechanism

    def ours():
        for _ in range(100):
            mechanism.randomize("3")

    try:
        from pure_ldp.frequency_oracles.direct_encoding import DEClient

        client = DEClient(epsilon=float(np.log(3)), d=10)

        def pure():
            for _ in range(100):
                client.privatise(3)

        show("k-RR k = 10 single answers", "pure-ldp DEClient", interleaved(ours, pure, rounds, seconds))
    except ImportError:
        print("pure-ldp not installed: pip install 'deniable[bench]'")
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Client

        epsilon = float(np.log(3))  # computed once, as our mechanism holds its own: the loops time the draws alone

        def multi():
            for _ in range(100):
                GRR_Client(3, 10, epsilon)

        show("k-RR k = 10 single answers", "multi-freq-ldpy GRR_Client", interleaved(ours, multi, rounds, seconds))
    except ImportError:
        print("multi-freq-ldpy not installed: pip install 'deniable[bench]'")


def single_unary(rounds, seconds):
    options = [str(i) for i in range(10)]
    mechanism = question("multi_select", {"design": "unary", "epsilon": 2}, options=options).mechanism

    def ours():
        for _ in range(100):
            mechanism.randomize(["3"])

    try:
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Client

        def multi():
            for _ in range(100):
                UE_Client(3, 10, 2.0, optimal=True)

        show("unary k = 10 single answers", "multi-freq-ldpy UE_Client", interleaved(ours, multi, rounds, seconds))
    except ImportError:
        print("multi-freq-ldpy not installed")


def estimation(rounds, seconds, sizes=(4, 10, 100, 300, 1000), n=10_000):
    rng = np.random.default_rng(1)
    for k in sizes:
        options = [f"o{i}" for i in range(k)]
        mechanism = question("choice", {"design": "k_rr", "epsilon": "ln 3"}, options=options).mechanism
        truth = np.concatenate([0.6 ** np.arange(k - 1), [0.0]])
        truth /= truth.sum()
        q = channels.channel_matrix(mechanism)
        cumulative = np.cumsum(q, axis=0)
        answers = rng.choice(k, size=n, p=truth)
        reports = (rng.random(n)[:, None] > cumulative[:, answers].T).sum(axis=1)
        counts = np.bincount(reports, minlength=k)
        start = time.process_time()
        result = estimate_counts(mechanism, counts, 0.95, None, "q")
        cpu = time.process_time() - start
        ours_mse = float(np.mean((result.table["estimate"].to_numpy() - truth) ** 2))
        print(f"estimate k-RR k = {k:<5} n = {n:,}: {cpu * 1000:8.1f} ms CPU, MSE {ours_mse:.2e}")
        try:
            from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI

            epsilon = float(np.log(3))
            theirs_mse = float(np.mean((np.asarray(GRR_Aggregator_MI(reports, k, epsilon)) - truth) ** 2))
            show(f"estimate from counts, k-RR k = {k}", "multi-freq-ldpy GRR MI (reports)",
                 interleaved(lambda: estimate_counts(mechanism, counts, 0.95, None, "q"),
                             lambda: GRR_Aggregator_MI(reports, k, epsilon), rounds, seconds),
                 f"   MSE {ours_mse:.2e} vs {theirs_mse:.2e}")
        except ImportError:
            pass


def laplace(rounds, seconds):
    mechanism = question("number", {"design": "laplace", "epsilon": 1}, min=0, max=100, step=1).mechanism

    def single():
        for _ in range(1000):
            mechanism.randomize(37)

    def batch():
        mechanism.randomize_many([37] * 1000)

    show("Laplace 0..100 randomize_many (1000)", "its own single calls", interleaved(batch, single, rounds, seconds))
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        measurement = dp.m.make_laplace(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=100.0)

        def opendp():
            for _ in range(1000):
                measurement(37)

        show("Laplace single values", "OpenDP discrete Laplace", interleaved(single, opendp, rounds, seconds))
    except (ImportError, AttributeError, TypeError) as error:
        print(f"OpenDP comparison skipped ({error})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.3)
    rows = {"krr": single_krr, "unary": single_unary, "laplace": laplace, "estimation": estimation}
    parser.add_argument("--only", choices=rows, action="append", help="run these rows only (repeatable)")
    args = parser.parse_args()
    for name in args.only or rows:
        rows[name](args.rounds, args.seconds)


if __name__ == "__main__":
    main()
