"""Coverage of the multilevel fit of a randomized answer (`analysis.mixed`) over simulated surveys with known group
effects: how often the 95% intervals of the fixed effects and of the random intercepts' sd τ hold the truth, per cell
of a grid of the number of groups, the respondents per group and the latent intraclass correlation
(ICC = τ²/(τ² + π²/3)); every report randomized by forced response (truth 1/2, yes 1/4, no 1/4).

    python scripts/mixed_coverage.py [surveys per cell, default 40] [seed, default 1]

Each cell prints its coverage with the binomial Monte Carlo error (√(0.95·0.05/surveys)). Cells: 20, 60 and 200
groups; 5, 25 and 100 respondents per group (capped at 6,000 respondents a survey); ICC 0.05 and 0.3.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import expit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deniable.analysis.mixed import fit_mixed  # noqa: E402
from deniable.analysis.mixed_likelihood import GroupedReports  # noqa: E402

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


def main():
    surveys = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    error = math.sqrt(0.95 * 0.05 / surveys)
    print(f"{'groups':>6} {'size':>5} {'ICC':>5} {'τ':>5}  {'β0':>6} {'β1':>6} {'τ':>6}  {'certified':>9}  {'s/fit':>6}"
          f"   (coverage of 95% intervals; Monte Carlo error ±{error:.3f})")
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
                print(f"{groups:>6} {size:>5} {icc:>5.2f} {tau:>5.2f}  {shares[0]:>6.3f} {shares[1]:>6.3f} "
                      f"{shares[2]:>6.3f}  {certified:>4}/{surveys:<4}  {seconds:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
