"""A repeated survey's figure pooled over its waves: the estimate of every report together, with a standard error, its
intervals and a fit test that hold when one person's memoized reports in several waves are correlated. The default
estimate of a repeated survey, and each subgroup's (`groups.subgroups`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from deniable.client.reports import WAVES

from . import estimators as est
from . import fit
from .counting import is_missing, key, randomized_report, report_positions, rounded_counts
from .from_counts import estimate_counts
from .precision import scores
from .results import MeanEstimate, deferred


def pooled_over_waves(loaded, question_id: str, pooled, level: float, method, simultaneous: bool,
                      wave_counts: dict | None = None, values: bool = False):
    """A repeated survey's estimate over all its waves, with a standard error that holds under memoization. The pooled
    counts treat every report as another person's; a person who answers in several waves sends correlated reports
    (the same permanent one, re-randomized), so the naive SE was too small (over 100 simulated panels: stated 0.0164,
    real spread 0.0216, the 95% interval covering 85%). The pooled share is Σ_w (n_w/N)·share_w, whose SE for any
    correlation between the waves is at most Σ_w (n_w/N)·SE_w (Cauchy-Schwarz; the reports link no one's waves, so the
    correlation cannot be estimated): that bound is the SE shown, and the intervals are the usual ones at the
    effective n that widens them by the same factor. The fit test is each wave's own (`fit.over_waves`). (A
    design-based figure bounds its sample's covariance instead: `weighted.panel_sample`.)

    ``wave_counts``: {wave: the reports' counts} behind ``pooled`` (a subgroup's, `wave_counts_by`); by default every
    respondent's, wave by wave. ``pooled``'s own fit test is not read: its fit is tested here, wave by wave, when the
    result's `EstimateResult.fit` is read."""
    question = loaded.question(question_id)
    if wave_counts is None:
        wave_counts = {wave: loaded.question_counts(question_id, WAVES, wave) for wave in loaded.waves}
    # Each wave as `waves.by_wave` estimates it (the same call as each of `groups.subgroups`' levels).
    waves = {wave: estimate_counts(question.mechanism, counts, level, method, question_id, scores=scores(question),
                                   bins=question.bins, values=values)
             for wave, counts in wave_counts.items() if np.sum(counts) > 0}
    tested = deferred(_tested_by_wave, waves)

    def refit(level, method, simultaneous):
        return pooled_over_waves(loaded, question_id, pooled.refit(level, method, simultaneous), level, method,
                                 simultaneous, wave_counts, values)

    if len(waves) < 2:  # one wave's reports: nothing to bound; its test is the pooled counts' own
        return dataclasses.replace(pooled, fit_source=tested, refit=refit)
    total = sum(result.n for result in waves.values())
    bound = {column: sum(result.n / total * result.table[column] for result in waves.values())
             for column in ("se", "unbiased_se")}
    # The shares' intervals widen by the largest ratio of the bound to the independent-reports SE among the positive
    # shares, the mean's by its own. A share the fit holds at 0 has a naive SE near 0 and a bound from waves that do not
    # hold it there: on a 0..100 grid its ratio reached 15 (0..1000: 117) where the others' stay below 1.4, and took
    # the mean's interval to the whole grid.
    naive = pooled.table["se"]
    ratios = (bound["se"] / naive)[(naive > 0) & (pooled.table["estimate"] > 0)]
    factor = max(float(ratios.max()) if len(ratios) else 1.0, 1.0)
    counts = np.asarray(pooled.counts)
    effective = rounded_counts(counts / counts.sum(), counts.sum() / factor**2)
    wide = estimate_counts(pooled.mechanism, effective, level, method, question_id, simultaneous, scores=pooled.scores,
                           bins=question.bins, values=values)
    table = pooled.table.copy()
    table["se"], table["unbiased_se"] = bound["se"], bound["unbiased_se"]
    table["ci_low"] = np.minimum(wide.table["ci_low"].to_numpy(), table["estimate"].to_numpy())
    table["ci_high"] = np.maximum(wide.table["ci_high"].to_numpy(), table["estimate"].to_numpy())
    quantiles = pooled.quantiles
    if quantiles is not None and wide.quantiles is not None:  # a wide number's: the effective n's intervals, holding the pooled estimate
        quantiles = quantiles.assign(ci_low=np.minimum(wide.quantiles["ci_low"], quantiles["estimate"]),
                                     ci_high=np.maximum(wide.quantiles["ci_high"], quantiles["estimate"]))
    mean, widened = pooled.mean, ""
    if mean is not None:
        # The mean's interval: the independent-reports one widened about the estimate by the mean's own ratio (an
        # interval at an effective n of rounded counts centres elsewhere on a long grid, whose counts are mostly 0 or 1).
        means = {wave: r.mean for wave, r in waves.items() if r.mean is not None}
        assert len(means) == len(waves)  # the same question in every wave: each has its mean
        se = sum(waves[wave].n / total * wave_mean.se for wave, wave_mean in means.items())
        stretch = max(se / mean.se, 1.0) if mean.se > 0 else 1.0
        scored = pooled.scores if pooled.scores is not None else np.array(pooled.mechanism.answers, dtype=float)
        low = max(mean.estimate - stretch * (mean.estimate - mean.ci.low), float(np.min(scored)))
        high = min(mean.estimate + stretch * (mean.ci.high - mean.estimate), float(np.max(scored)))
        mean = MeanEstimate(mean.estimate, se, type(mean.ci)(low, high), level, mean.method, mean.unbiased,
                            sum(waves[wave].n / total * wave_mean.unbiased_se for wave, wave_mean in means.items()))
        widened = f" (the mean's {stretch:.2f}×)"
    note = (f"pooled over {len(waves)} waves of a panel: one person's memoized reports in several waves are "
            "correlated, so the standard error is the bound Σ (n_wave/N)·SE_wave, valid whatever the correlation, and "
            f"the intervals are {factor:.2f}× the independent-reports ones{widened}; estimate wave by wave (--by-wave) "
            "for each wave's own figure")
    return dataclasses.replace(pooled, table=table, mean=mean, fit_source=tested, remarks=(note, *pooled.remarks),
                               refit=refit, quantiles=quantiles,
                               covariance_source=None if pooled.covariance_source is None
                               else est.ScaledCovariance(pooled.covariance_source, factor**2))


def _tested_by_wave(waves: dict):
    """The pooled estimate's fit test: each wave's own, the smallest p Bonferroni-corrected (`fit.over_waves`)."""
    return fit.over_waves({label: result.fit for label, result in waves.items()})


def wave_counts_by(loaded, question_id: str, by: str) -> tuple[dict, dict]:
    """({key of a level of ``by``: {wave: counts of ``question_id``'s reports among its respondents, in report order}},
    the same of a split ballot's direct answers, in answer order; empty without one): what each subgroup of a repeated
    survey is bounded by. Read from the per-response frame, once (the stored counts are grouped by one question at a
    time); the reports of a split ballot's randomized arm only, as `LoadedSurvey.question_counts` and `direct_counts`."""
    question = loaded.question(question_id)
    frame = loaded.design_frame(question_id, [by, WAVES])
    reports = frame[question_id]
    levels = frame[by].map(lambda v: None if is_missing(v) else key(v)).to_numpy()
    waves = frame[WAVES].to_numpy()
    split = question.split_ballot
    counted = _by_level_and_wave(levels, waves, report_positions(
        question.mechanism, (reports if split is None else reports.map(lambda v: randomized_report(split, v))).tolist()),
        len(question.mechanism.reports))
    if split is None:
        return counted, {}
    index = {key(answer): position for position, answer in enumerate(question.mechanism.answers)}
    arms = [None if is_missing(value) else split.unwrap(value) for value in reports]
    direct = np.array([index[key(arm[1])] if arm is not None and arm[0] == "direct" else -1 for arm in arms],
                      dtype=np.int64)
    return counted, _by_level_and_wave(levels, waves, direct, len(index))


def _by_level_and_wave(levels: np.ndarray, waves: np.ndarray, positions: np.ndarray, size: int) -> dict:
    """{level: {wave: counts of the positions (≥ 0) over ``size``}}."""
    table = pd.DataFrame({"level": levels, "wave": waves, "report": positions})
    table = table[(table["report"] >= 0) & table["level"].notna() & table["wave"].notna()]
    counted: dict = {}
    for (level, wave), part in table.groupby(["level", "wave"], sort=False):
        counted.setdefault(level, {})[wave] = np.bincount(part["report"].to_numpy(), minlength=size)
    return counted
