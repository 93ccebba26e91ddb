"""The split ballot's comparison: the share of "yes" asked directly, through the design, and their difference.

The classic validation of a randomized-response design ("more is better", Lensvelt-Mulders et al. 2005): for
a behaviour people tend to hide, a design that earns their trust yields a *higher* share of "yes" than asking
directly. Both arms are random halves (or shares) of the same respondents, drawn by the device independently of
every answer, so they are independent samples of one population.

* direct arm: the plain share k/n, its binomial SE, a Wilson interval (it contains k/n, and behaves at 0 and n);
* randomized arm: the design's own estimate of "yes" (the row `estimate` shows, with its SE and interval);
* difference, randomized − direct: SE from the two independent SEs, a Wald interval, and the p-value of the
  one-sided test that the randomized share is higher (H0: randomized ≤ direct), z = difference / SE.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import distributions

#: The assumption the one-sided test rests on, said wherever its p-value is shown.
ASSUMPTION = ("the one-sided test assumes 'more is better': respondents hide 'yes', so a design they trust gives a "
              "higher share of 'yes' than asking directly")


def comparison(result, direct_counts, level: float, direct_waves: list | None = None) -> pd.DataFrame:
    """Rows ``direct``, ``randomized``, ``difference`` with columns estimate, se, ci_low, ci_high, n and p_value
    (the difference row's one-sided p). ``result``: the randomized arm's `EstimateResult`; ``direct_counts``:
    the direct arm's counts of yes and no.

    ``direct_waves``: a panel's direct counts wave by wave, when ``direct_counts`` pools them (and ``result`` is
    bounded over the waves, `pooled`). A person keeps their arm in every wave and answers it alike, so the direct share's
    SE is the bound Σ_w (n_w/N)·SE_w, valid whatever the correlation, and its Wilson interval is taken at the effective
    n that matches it; the arms are still different people, independent."""
    direct_counts = np.asarray(direct_counts, dtype=np.int64)
    yes, n_direct = int(direct_counts[0]), int(direct_counts.sum())
    z = distributions.norm_isf((1 - level) / 2)
    if n_direct:
        share = yes / n_direct
        direct_se = math.sqrt(share * (1 - share) / n_direct)
        effective = n_direct
        waves = [np.asarray(counts, dtype=float) for counts in direct_waves or [] if np.sum(counts) > 0]
        if len(waves) > 1:
            bound = sum(c.sum() / n_direct * math.sqrt(c[0] / c.sum() * (1 - c[0] / c.sum()) / c.sum()) for c in waves)
            if bound > direct_se:
                effective = n_direct * (direct_se / bound) ** 2 if direct_se > 0 else n_direct
                direct_se = bound
        # Wilson's score interval, as statsmodels' proportion_confint(method="wilson") writes it.
        denominator = 1 + z * z / effective
        center = (share + z * z / (2 * effective)) / denominator
        half = z * math.sqrt(share * (1 - share) / effective + z * z / (4 * effective**2)) / denominator
        low, high = center - half, center + half
        direct_low, direct_high = max(min(low, share), 0.0), min(max(high, share), 1.0)  # rounding at 0 and n
    else:
        share = direct_se = direct_low = direct_high = math.nan
    row = result.table.loc["yes"]
    randomized = float(row["estimate"])
    randomized_se = float(row["se"])
    difference = randomized - share
    difference_se = math.hypot(randomized_se, direct_se)
    if math.isnan(difference):
        p_value = math.nan
    elif difference_se > 0:
        p_value = float(distributions.norm_sf(difference / difference_se))
    else:
        p_value = 0.0 if difference > 0 else 1.0
    rows = {
        "direct": (share, direct_se, direct_low, direct_high, n_direct, math.nan),
        "randomized": (randomized, randomized_se, float(row["ci_low"]), float(row["ci_high"]), result.n, math.nan),
        "difference": (difference, difference_se, max(difference - z * difference_se, -1.0),
                       min(difference + z * difference_se, 1.0), n_direct + result.n, p_value),
    }
    table = pd.DataFrame.from_dict(rows, orient="index",
                                   columns=["estimate", "se", "ci_low", "ci_high", "n", "p_value"])
    table.index.name = "arm"
    table["n"] = table["n"].astype(int)
    table.attrs.update({"level": level, "answer": "yes", "test": "one-sided: randomized > direct",
                        "assumption": ASSUMPTION})
    return table


def comparison_lines(table: pd.DataFrame, design: str) -> list[str]:
    """The comparison in the lines a summary, the CLI and the dashboard print."""
    direct, randomized, difference = (table.loc[arm] for arm in ("direct", "randomized", "difference"))
    level = table.attrs["level"]
    if direct["n"] == 0:
        return ["Split ballot: no direct-arm reports yet, so nothing to compare"]
    lines = [f"Split ballot ('yes'): asked directly {direct['estimate']:.4f} (n = {table.at['direct', 'n']:.0f}), "
             f"through {design} {randomized['estimate']:.4f} (n = {table.at['randomized', 'n']:.0f}); "
             f"difference {difference['estimate']:+.4f} (SE {difference['se']:.4f}), {level:.0%} CI "
             f"[{difference['ci_low']:+.4f}, {difference['ci_high']:+.4f}], one-sided p = {difference['p_value']:.3g}",
             f"Split ballot: {ASSUMPTION}"]
    if design == "cheating_detection":
        lines.append("Split ballot: through cheating detection the 'yes' row is honest 'yes' only; cheaters may hold "
                     "'yes' too, so it is a lower bound on the share")
    return lines
