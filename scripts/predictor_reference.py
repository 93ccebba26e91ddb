"""Reference figures for a randomized answer as a predictor in linear regression, from RRreg's ``RRlin`` (Heck and
Moshagen), stored as fixtures so the test suite compares against them without R (tests/analysis/test_predictor.py).

One seeded data set: a public number ``y`` (trust), a public number ``u`` (age) and a yes/no answer ``z`` randomized
through deniable's own client by forced response (truth 1/2, yes 1/4, no 1/4); y = 40 − 6·z + 0.2·u + N(0, 10²).
RRlin fits y ~ z + u with one latent share for z (deniable: ``linear("y ~ z + u", data, predictor_terms="1")``),
through the channel as a ``custom`` misclassification matrix.

RRreg is not packaged by Debian. With it installed in R (``install.packages("RRreg")``) the script calls
``RRreg::RRlin``; otherwise it sources RRlin's log-likelihood from a checkout of RRreg's sources
(``RRREG_SOURCE=/path/to/RRreg``, the file ``R/RRlin_loglik.R``) and runs the fit exactly as ``RRlin`` does for one
custom RR variable (least-squares start, L-BFGS-B with its scaling, the covariance from the optimiser's Hessian).

    python scripts/predictor_reference.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from survey_reference import Seeded  # noqa: E402  (the seeded randomness source of the other reference)

from deniable.analysis import channels  # noqa: E402
from deniable.client import Survey  # noqa: E402

FOLDER = ROOT / "tests" / "fixtures" / "predictor"
SEED = 20261126
N = 800

SPEC = {"id": "predictor", "title": "A randomized answer as a predictor", "questions": [
    {"id": "z", "type": "yes_no", "text": "Have you ever dodged your taxes?",
     "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}},
    {"id": "u", "type": "number", "text": "Age", "privacy": "none", "min": 18, "max": 90},
    {"id": "y", "type": "number", "text": "Trust in the tax office (0 to 100)", "privacy": "none", "min": 0,
     "max": 100, "step": 0.1}]}

R_SCRIPT = r"""
library(jsonlite)
args <- commandArgs(trailingOnly = TRUE)
dat <- read.csv(args[1])
PW <- as.matrix(fromJSON(args[2]))   # PW[i, j] = P(respond i | true j), 0 = no, 1 = yes
if (requireNamespace("RRreg", quietly = TRUE)) {
  fit <- RRreg::RRlin(y ~ w + u, data = dat, models = "custom", p.list = list(PW), fit.n = 1)
  out <- list(beta = unname(fit$beta), sigma = fit$sigma, pi = unname(fit$pi), vcov = unname(fit$vcov),
              logLik = fit$logLik, source = "RRreg::RRlin")
} else {
  source(file.path(Sys.getenv("RRREG_SOURCE"), "R", "RRlin_loglik.R"))
  y <- matrix(dat$y, ncol = 1); w <- matrix(dat$w, ncol = 1); u <- matrix(dat$u, ncol = 1)
  PWarray <- array(PW, dim = c(2, 2, 1), dimnames = list(response = c("0", "1"), true = c("0", "1"), group = "1"))
  responses <- as.character(dat$w)
  PWpp <- t(sapply(responses, function(r) PWarray[r, , 1]))
  n.star <- matrix(c(sum(responses == "0"), sum(responses == "1")), ncol = 1, dimnames = list(c("0", "1"), NULL))
  x <- cbind(1, w, u)
  startmod <- lm(y ~ x - 1)
  beta <- unname(coef(startmod))
  sigma <- sqrt(sum(startmod$residuals^2) / startmod$df.residual)
  pi.est <- as.vector(solve(PW) %*% n.star[, 1] / nrow(dat))
  pi.est[pi.est < 0] <- 0; pi.est[pi.est > 1] <- 1; pi.est <- pi.est / sum(pi.est)
  phi <- c(beta, sigma, pi.est[1])
  est <- optim(par = phi, fn = RRlin.ll, method = "L-BFGS-B",
               lower = c(rep(-Inf, 3), 0, 0), upper = c(rep(Inf, 3), Inf, 1),
               control = list(fnscale = -1, maxit = 1000, parscale = c(rep(1, 3), 1, 0.05 / max(abs(beta)))),
               hessian = TRUE, y = y, u = u, gidx = rep(1, nrow(dat)), U = 1, intercept = TRUE, PWpp = PWpp,
               nbeta = 3, n.star = n.star, PWarray = PWarray, M = 1)
  pi <- c(est$par[5], 1 - est$par[5])
  out <- list(beta = est$par[1:3], sigma = est$par[4], pi = pi, vcov = solve(-est$hessian), logLik = est$value,
              source = "RRlin.ll from RRreg's sources, fitted as RRlin fits it")
}
cat(toJSON(out, digits = NA, auto_unbox = TRUE))
"""


def simulate() -> tuple[list[dict], Survey]:
    survey = Survey.from_dict(SPEC)
    rng = np.random.default_rng(SEED)
    draws = Seeded(SEED)
    rows = []
    for _ in range(N):
        age = int(rng.integers(18, 91))
        truth = bool(rng.random() < 0.35)
        trust = float(np.clip(np.round(40 - 6 * truth + 0.2 * age + rng.normal(0, 10), 1), 0, 100))
        report = survey.randomize({"z": "yes" if truth else "no", "u": age, "y": trust}, rng=draws)
        rows.append(report)
    return rows, survey


def main():
    rows, survey = simulate()
    FOLDER.mkdir(parents=True, exist_ok=True)
    (FOLDER / "rrlin_data.json").write_text(json.dumps({"spec": SPEC, "reports": rows}, indent=0) + "\n",
                                            encoding="utf-8")
    mechanism = survey.questions["z"].mechanism
    channel = channels.binary_channel(mechanism)  # p = P(yes | yes), q = P(yes | no)
    matrix = [[1 - channel.q, 1 - channel.p], [channel.q, channel.p]]  # rows: respond no, yes; columns: true no, yes
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data.csv"
        data.write_text("y,w,u\n" + "".join(f"{r['y']},{int(r['z'] == 'yes')},{r['u']}\n" for r in rows))
        script = Path(folder) / "rrlin.R"
        script.write_text(R_SCRIPT)
        figures = subprocess.run(["Rscript", str(script), str(data), json.dumps(matrix)], check=True,
                                 capture_output=True, text=True, env={**os.environ}).stdout
    result = json.loads(figures)
    result["channel"] = matrix
    (FOLDER / "rrlin_reference.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
