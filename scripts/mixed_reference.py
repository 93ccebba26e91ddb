"""Reference figures for the multilevel logistic regression of a randomized answer (`analysis.mixed`), from R: RRreg's
``RRmixed`` (Heck and Moshagen; lme4's ``glmer`` with the randomized-response link) and lme4's ``glmer`` itself,
stored as a fixture so the suite compares against them without R (tests/analysis/test_mixed_reference.py).

One seeded data set: 40 groups of 25 respondents, a public number ``cov`` ~ N(0, 1), group intercepts ~ N(0, 0.8²),
P(true yes) = σ(−0.5 + cov + u); each true answer randomized by forced response (truth 1/2, yes 1/4, no 1/4: RRreg's
``model = "FR", p = c(.25, .25)``, P(yes | no) = 1/4, P(yes | yes) = 3/4) into ``resp``. The R calls, exactly:

    RRmixed(resp ~ cov + (1 | group), data = d, model = "FR", p = c(.25, .25))          # Laplace (nAGQ = 1)
    RRmixed(resp ~ cov + (1 | group), data = d, model = "FR", p = c(.25, .25), nAGQ = 25)  # 25 quadrature nodes
    glmer(resp ~ cov + (1 | group), data = d, family = binomial(link = RRloglink(c(.25, .75))), nAGQ = 25,
          mustart = runif(nrow(d), .25 + 1e-4, .75 - 1e-4),                               # as RRmixed starts
          start = list(theta = 0.5, fixef = c(0, 0)))                                      # the same model, 25 nodes
    glmer(true ~ cov + (1 | group), data = d, family = binomial, nAGQ = 25)              # no randomization

A second data set with two crossed grouping factors (30 schools and 12 districts, each respondent of one of each
drawn independently, 1,200 respondents; intercepts ~ N(0, 0.8²) and N(0, 0.5²)), fitted by the Laplace approximation,
the only one lme4 offers for several factors:

    RRmixed(resp ~ cov + (1 | school) + (1 | district), data = d2, model = "FR", p = c(.25, .25))
    glmer(resp ~ cov + (1 | school) + (1 | district), data = d2, family = binomial(link = RRloglink(c(.25, .75))),
          mustart = runif(nrow(d2), .25 + 1e-4, .75 - 1e-4), start = list(theta = c(0.5, 0.5), fixef = c(0, 0)))
    glmer(true ~ cov + (1 | school) + (1 | district), data = d2, family = binomial)

RRreg is not packaged by Debian; lme4 is (``apt-get install r-cran-lme4``). With RRreg installed in R the script
calls ``RRreg::RRmixed``; otherwise it sources ``RRmixed``, ``RRloglink`` and the helpers they call from a checkout of
RRreg's sources (``RRREG_SOURCE=/path/to/RRreg``: R/RRmixed.R, R/helper_functions.R, R/RRlin_getPW.R).

    RRREG_SOURCE=/path/to/RRreg python scripts/mixed_reference.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.special import expit

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "mixed" / "reference.json"

R_PROGRAM = r"""
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
source_dir <- args[3]
if (requireNamespace("RRreg", quietly = TRUE)) {
  RRmixed <- RRreg::RRmixed
  RRloglink <- RRreg:::RRloglink
} else {
  for (file in c("R/RRmixed.R", "R/helper_functions.R", "R/RRlin_getPW.R")) source(file.path(source_dir, file))
}
d <- read.csv(args[1])
d$group <- factor(d$group)
summarise <- function(m) {
  list(fixef = as.list(lme4::fixef(m)), se = as.list(sqrt(diag(as.matrix(vcov(m))))),
       sd = attr(lme4::VarCorr(m)$group, "stddev")[[1]], loglik = as.numeric(logLik(m)),
       nAGQ = m@devcomp$dims[["nAGQ"]])
}
set.seed(1)  # RRmixed draws its starting values (with 20261129 they led glmer's PIRLS to NaN)
laplace <- RRmixed(resp ~ cov + (1 | group), data = d, model = "FR", p = c(.25, .25))
set.seed(1)
rrmixed_agq <- RRmixed(resp ~ cov + (1 | group), data = d, model = "FR", p = c(.25, .25), nAGQ = 25)
agq <- glmer(resp ~ cov + (1 | group), data = d, family = binomial(link = RRloglink(c(.25, .75))), nAGQ = 25,
             mustart = runif(nrow(d), .25 + 1e-4, .75 - 1e-4), start = list(theta = 0.5, fixef = c(0, 0)))
plain <- glmer(true ~ cov + (1 | group), data = d, family = binomial, nAGQ = 25)
d2 <- read.csv(args[4])
d2$school <- factor(d2$school)
d2$district <- factor(d2$district)
crossed_summary <- function(m) {
  list(fixef = as.list(lme4::fixef(m)), se = as.list(sqrt(diag(as.matrix(vcov(m))))),
       sd = list(school = attr(lme4::VarCorr(m)$school, "stddev")[[1]],
                 district = attr(lme4::VarCorr(m)$district, "stddev")[[1]]),
       loglik = as.numeric(logLik(m)), nAGQ = m@devcomp$dims[["nAGQ"]],
       school = as.list(lme4::ranef(m)$school[[1]]), district = as.list(lme4::ranef(m)$district[[1]]))
}
set.seed(1)
crossed_rrmixed <- RRmixed(resp ~ cov + (1 | school) + (1 | district), data = d2, model = "FR", p = c(.25, .25))
crossed_glmer <- glmer(resp ~ cov + (1 | school) + (1 | district), data = d2,
                       family = binomial(link = RRloglink(c(.25, .75))),
                       mustart = runif(nrow(d2), .25 + 1e-4, .75 - 1e-4), start = list(theta = c(0.5, 0.5), fixef = c(0, 0)))
crossed_plain <- glmer(true ~ cov + (1 | school) + (1 | district), data = d2, family = binomial)
out <- list(rrmixed_laplace = summarise(laplace), rrmixed_agq25 = summarise(rrmixed_agq),
            glmer_rr_agq25 = summarise(agq), glmer_plain_agq25 = summarise(plain),
            crossed_rrmixed_laplace = crossed_summary(crossed_rrmixed), crossed_glmer_rr_laplace = crossed_summary(crossed_glmer),
            crossed_glmer_plain_laplace = crossed_summary(crossed_plain),
            r = R.version.string, lme4 = as.character(packageVersion("lme4")))
writeLines(jsonlite::toJSON(out, auto_unbox = TRUE, digits = NA), args[2])
"""


def simulated(seed: int = 20261129) -> dict:
    """The data set, as columns."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(40), 25)
    cov = rng.normal(size=len(groups))
    effects = rng.normal(0, 0.8, 40)
    true = rng.random(len(groups)) < expit(-0.5 + cov + effects[groups])
    coin = rng.random(len(groups))
    resp = np.where(coin < 0.5, true, coin < 0.75)  # forced response: truth 1/2, yes 1/4, no 1/4
    return {"group": [f"g{g:02d}" for g in groups], "cov": [round(float(c), 6) for c in cov],
            "true": true.astype(int).tolist(), "resp": resp.astype(int).tolist()}


def crossed(seed: int = 20261130) -> dict:
    """The data set with two crossed grouping factors, as columns."""
    rng = np.random.default_rng(seed)
    n = 1200
    school, district = rng.integers(0, 30, n), rng.integers(0, 12, n)
    cov = rng.normal(size=n)
    true = rng.random(n) < expit(-0.5 + cov + rng.normal(0, 0.8, 30)[school] + rng.normal(0, 0.5, 12)[district])
    coin = rng.random(n)
    resp = np.where(coin < 0.5, true, coin < 0.75)
    return {"school": [f"s{g:02d}" for g in school], "district": [f"d{g:02d}" for g in district],
            "cov": [round(float(c), 6) for c in cov], "true": true.astype(int).tolist(), "resp": resp.astype(int).tolist()}


def main():
    data = simulated()
    source = os.environ.get("RRREG_SOURCE", "")
    with tempfile.TemporaryDirectory() as folder:
        table, result, program = (Path(folder) / name for name in ("d.csv", "out.json", "ref.R"))
        rows = zip(data["group"], data["cov"], data["true"], data["resp"])
        table.write_text("group,cov,true,resp\n" + "".join(f"{g},{c!r},{t},{r}\n" for g, c, t, r in rows))
        second = crossed()
        crossed_table = Path(folder) / "d2.csv"
        rows2 = zip(second["school"], second["district"], second["cov"], second["true"], second["resp"])
        crossed_table.write_text("school,district,cov,true,resp\n"
                                 + "".join(f"{s},{d},{c!r},{t},{r}\n" for s, d, c, t, r in rows2))
        program.write_text(R_PROGRAM)
        subprocess.run(["Rscript", str(program), str(table), str(result), source, str(crossed_table)], check=True)
        figures = json.loads(result.read_text())
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps({"data": data, "crossed": second, "reference": figures}, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    sys.exit(main())
