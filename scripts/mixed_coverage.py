"""Coverage of the multilevel fit of a randomized answer (`analysis.mixed`) and of its small-area estimates
(`analysis.small_areas`) over simulated surveys with known group effects; every report randomized by forced response
(truth 1/2, yes 1/4, no 1/4).

    python scripts/mixed_coverage.py fits [surveys per cell, default 40] [seed, default 1]
    python scripts/mixed_coverage.py areas [surveys, default 300] [seed, default 1]
    python scripts/mixed_coverage.py crossed [surveys, default 100] [seed, default 1]
    python scripts/mixed_coverage.py predictor [surveys, default 100] [seed, default 1]

``fits``: how often the 95% intervals of the fixed effects and of the random intercepts' sd τ hold the truth, per cell
of a grid of the number of groups (20, 60, 200), the respondents per group (5, 25, 100; capped at 6,000 respondents a
survey) and the latent intraclass correlation (ICC = τ²/(τ² + π²/3): 0.05, 0.3), then pooled over the cells. Each
line prints its coverage with the binomial Monte Carlo error (√(0.95·0.05/surveys)).

``areas``: 60 districts of 2,000 people each, of two kinds (a covariate, its share varying by district), ICC 0.15;
each survey reaches 45 districts with 3 to 200 respondents and misses 15. Per class of district size: how often the
95% interval held the district's true share (the model's expectation over its population, given its drawn effect),
and the root mean squared error of the model's estimate and of the direct estimate, where there is one.

``crossed``: 1,200 respondents, each in one of 30 schools and one of 12 districts drawn independently (intercepts sd
0.8 and 0.5), the Laplace approximation: coverage of β and of both sds. ``predictor``: a public number with the
randomized answer as a covariate (tests/analysis/simulated_predictor.py: 1,600 respondents in 40 PSUs sharing an
effect of sd 4 on trust, residual sd 10, δ = −6): coverage of δ, the other coefficients and τ.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import patsy
from scipy.special import expit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.analysis.mixed import fit_mixed, mixed  # noqa: E402
from deniable.analysis.mixed_laplace import CrossedReports  # noqa: E402
from deniable.analysis.mixed_likelihood import GroupedReports  # noqa: E402
from deniable.analysis.small_areas import small_areas  # noqa: E402

BETA = (-1.0, 0.8)
COIN = (0.75, 0.25)


def tau_for(icc: float) -> float:
    return math.sqrt(icc * math.pi**2 / 3 / (1 - icc))


def survey(rng, groups: int, size: int, tau: float) -> GroupedReports:
    members = np.repeat(np.arange(groups), size)
    exog = np.column_stack([np.ones(len(members)), rng.normal(size=len(members))])
    truth = rng.random(len(members)) < expit(exog @ np.array(BETA) + rng.normal(0, tau, groups)[members])
    p, q = COIN
    yes = np.where(truth, rng.random(len(members)) < p, rng.random(len(members)) < q)
    return GroupedReports(yes.astype(float), exog, members, p, q)


def fits(surveys: int, rng) -> None:
    error = math.sqrt(0.95 * 0.05 / surveys)
    print(f"{'groups':>6} {'size':>5} {'ICC':>5} {'τ':>5}  {'β0':>6} {'β1':>6} {'τ':>6}  {'certified':>9}  {'s/fit':>6}"
          f"   (coverage of 95% intervals; Monte Carlo error ±{error:.3f})")
    pooled, fitted = np.zeros(3), 0
    for groups in (20, 60, 200):
        for size in (5, 25, 100):
            if groups * size > 6000:
                continue
            for icc in (0.05, 0.3):
                tau = tau_for(icc)
                covered = np.zeros(3)
                certified = 0
                start = time.process_time()
                for _ in range(surveys):
                    fit = fit_mixed(survey(rng, groups, size, tau), ["Intercept", "x"],
                                    [str(g) for g in range(groups)])
                    fixed = fit.fixed
                    covered[0] += fixed.at["Intercept", "ci_low"] <= BETA[0] <= fixed.at["Intercept", "ci_high"]
                    covered[1] += fixed.at["x", "ci_low"] <= BETA[1] <= fixed.at["x", "ci_high"]
                    covered[2] += fit.tau_ci[0] <= tau <= fit.tau_ci[1]
                    certified += fit.converged
                seconds = (time.process_time() - start) / surveys
                shares = covered / surveys
                pooled += covered
                fitted += surveys
                print(f"{groups:>6} {size:>5} {icc:>5.2f} {tau:>5.2f}  {shares[0]:>6.3f} {shares[1]:>6.3f} "
                      f"{shares[2]:>6.3f}  {certified:>4}/{surveys:<4}  {seconds:>6.2f}", flush=True)
    shares = pooled / fitted
    print(f"pooled over {fitted} surveys: β0 {shares[0]:.3f}, β1 {shares[1]:.3f}, τ {shares[2]:.3f} "
          f"(Monte Carlo error ±{math.sqrt(0.95 * 0.05 / fitted):.3f})")


DISTRICTS, REACHED, PEOPLE, AREA_ICC = 60, 45, 2000, 0.15
SIZES = ((3, 10), (11, 40), (41, 200))  # respondents per reached district, by class


def areas(surveys: int, rng) -> None:
    tau = tau_for(AREA_ICC)
    beta = np.array(BETA)
    share_of_kind = rng.uniform(0.2, 0.8, DISTRICTS)  # the covariate's distribution, fixed across surveys
    names = [f"d{j:02d}" for j in range(DISTRICTS)]
    population = pd.DataFrame({"district": np.repeat(names, 2), "x": np.tile([0.0, 1.0], DISTRICTS),
                               "count": np.column_stack([PEOPLE * (1 - share_of_kind),
                                                         PEOPLE * share_of_kind]).round().ravel()})
    classes = [f"{low}-{high}" for low, high in SIZES] + ["none"]
    covered = {name: 0 for name in classes}
    seen = {name: 0 for name in classes}
    model_error = {name: 0.0 for name in classes}
    direct_error = {name: 0.0 for name in classes}
    start = time.process_time()
    for _ in range(surveys):
        effects = rng.normal(0, tau, DISTRICTS)
        cells = population["count"].to_numpy().reshape(DISTRICTS, 2)
        truth = (cells[:, 0] * expit(beta[0] + effects) + cells[:, 1] * expit(beta.sum() + effects)) / cells.sum(axis=1)
        reached = rng.permutation(DISTRICTS)[:REACHED]
        size_class = rng.integers(0, len(SIZES), REACHED)
        sizes = np.array([rng.integers(SIZES[c][0], SIZES[c][1] + 1) for c in size_class])
        members = np.repeat(np.arange(REACHED), sizes)
        x = (rng.random(len(members)) < share_of_kind[reached][members]).astype(float)
        true_yes = rng.random(len(members)) < expit(beta[0] + beta[1] * x + effects[reached][members])
        p, q = COIN
        yes = np.where(true_yes, rng.random(len(members)) < p, rng.random(len(members)) < q)
        frame = pd.DataFrame({"x": x})
        exog = patsy.dmatrix("x", frame, return_type="dataframe")
        order = np.argsort([names[j] for j in reached])  # the fit's groups in the names' order
        codes = np.argsort(order)[members]
        fit = fit_mixed(GroupedReports(yes.astype(float), exog.to_numpy(), codes, p, q), list(exog.columns),
                        [names[j] for j in reached[order]], group="district")
        table = small_areas(dataclasses.replace(fit, design_info=exog.design_info), population).table
        size_of = dict(zip((names[j] for j in reached), (classes[c] for c in size_class)))
        for j, name in enumerate(names):
            row = table.loc[name]
            kind = size_of.get(name, "none")
            seen[kind] += 1
            covered[kind] += row["ci_low"] <= truth[j] <= row["ci_high"]
            model_error[kind] += (row["estimate"] - truth[j]) ** 2
            direct_error[kind] += (row["direct"] - truth[j]) ** 2 if kind != "none" else math.nan
    seconds = (time.process_time() - start) / surveys
    print(f"{surveys} surveys of {DISTRICTS} districts (ICC {AREA_ICC}, τ {tau:.3f}); {seconds:.2f} s CPU a survey")
    print(f"{'respondents':>11} {'districts':>9} {'coverage':>8} {'±MC':>6} {'RMSE model':>10} {'RMSE direct':>11}")
    for name in classes:
        share = covered[name] / seen[name]
        print(f"{name:>11} {seen[name]:>9} {share:>8.3f} {math.sqrt(0.95 * 0.05 / seen[name]):>6.3f} "
              f"{math.sqrt(model_error[name] / seen[name]):>10.4f} {math.sqrt(direct_error[name] / seen[name]):>11.4f}")


def crossed(surveys: int, rng) -> None:
    sds = {"school": 0.8, "district": 0.5}
    covered, estimates = np.zeros(4), np.zeros(4)
    certified = 0
    start = time.process_time()
    for _ in range(surveys):
        n = 1200
        school, district = rng.integers(0, 30, n), rng.integers(0, 12, n)
        x = rng.normal(size=n)
        truth = rng.random(n) < expit(BETA[0] + BETA[1] * x + rng.normal(0, sds["school"], 30)[school]
                                      + rng.normal(0, sds["district"], 12)[district])
        p, q = COIN
        yes = np.where(truth, rng.random(n) < p, rng.random(n) < q).astype(float)
        coded = [pd.factorize(codes, sort=True) for codes in (school, district)]
        fit = fit_mixed(CrossedReports(yes, np.column_stack([np.ones(n), x]), [c for c, _ in coded], p, q),
                        ["Intercept", "x"], [[str(v) for v in names] for _, names in coded], group=list(sds))
        fixed, components = fit.fixed, fit.components
        covered[0] += fixed.at["Intercept", "ci_low"] <= BETA[0] <= fixed.at["Intercept", "ci_high"]
        covered[1] += fixed.at["x", "ci_low"] <= BETA[1] <= fixed.at["x", "ci_high"]
        for i, (factor, sd) in enumerate(sds.items()):
            covered[2 + i] += components.at[factor, "ci_low"] <= sd <= components.at[factor, "ci_high"]
        certified += fit.converged
        estimates += [*fixed["estimate"], *components["sd"]]
    shares, means = covered / surveys, estimates / surveys
    print(f"crossed, {surveys} surveys ({(time.process_time() - start) / surveys:.2f} s CPU a fit; certified "
          f"{certified}): coverage β0 {shares[0]:.3f}, β1 {shares[1]:.3f}, sd(school) {shares[2]:.3f}, sd(district) "
          f"{shares[3]:.3f} (Monte Carlo error ±{math.sqrt(0.95 * 0.05 / surveys):.3f}); mean estimates "
          f"{means[0]:.3f}, {means[1]:.3f}, {means[2]:.3f}, {means[3]:.3f} (truth {BETA[0]}, {BETA[1]}, "
          f"{sds['school']}, {sds['district']})")


def predictor(surveys: int, rng) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.analysis import simulated_predictor as simulated

    b0, b1, b2 = simulated.TRUE["linear"]
    truth = {"Intercept": b0, "dodged[yes]": b1, "age": b2}
    covered = dict.fromkeys([*truth, "sd(psu)"], 0)
    certified = 0
    start = time.process_time()
    for _ in range(surveys):
        fit = mixed("trust ~ dodged + age + (1 | psu)", simulated.loaded(simulated.survey(rng, n=1600, clusters=40)))
        for term, value in truth.items():
            covered[term] += fit.fixed.at[term, "ci_low"] <= value <= fit.fixed.at[term, "ci_high"]
        covered["sd(psu)"] += fit.tau_ci[0] <= 4 <= fit.tau_ci[1]
        certified += fit.converged
    print(f"predictor, {surveys} surveys ({(time.process_time() - start) / surveys:.2f} s CPU a fit; certified "
          f"{certified}): " + ", ".join(f"{term} {count / surveys:.3f}" for term, count in covered.items())
          + f" (Monte Carlo error ±{math.sqrt(0.95 * 0.05 / surveys):.3f})")


if __name__ == "__main__":
    part = sys.argv[1] if len(sys.argv) > 1 else "fits"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else {"fits": 40, "areas": 300}.get(part, 100)
    parts = {"fits": fits, "areas": areas, "crossed": crossed, "predictor": predictor}
    parts[part](count, np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 1))
