"""Reference figures for design-based estimates, from R's ``survey`` package (Lumley), stored as fixtures so the
test suite compares against them without R (tests/analysis/test_sample_design.py).

Three of the public complex samples ``survey`` ships (the California Academic Performance Index: ``apistrat``, a
stratified sample; ``apiclus1``, a one-stage cluster sample; ``apiclus2``, two-stage, analysed by its first stage
with replacement), each with an item randomized here with a fixed seed, through deniable's own client:

* apistrat: ``awards`` (yes/no) by forced response (truth 1/2, yes 1/4, no 1/4); weights ``pw``, strata ``stype``,
  ``fpc``; overall, by the domain ``sch.wide``, raked to margins of ``stype`` and ``sch.wide``, and the difference
  between the domains of ``yr.rnd`` (svyby with its covariance, then svycontrast);
  with replicate weights: the JKn jackknife (overall, by ``sch.wide``, raked per replicate) and the 50 bootstrap
  replicates deniable draws (given to ``svrepdesign``);
* apiclus1: ``stype`` (E/H/M) by k-ary randomized response (ε = ln 4); clusters ``dnum``, weights ``pw``, ``fpc``;
  and by the JK1 jackknife;
* apiclus2: ``api00`` in four bands, by ordinal randomized response (ε = 2); clusters ``dnum``, weights ``pw``.

R estimates each answer's share as ``svymean`` of the unbiased transform u = Q⁺·e_r of each respondent's report
(its weighted mean is deniable's unbiased column, and inside the simplex the maximum-likelihood estimate too).

    apt-get install r-cran-survey   # Debian's package of R's survey
    python scripts/survey_reference.py
"""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.analysis import channels  # noqa: E402
from deniable.client import Survey  # noqa: E402

FOLDER = ROOT / "tests" / "fixtures" / "complex_sample"
SEED = 20261126
BOOTSTRAP = 50


class Seeded:
    def __init__(self, seed):
        self._random = random.Random(seed)

    def randbelow(self, n):
        return self._random.randrange(n)


SPECS = {
    "apistrat": {"id": "apistrat", "title": "API, stratified sample", "questions": [
        {"id": "school_wide", "text": "Met the school-wide target?", "type": "yes_no", "privacy": "none"},
        {"id": "year_round", "text": "A year-round school?", "type": "yes_no", "privacy": "none"},
        {"id": "awards", "text": "Eligible for awards?", "type": "yes_no",
         "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]},
    "apiclus1": {"id": "apiclus1", "title": "API, cluster sample", "questions": [
        {"id": "level", "text": "School level?", "type": "choice", "options": ["E", "H", "M"],
         "privacy": {"design": "k_rr", "epsilon": "ln 4"}}]},
    "apiclus2": {"id": "apiclus2", "title": "API, two-stage sample", "questions": [
        {"id": "band", "text": "API band?", "type": "ordinal", "options": ["low", "mid", "high", "top"],
         "privacy": {"design": "ordinal", "epsilon": 2}}]},
}
#: Per data set: (the randomized question, the design columns kept, the survey design in R).
DESIGNS = {
    "apistrat": ("awards", ["pw", "fpc", "stype"], "svydesign(id = ~1, strata = ~stype, weights = ~pw, fpc = ~fpc, data = d)"),
    "apiclus1": ("level", ["pw", "fpc", "dnum"], "svydesign(id = ~dnum, weights = ~pw, fpc = ~fpc, data = d)"),
    "apiclus2": ("band", ["pw", "dnum"], "svydesign(id = ~dnum, weights = ~pw, data = d)"),
}
#: apistrat's raking margins: the population's counts of schools by type (apipop) and by school-wide target.
RAKE = {"stype": {"E": 4421, "H": 755, "M": 1018}, "school_wide": {"no": 1000, "yes": 5194}}


def _band(api00: float) -> str:
    return "low" if api00 < 600 else "mid" if api00 < 700 else "high" if api00 < 800 else "top"


def _truth(name: str, row: dict) -> dict:
    if name == "apistrat":
        return {"school_wide": row["sch.wide"].lower(), "year_round": row["yr.rnd"].lower(),
                "awards": row["awards"].lower()}
    if name == "apiclus1":
        return {"level": row["stype"]}
    return {"band": _band(float(row["api00"]))}


def main():
    FOLDER.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    subprocess.run(["Rscript", "-e", "library(survey); data(api); "
                    + "; ".join(f"write.csv({n}, '{work}/{n}.csv', row.names = FALSE)" for n in SPECS)], check=True)
    rng = Seeded(SEED)
    figures = {}
    for name, spec in SPECS.items():
        survey = Survey.from_dict(spec)
        question_id, kept, r_design = DESIGNS[name]
        question = survey.questions[question_id]
        inverse = channels.left_inverse(channels.channel_matrix(question.mechanism))
        reports = question.mechanism.reports
        with open(work / f"{name}.csv", newline="") as source:
            rows = list(csv.DictReader(source))
        export, for_r = [], []
        for i, row in enumerate(rows):
            randomized = survey.randomize(_truth(name, row), rng)
            position = reports.index(randomized[question_id])
            record = {"id": f"r{i:04d}", "spec_hash": survey.hash, **{k: row[k] for k in kept}}
            record.update({qid: value for qid, value in randomized.items()})
            export.append(record)
            for_r.append({**record, **{f"u{j}": float(inverse[j, position]) for j in range(inverse.shape[0])}})
        columns = list(export[0])
        with open(FOLDER / f"{name}.csv", "w", newline="") as target:
            writer = csv.DictWriter(target, columns)
            writer.writeheader()
            writer.writerows(export)
        (FOLDER / f"{name}.yaml").write_text(json.dumps(spec, indent=1))
        if name == "apistrat":  # deniable's own bootstrap replicate weights, which R is given (its draws differ)
            from deniable.analysis import SampleDesign, load

            data = load(FOLDER / f"{name}.csv", spec=survey)
            design = SampleDesign(weights="pw", strata="stype", variance="bootstrap", replicates=BOOTSTRAP)
            replicates = design.resolve(data.design_frame(question_id, design.column_names())).replicate_frame()
            for record in for_r:
                record.update({f"b{r + 1}": replicates.loc[record["id"]].iloc[r] for r in range(BOOTSTRAP)})
        with open(work / f"{name}-u.csv", "w", newline="") as target:
            writer = csv.DictWriter(target, list(for_r[0]))
            writer.writeheader()
            writer.writerows(for_r)
        us = " + ".join(f"u{j}" for j in range(inverse.shape[0]))
        script = [
            "library(survey); library(jsonlite)",
            f"d <- read.csv('{work}/{name}-u.csv', stringsAsFactors = FALSE)",
            f"des <- {r_design}",
            f"m <- svymean(~{us}, des)",
            "out <- list(estimate = unname(coef(m)), se = unname(SE(m)), df = degf(des))",
        ]
        if name == "apiclus1":  # the delete-one-cluster jackknife
            script += ["j <- as.svrepdesign(des, type = 'JK1')", f"mj <- svymean(~{us}, j)",
                       "out$jk1 <- list(se = unname(SE(mj)), df = degf(j))"]
        if name == "apistrat":
            script += [
                f"b <- svyby(~{us}, ~school_wide, des, svymean)",
                "out$domains <- lapply(split(b, b$school_wide), function(r) list(estimate = unname(unlist(r[2:3])), "
                "se = unname(unlist(r[4:5]))))",
                "pop.types <- data.frame(stype = c('E', 'H', 'M'), Freq = c(4421, 755, 1018))",
                "pop.wide <- data.frame(school_wide = c('no', 'yes'), Freq = c(1000, 5194))",
                "r <- rake(des, list(~stype, ~school_wide), list(pop.types, pop.wide), control = list(epsilon = 1e-12, maxit = 1000))",
                f"mr <- svymean(~{us}, r)",
                "out$raked <- list(estimate = unname(coef(mr)), se = unname(SE(mr)))",
                # the same margins by calibrate(calfun = 'raking'): one calibration, its variance from one regression
                # on the margins (rake() linearizes through its sequence of post-stratifications instead)
                "cal <- calibrate(des, ~stype + school_wide, population = c(`(Intercept)` = 6194, stypeH = 755, "
                "stypeM = 1018, school_wideyes = 5194), calfun = 'raking', epsilon = 1e-12, maxit = 1000)",
                f"mc <- svymean(~{us}, cal)",
                "out$calibrated <- list(estimate = unname(coef(mc)), se = unname(SE(mc)))",
                # Korn and Graubard's interval of a public share, svyciprop(method = 'beta')
                "kg <- svyciprop(~I(school_wide == 'yes'), des, method = 'beta')",
                "out$korn_graubard <- list(estimate = as.numeric(kg), ci = as.numeric(confint(kg)), "
                "se = as.numeric(SE(kg)))",
                # the difference between two domains, which share PSUs: svyby's covariance, then a contrast
                f"bc <- svyby(~{us}, ~year_round, des, svymean, covmat = TRUE)",
                "ct <- svycontrast(bc, quote(`yes:u0` - `no:u0`))",
                "out$difference <- list(domains = unname(coef(bc)[c('yes:u0', 'no:u0')]), estimate = unname(coef(ct)), "
                "se = unname(SE(ct)))",
                # replicate weights: the stratified jackknife, overall, by domain and raked per replicate; and the
                # bootstrap replicate weights deniable drew, given to svrepdesign
                "j <- as.svrepdesign(des, type = 'JKn')",
                f"mj <- svymean(~{us}, j)",
                f"bj <- svyby(~{us}, ~school_wide, j, svymean)",
                "rj <- rake(j, list(~stype, ~school_wide), list(pop.types, pop.wide), control = list(epsilon = 1e-12, maxit = 1000))",
                f"mrj <- svymean(~{us}, rj)",
                "out$jkn <- list(se = unname(SE(mj)), df = degf(j), domains = lapply(split(bj, bj$school_wide), "
                "function(r) list(se = unname(unlist(r[4:5])))), raked = unname(SE(mrj)))",
                f"bs <- svrepdesign(data = d, repweights = d[, paste0('b', 1:{BOOTSTRAP})], weights = ~pw, "
                f"type = 'bootstrap', combined.weights = TRUE, scale = 1 / ({BOOTSTRAP} - 1), rscales = 1, mse = FALSE)",
                f"mb <- svymean(~{us}, bs)",
                "out$bootstrap <- list(se = unname(SE(mb)), df = degf(bs))",
            ]
        script.append(f"writeLines(toJSON(out, digits = NA, auto_unbox = TRUE), '{work}/{name}.json')")
        subprocess.run(["Rscript", "-e", "; ".join(script)], check=True)
        figures[name] = json.loads((work / f"{name}.json").read_text())
    figures["rake"] = RAKE
    figures["r_survey_version"] = subprocess.run(["Rscript", "-e", "cat(as.character(packageVersion('survey')))"],
                                                 capture_output=True, text=True, check=True).stdout.strip()
    (FOLDER / "r_figures.json").write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
