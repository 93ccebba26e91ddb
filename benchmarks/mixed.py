"""The multilevel fit of a randomized answer (`deniable.analysis.mixed`) beside lme4's ``glmer`` with the
randomized-response link (what RRreg's ``RRmixed`` runs), in interleaved rounds, as ratios of CPU seconds.

    python benchmarks/mixed.py [--rounds 3] [--sizes 10000 100000] [--groups 200] [--peer-limit 600]

Data: ``groups`` groups of equal size, one public covariate ~ N(0, 1), intercepts ~ N(0, 0.8²), P(true yes) =
σ(−0.5 + x + u), each true answer randomized by forced response (truth 1/2, yes 1/4, no 1/4). Each round fits the
same data set with both, in alternating order (round 1: deniable first), and prints the CPU seconds of each and their
ratio (glmer's / deniable's: above 1 favours deniable). Rows:

* deniable's default: adaptive Gauss–Hermite quadrature with nodes added until the log-likelihood is settled, the
  optimum certified by Newton steps, τ's profile-likelihood interval and its boundary test: what ``mixed()`` returns.
* deniable at one node (``nodes=1``): the Laplace approximation as glmer computes it, the same certificate and
  interval.
* glmer, ``nAGQ = 1`` (RRmixed's default) and ``nAGQ = 15``: the fit only, Wald standard errors; a profile interval
  would be ``confint(m, method = "profile")`` on top, not timed here. R's time is its own ``proc.time()`` around the
  fit, so R's start-up and reading the data are not counted. A glmer fit still running after ``--peer-limit`` seconds
  (wall) is stopped and counted as that many seconds, printed with ">": its ratio is then a lower bound. A glmer
  fit that fails (its PIRLS loop "resulted in NaN value", as RRmixed's did on some of these data) is printed as such.
  ``--without-peer`` times deniable alone.

Needs R with lme4 (Debian: ``apt-get install r-cran-lme4``); the link is written out in the R program (the link RRreg
builds with ``RRloglink``), so RRreg itself is not needed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.special import expit

from deniable.analysis.mixed_fit import fit_mixed
from deniable.analysis.mixed_likelihood import GroupedReports

P, Q = 0.75, 0.25

R_PROGRAM = r"""
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
d$group <- factor(d$group)
p <- 0.75; q <- 0.25
rr <- structure(list(
  linkfun = function(mu) qlogis((mu - q) / (p - q)),
  linkinv = function(eta) q + (p - q) * plogis(eta),
  mu.eta = function(eta) (p - q) * dlogis(eta),
  valideta = function(eta) TRUE, name = "randomized response (forced response)"), class = "link-glm")
nodes <- as.integer(args[2])
started <- proc.time()
m <- glmer(resp ~ x + (1 | group), data = d, family = binomial(link = rr), nAGQ = nodes,
           mustart = runif(nrow(d), q + 1e-4, p - 1e-4), start = list(theta = 0.5, fixef = c(0, 0)))
used <- proc.time() - started
cat(jsonlite::toJSON(list(seconds = unname(used[["user.self"]] + used[["sys.self"]]), fixef = unname(fixef(m)),
                          sd = attr(VarCorr(m)$group, "stddev")[[1]]), auto_unbox = TRUE, digits = NA))
"""


def simulated(n: int, groups: int, seed: int = 62):
    rng = np.random.default_rng(seed)
    members = np.repeat(np.arange(groups), n // groups)
    x = rng.normal(size=len(members))
    true = rng.random(len(members)) < expit(-0.5 + x + rng.normal(0, 0.8, groups)[members])
    resp = np.where(true, rng.random(len(members)) < P, rng.random(len(members)) < Q)
    return members, x, resp.astype(float)


def ours(members, x, resp, nodes: int | None):
    data = GroupedReports(resp, np.column_stack([np.ones(len(x)), x]), members, P, Q)
    started = time.process_time()
    fit = fit_mixed(data, ["Intercept", "x"], [str(g) for g in range(members.max() + 1)],
                    nodes=nodes or 15, adapt=nodes is None)
    return time.process_time() - started, fit


def theirs(table: Path, program: Path, nodes: int, limit: float) -> dict:
    try:
        done = subprocess.run(["Rscript", str(program), str(table), str(nodes)], check=True, capture_output=True,
                              text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"seconds": limit, "fixef": [math.nan, math.nan], "sd": math.nan, "stopped": True}
    except subprocess.CalledProcessError as error:  # glmer's PIRLS fails on some data ("resulted in NaN value")
        print(f"        glmer failed: {error.stderr.strip().splitlines()[-3:]}", flush=True)
        return {"seconds": math.nan, "fixef": [math.nan, math.nan], "sd": math.nan}
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--peer-limit", type=float, default=600.0, help="seconds before a glmer fit is stopped")
    parser.add_argument("--without-peer", action="store_true", help="time deniable alone (no R)")
    arguments = parser.parse_args()
    print(f"{'n':>7} {'deniable':>22} {'glmer':>10}  {'CPU s (deniable / glmer), per round':<40} ratio min/median/max")
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "glmer.R"
        program.write_text(R_PROGRAM)
        for n in arguments.sizes:
            members, x, resp = simulated(n, arguments.groups)
            table = Path(folder) / f"d{n}.csv"
            table.write_text("group,x,resp\n" + "".join(f"{g},{v!r},{int(r)}\n" for g, v, r in zip(members, x, resp)))
            for label, our_nodes, their_nodes in (("adaptive (default)", None, 15), ("Laplace (nodes=1)", 1, 1)):
                pairs, last = [], None
                for round_ in range(arguments.rounds):
                    if arguments.without_peer:
                        mine, fit = ours(members, x, resp, our_nodes)
                        peer = {"seconds": math.nan, "fixef": [math.nan, math.nan], "sd": math.nan}
                    elif round_ % 2:
                        peer = theirs(table, program, their_nodes, arguments.peer_limit)
                        mine, fit = ours(members, x, resp, our_nodes)
                    else:
                        mine, fit = ours(members, x, resp, our_nodes)
                        peer = theirs(table, program, their_nodes, arguments.peer_limit)
                    pairs.append((mine, peer["seconds"], peer.get("stopped", False)))
                    last = fit, peer
                ratios = [peer / mine for mine, peer, _ in pairs]
                times = ", ".join(f"{mine:.1f}/{'>' if stopped else ''}{peer:.1f}" for mine, peer, stopped in pairs)
                print(f"{n:>7} {label:>22} {'nAGQ=' + str(their_nodes):>10}  {times:<40} "
                      f"{min(ratios):.2f} / {statistics.median(ratios):.2f} / {max(ratios):.2f}")
                fit, peer = last
                print(f"{'':>7} deniable: β {np.round(fit.fixed['estimate'].to_numpy(), 4)}, sd {fit.tau:.4f}, "
                      f"{fit.nodes} nodes, certified {fit.converged}; glmer: β {np.round(peer['fixef'], 4)}, "
                      f"sd {peer['sd']:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
