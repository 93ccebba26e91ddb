"""Design-based estimates: `estimate(data, question, design=SampleDesign(...))` and its subgroups.

The estimate is the certified maximum of the weighted pseudo-likelihood (the usual estimator, fitted to the
weighted report frequencies); its covariance is the linearization J·V(λ̂)·Jᵀ of `sample_design`, so standard errors
account for weights, strata, clusters and raking. Intervals are the usual ones (profile likelihood, or
Clopper-Pearson for two answers) computed at the effective sample size n/deff, with deff the reports' mean design
effect and the degrees of freedom of the design (Korn and Graubard's effective n, as R's ``svyciprop(method =
"beta")``): they keep to [0, 1], hold at the faces of the simplex where a Wald interval fails, and always contain
the estimate. The fit test is the plain one of the respondents' own reports (`fit.test_counts`): whether they were
honestly randomized does not depend on how the respondents were sampled.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from deniable.client.compliance import GroupedMechanism
from deniable.client.mechanisms import UnaryMechanism
from deniable.client.reports import WAVES

from . import channels, compliance, distributions, fit, likelihood, ranges
from . import estimators as est
from .counting import is_missing, key, randomized_report, report_positions, rounded_counts
from .errors import AnalysisError, DesignNotSupported
from .from_counts import binary_share, estimate_counts, named_answers
from .precision import scores
from .results import MeanEstimate, deferred
from .sample_design import SampleDesign, design_effect, fit_jacobian, free_jacobian
from .splitballot import ASSUMPTION


def own_scale(along: np.ndarray, lam: np.ndarray, n: float, design_variance: float, deff: float) -> float:
    """√(a figure's own design effect / the reports' mean one): what its effective-n interval is widened (or narrowed)
    by. ``along``: the figure's derivative in the report frequencies. The mean design effect over every report
    direction is diluted by the channel's noise directions, whose design effect is near 1: 1.20 where a 0..6
    number's mean had 1.72, and its intervals covered 0.908 of 120 two-stage samples (0.967 scaled)."""
    simple = (along * along @ lam - (along @ lam) ** 2) / n  # its variance were the sample simple random
    if simple <= 0 or deff <= 0 or design_variance <= 0:
        return 1.0
    return math.sqrt(design_variance / simple / deff)


def scaled_interval(estimate, low, high, scale, floor: float, top: float):
    """(low, high) moved away from (or toward) ``estimate`` by ``scale``, keeping its asymmetry, within [floor, top]
    (numbers, or arrays of them)."""
    low = np.maximum(estimate - (estimate - np.minimum(low, estimate)) * scale, floor)
    high = np.minimum(estimate + (np.maximum(high, estimate) - estimate) * scale, top)
    return low, high


def korn_graubard(rate: float, variance: float, n: int, df: float, level: float) -> tuple[float, float] | None:
    """Korn and Graubard's interval of a rate from a complex sample, as R's ``svyciprop(method = "beta")`` computes it:
    Clopper–Pearson's beta quantiles at the effective n = rate(1 − rate)/variance, times (t_{n−1}/t_df)², and the
    effective count n_eff·rate, not rounded. None where the rate has no spread to read (0, 1, or no variance)."""
    if not 0 < rate < 1 or not variance > 0:
        return None
    alpha = 1 - level
    effective = rate * (1 - rate) / variance
    if df is not None and np.isfinite(df) and n > 1:
        effective *= (distributions.t_isf(alpha / 2, n - 1) / distributions.t_isf(alpha / 2, df)) ** 2
    count = effective * rate
    return (float(distributions.beta_ppf(alpha / 2, count, effective - count + 1)),
            float(distributions.beta_ppf(1 - alpha / 2, count + 1, effective - count)))


def _korn_graubard_rows(table, mechanism, lam, variances, n, df, level):
    """A two-answer question's rows at Korn and Graubard's interval of its first report's rate, mapped through the
    design's channel (for a public question that is R's ``svyciprop(method = "beta")`` itself). Where the rate's
    interval maps outside [0, 1] (a rate the design cannot produce), the effective-n interval stays."""
    found = korn_graubard(float(lam[0]), float(variances[0]), n, df, level)
    if found is None:
        return
    channel = channels.binary_channel(mechanism)
    ends = channel.prevalence(np.array(found))
    low, high = float(np.clip(ends.min(), 0, 1)), float(np.clip(ends.max(), 0, 1))
    if high <= 0 or low >= 1:
        return
    first, second = table.index[:2]
    estimate = float(table.loc[first, "estimate"])
    low, high = min(low, estimate), max(high, estimate)
    table.loc[first, ["ci_low", "ci_high"]] = low, high
    table.loc[second, ["ci_low", "ci_high"]] = 1 - high, 1 - low


def design_estimate(loaded, question_id: str, design: SampleDesign, level: float = 0.95, method: str | None = None,
                    simultaneous: bool = False, by: str | None = None, group=None, values: bool = False):
    """``question_id``'s design-based estimate (among the respondents with ``by`` = ``group``: a domain, whose
    standard error is the domain's, every PSU kept). A panel's waves pooled by a design without clusters: every
    covariance bounded over the waves (`panel_sample`)."""
    if isinstance(loaded.question(question_id).mechanism, UnaryMechanism):
        return _design_multi_select(loaded, question_id, design, level, method, simultaneous, by, group)
    question, mechanism, frame, sample, positions = _prepared(loaded, question_id, design, by)
    notes = [] if sample.waves is None else [PANEL_BOUND]
    domain = None
    if by is not None:
        domain = (frame[by].map(lambda v: None if is_missing(v) else key(v)) == key(group)).to_numpy()
    lam, report_spread, n, _ = sample.report_spread(positions, len(mechanism.reports), domain)
    z = distributions.norm_isf((1 - level) / 2)
    t = distributions.t_isf((1 - level) / 2, sample.df)
    deff = design_effect(lam, report_spread.report_variances(), n)
    effective_n = max(n / deff * (z / t) ** 2, 1.0)
    question_scores = scores(question)
    counts = rounded_counts(lam, effective_n)
    spread = estimate_counts(mechanism, counts, level, method, question_id, simultaneous, scores=question_scores,
                             bins=question.bins, values=values)
    wide = spread.shares is not None  # a wide number's bins: its rows are ranges of values, linearized below

    grouped = isinstance(mechanism, GroupedMechanism)
    q = compliance.class_matrix(mechanism) if grouped else channels.channel_matrix(mechanism)
    # The estimate of record: the certified maximum of the weighted pseudo-likelihood Σ_r λ̂_r log (Qπ)_r. Every
    # spread below is a functional's of λ̂ (`sample_design.ReportSpread`): the fit's Jacobian on its positive answers, the
    # unbiased estimate's left inverse a block of answers at a time; never the R × R covariance of λ̂.
    theta, certificate = likelihood.certified_maximum(q, lam * n)
    free, jacobian = free_jacobian(q, theta, lam)
    unbiased, left_rows = _unbiased_rows(q, lam)
    base = per_value_table(spread, mechanism) if wide else spread.table
    table = base.copy()
    if grouped:  # the table's rows are linear in the class shares, but for the lie detector's "truthful"
        rows = compliance._linear_rows(mechanism)
        functionals = np.array([row for _, row in rows])
        labels = [label for label, _ in rows]
        table.loc[labels, "estimate"] = functionals @ theta
        table.loc[labels, "unbiased"] = functionals @ unbiased
        covariance = report_spread.covariance(functionals[:, free] @ jacobian)
        design_variances = np.diag(covariance)
        unbiased_variances = report_spread.covariance(functionals @ left_rows(np.arange(q.shape[1])), diagonal=True)
        if "truthful" in table.index:
            table.loc["truthful", "estimate"] = theta[0] / (theta[0] + theta[1]) if theta[0] + theta[1] > 0 else 0.0
            notes.append("the carriers' truthfulness keeps the standard error at the effective n (it is not linear in "
                         "the class shares)")
    else:
        labels = list(table.index)
        table["estimate"], table["unbiased"] = theta, unbiased
        covariance = est.SupportedCovariance(q.shape[1], free, report_spread.covariance(jacobian))
        design_variances = covariance.variances()
        unbiased_variances = report_spread.variances(left_rows, q.shape[1])
    design_se = np.sqrt(np.clip(design_variances, 0, None))
    shares = table.loc[labels, "estimate"].to_numpy(dtype=float)
    at_face = ((shares <= 1e-12) | (shares >= 1 - 1e-12)) & (base.loc[labels, "se"].to_numpy() > 0)
    if at_face.any():  # the linearization does not move an answer held at 0 (or 1): its spread at the effective n
        design_se[at_face] = base.loc[labels, "se"].to_numpy()[at_face]
        notes.append(f"{named_answers(list(np.array(labels, dtype=object)[at_face]))}: on the boundary of the parameter "
                     "space, where the linearization is zero; the standard error shown is the one at the effective n")
    table.loc[labels, "se"] = design_se
    table.loc[labels, "unbiased_se"] = np.sqrt(np.clip(unbiased_variances, 0, None))
    # The intervals are the effective-n ones, about the same centre to within rounding: they keep the estimate inside.
    table["ci_low"] = np.minimum(table["ci_low"], table["estimate"])
    table["ci_high"] = np.maximum(table["ci_high"], table["estimate"])
    # Each linear row's interval at its own design effect (`own_scale`); an answer held at a face keeps the effective
    # n's, its linearization being zero, and so does the lie detector's truthfulness (not linear in the classes).
    # Only the answers the fit keeps move (a long grid's few): the others' derivative is zero.
    linear = ([(row, functionals[row, free] @ jacobian) for row, label in enumerate(labels) if label != "truthful"]
              if grouped else zip(free, jacobian))
    scales = np.ones(len(labels))
    for row, along in linear:
        if not at_face[row]:
            scales[row] = own_scale(along, lam, n, design_variances[row], deff)
    table.loc[labels, "ci_low"], table.loc[labels, "ci_high"] = scaled_interval(
        shares, table.loc[labels, "ci_low"].to_numpy(dtype=float), table.loc[labels, "ci_high"].to_numpy(dtype=float),
        scales, 0.0, 1.0)
    if spread.method == "clopper-pearson" and not grouped and channels.is_binary(mechanism):
        _korn_graubard_rows(table, mechanism, lam, report_spread.report_variances(), n, sample.df, level)
    if wide:
        table, quantiles = _design_ranges(spread, theta, unbiased, covariance, report_spread, left_rows, free, jacobian,
                                          lam, n, deff)
    mean = None
    if spread.mean is not None and not grouped:
        scored = question_scores if question_scores is not None else np.array(mechanism.answers, dtype=float)
        estimate = float(scored @ theta)
        design_variance = max(covariance.variance(scored), 0.0)
        scale = own_scale(scored[free] @ jacobian, lam, n, design_variance, deff)
        low, high = map(float, scaled_interval(estimate, spread.mean.ci.low, spread.mean.ci.high, scale,
                                               float(scored.min()), float(scored.max())))
        unbiased_variance = report_spread.covariance(left_rows(scored[None, :], weights=True))[0, 0]
        mean = MeanEstimate(estimate, float(np.sqrt(design_variance)),
                            type(spread.mean.ci)(low, high), level, spread.mean.method, float(scored @ unbiased),
                            float(np.sqrt(max(unbiased_variance, 0.0))))
    split_table = None
    if question.split_ballot is not None:
        functional = (functionals[labels.index("yes")] if grouped
                      else np.eye(q.shape[1])[list(mechanism.answers).index("yes")])
        split_table = _design_split_ballot(question, frame[question_id], sample, positions, domain, lam,
                                           functional[free] @ jacobian, table.loc["yes"], n, level)
        notes.append("split ballot: the arms are domains of one sample; the difference's standard error is their "
                     "joint linearization within PSUs, its test a t on the design's degrees of freedom")
    raw = np.bincount(positions[(positions >= 0) & (domain if domain is not None else True)],
                      minlength=len(mechanism.reports))
    tested = deferred(_reports_test, loaded, question_id, mechanism, frame, positions, domain)
    notes += [f"design-based: {sample.description}; {sample.n_psu:,} PSUs in {sample.n_strata:,} strata "
              f"({sample.df:,} degrees of freedom); design effect {deff:.3g}, effective n {n / deff:,.0f} of {n:,}",
              f"intervals at the effective n (Korn and Graubard); {FIT_ON_REPORTS}"]
    notes += [note for note in spread.remarks if note not in notes]
    def refit(level, method, simultaneous):
        return design_estimate(loaded, question_id, design, level, method, simultaneous, by, group, values)

    return dataclasses.replace(
        spread, counts=raw, table=table, shares=theta if wide else None, rows_of=None,
        quantiles=quantiles if wide else None, certificate=certificate, covariance_source=covariance, mean=mean,
        fit_source=tested, remarks=notes, class_shares=theta if grouped else None, split_ballot=split_table, sample=sample.description,
        design_effect=deff, effective_n=n / deff, design_df=sample.df, refit=refit)


#: What a design-based figure of a panel's pooled waves says of its covariance (`panel_sample`).
PANEL_BOUND = ("pooled over a panel's waves with no clusters that hold each person's waves: one person's memoized "
               "reports in several waves are correlated and nothing links them, so each variance is the bound "
               "(Σ SD_wave)², valid whatever the correlation (a design-based estimate's design effect and effective n "
               "include it); give clusters that hold each person's waves to count the correlation instead")


def panel_sample(loaded, design: SampleDesign, question_id: str, frame: pd.DataFrame, sample, by: str | None = None):
    """``sample`` (resolved from ``frame``, rows by response), bounded over the waves (`Sample.over_waves`) where a
    design-based figure pools a panel's waves with nothing to link a person's reports in them: more than one wave, not
    a wave's own domain (``by``), and no clusters (each response its own PSU, so a person's waves would count as
    independent; on a test panel a share's SE was 0.0405 where the bound is 0.057). With clusters, a panel's people
    are taken to be nested in them, and the linearization within PSUs counts their correlation."""
    if not (loaded.pools_waves and by != WAVES and design.clusters is None):
        return sample
    return sample.over_waves(_waves_of(loaded, question_id, frame))


def _waves_of(loaded, question_id: str, frame: pd.DataFrame) -> np.ndarray:
    """Each row's wave: the frame's own column where it holds one (`_frame`), else read beside it."""
    waves = frame[WAVES] if WAVES in frame.columns else loaded.design_frame(question_id, [WAVES])[WAVES]
    return waves.reindex(frame.index).to_numpy()


def _frame(loaded, question_id: str, design: SampleDesign, by: str | None) -> pd.DataFrame:
    """The design frame of ``question_id`` with the design's columns, ``by``'s, and a panel's waves (read once, for its
    sample's bound and its fit test)."""
    names = design.column_names() + ([by] if by is not None and by not in design.column_names() else [])
    names += [WAVES] if loaded.pools_waves and WAVES not in names else []
    return loaded.design_frame(question_id, names)


def per_value_table(result, mechanism) -> pd.DataFrame:
    """A wide number's per-value estimates and standard errors at the effective n, without intervals (the design's
    own are its bins' and its quantiles'): what the linearization below overwrites."""
    shares = result.answer_shares
    se = np.sqrt(np.clip(result.covariance_source.variances(), 0, None))
    return pd.DataFrame({"estimate": shares, "se": se, "ci_low": shares, "ci_high": shares, "unbiased": np.nan,
                         "unbiased_se": np.nan}, index=pd.Index(mechanism.answers, name="value"))


def _design_ranges(spread, theta, unbiased, covariance, report_spread, left_rows, free, jacobian, lam, n, deff):
    """A wide number's bins and quartiles with the design: each bin's share of the weighted fit, its linearized
    standard error, its effective-n interval at its own design effect (`own_scale`, as the mean's); each quartile at
    the weighted fit, its effective-n interval widened to hold it."""
    k = len(theta)
    rows = []
    for label, (_, _, low_n, high_n, _, _) in spread.table.iterrows():
        indicator = np.zeros(k)
        indicator[spread.bin_members[label]] = 1.0
        share = float(indicator @ theta)
        variance = max(covariance.variance(indicator), 0.0)
        scale = own_scale(indicator[free] @ jacobian, lam, n, variance, deff)
        low, high = map(float, scaled_interval(share, low_n, high_n, scale, 0.0, 1.0))
        unbiased_variance = report_spread.covariance(left_rows(indicator[None, :], weights=True))[0, 0]
        rows.append((share, math.sqrt(variance), low, high, float(indicator @ unbiased),
                     math.sqrt(max(unbiased_variance, 0.0))))
    table = pd.DataFrame(rows, columns=spread.table.columns, index=spread.table.index)
    values = np.array(spread.mechanism.answers, dtype=float)
    cumulative = np.cumsum(theta)
    quantiles = spread.quantiles.copy()
    for p in quantiles.index:
        at = values[min(ranges.quantile_index(cumulative, p), k - 1)]
        quantiles.loc[p] = at, min(quantiles.at[p, "ci_low"], at), max(quantiles.at[p, "ci_high"], at)
    return table, quantiles


def _unbiased_rows(q, lam: np.ndarray):
    """(The unbiased estimate L·λ̂, and ``rows(answers)``: L's rows for those answers, answers × reports; with
    ``weights=True``, given functionals g over the answers instead, the rows gᵀL.) A number's structure gives them
    from its own left inverse (`channels.FoldedGeometric.unbiased_weights`), never L whole (0..10,000: 2.4 GB)."""
    if isinstance(q, channels.FoldedGeometric):
        structure = q

        def structure_rows(answers, weights=False):
            if weights:
                return structure.unbiased_weights(answers)
            indicators = np.zeros((len(answers), structure.shape[1]))  # a block's own rows: np.eye of 10,001 answers is 800 MB
            indicators[np.arange(len(answers)), answers] = 1.0
            return structure.unbiased_weights(indicators)
        return structure.unbiased(lam), structure_rows
    inverse = channels.left_inverse(q)

    def rows(answers, weights=False):
        return answers @ inverse if weights else inverse[answers]
    return inverse @ lam, rows


def _design_split_ballot(question, values, sample, positions, domain, lam, along, randomized_row, n: int,
                         level: float) -> pd.DataFrame:
    """A split ballot's comparison (`splitballot.comparison`'s rows) with the design: the direct arm's weighted share
    of "yes", the randomized arm's design-based "yes" (its influence ``along`` the fit's derivative, per report), and
    their difference, whose variance is that of the difference of the two arms' influences summed within PSUs."""
    split = question.split_ballot
    arms = [None if is_missing(v) else split.unwrap(v) for v in values]
    direct = np.array([a is not None and a[0] == "direct" for a in arms]) & (domain if domain is not None else True)
    said_yes = np.array([float(a is not None and a[0] == "direct" and a[1] == "yes") for a in arms])
    w = sample.weights
    direct_total = float(w[direct].sum())
    randomized = (positions >= 0) & (domain if domain is not None else True)
    randomized_total = float(w[randomized].sum())
    influence_direct = np.zeros(len(w))
    share = np.nan
    if direct_total > 0:
        share = float(w[direct] @ said_yes[direct] / direct_total)
        influence_direct[direct] = w[direct] * (said_yes[direct] - share) / direct_total
    influence_randomized = np.zeros(len(w))
    influence_randomized[randomized] = w[randomized] * (along[positions[randomized]] - along @ lam) / randomized_total
    covariance = sample.covariance(np.column_stack([influence_direct, influence_randomized - influence_direct]))
    direct_se, difference_se = (float(np.sqrt(max(v, 0.0))) for v in np.diag(covariance))
    t = distributions.t_isf((1 - level) / 2, sample.df)
    estimate = float(randomized_row["estimate"])
    difference = estimate - share
    p_value = (float(distributions.t_sf(difference / difference_se, sample.df)) if difference_se > 0
               else math.nan if np.isnan(difference) else 0.0 if difference > 0 else 1.0)
    n_direct = int(direct.sum())
    rows = {
        "direct": (share, direct_se, max(min(share - t * direct_se, share), 0.0), min(max(share + t * direct_se, share),
                                                                                    1.0), n_direct, math.nan),
        "randomized": (estimate, float(randomized_row["se"]), float(randomized_row["ci_low"]),
                       float(randomized_row["ci_high"]), n, math.nan),
        "difference": (difference, difference_se, max(difference - t * difference_se, -1.0),
                       min(difference + t * difference_se, 1.0), n_direct + n, p_value),
    }
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "se", "ci_low", "ci_high", "n", "p_value"])
    table.index.name = "arm"
    table["n"] = table["n"].astype(int)
    table.attrs.update({"level": level, "answer": "yes", "test": "one-sided: randomized > direct",
                        "assumption": ASSUMPTION})
    return table


def _design_multi_select(loaded, question_id: str, design: SampleDesign, level: float, method, simultaneous: bool,
                         by: str | None, group):
    """A multi-select question's design-based estimate: each option is a yes/no question of its own (whether the
    randomized report holds it), through the option's bit channel; its share the certified maximum of the weighted
    pseudo-likelihood, its SE the linearization, its interval the usual one at the option's effective n."""
    question = loaded.question(question_id)
    mechanism = question.mechanism
    if question.split_ballot is not None:
        raise DesignNotSupported(f"{question_id}: a split ballot of a multi-select question has no design-based "
                                 "estimate yet", "design")
    frame = _frame(loaded, question_id, design, by)
    sample = panel_sample(loaded, design, question_id, frame, design.resolve(frame), by)
    reports = frame[question_id].tolist()
    domain = None
    if by is not None:
        domain = (frame[by].map(lambda v: None if is_missing(v) else key(v)) == key(group)).to_numpy()
    channel = channels.binary_channel(mechanism)
    q = _bit_channel(mechanism)
    each = est.per_answer_level(level, len(mechanism.options), simultaneous)
    ratio = (distributions.norm_isf((1 - each) / 2) / distributions.t_isf((1 - each) / 2, sample.df)) ** 2
    rows, certificates, effects, counted = [], [], [], 0
    for option in mechanism.options:
        positions = np.array([-1 if is_missing(r) else (0 if option in r else 1) for r in reports], dtype=np.int64)
        lam, lam_covariance, n, _ = sample.frequencies(positions, 2, domain)
        counted = n
        theta, certificate = likelihood.certified_maximum(q, lam * n)
        jacobian = fit_jacobian(q, theta, lam)
        deff = design_effect(lam, np.diag(lam_covariance), n)
        effective = max(n / deff * ratio, 1.0)
        k, rest = rounded_counts(lam, effective)
        _, spread_se, (low, high), _, _, _ = binary_share(channel, int(k), int(k + rest), each,
                                                          method or est.DEFAULT_BINARY_METHOD)
        se = float(np.sqrt(max((jacobian @ lam_covariance @ jacobian.T)[0, 0], 0.0)))
        if theta[0] <= 1e-12 or theta[0] >= 1 - 1e-12:  # on the boundary the linearization is zero
            se = spread_se
        share = float(theta[0])
        rows.append((share, se, min(low, share), max(high, share), float(channel.prevalence(lam[0])),
                     float(np.sqrt(max(lam_covariance[0, 0], 0.0))) / abs(channel.p - channel.q)))
        certificates.append(certificate)
        effects.append(deff)
    raw_positions = report_positions(mechanism, reports) if len(mechanism.reports) <= 4096 else None
    if raw_positions is not None:
        keep = (raw_positions >= 0) & (domain if domain is not None else True)
        raw = np.bincount(raw_positions[keep], minlength=len(mechanism.reports))
    else:
        raw = np.zeros(0, dtype=np.int64)
    deff = float(np.mean(effects))
    if not (len(raw) and raw.sum()):
        raise DesignNotSupported(f"{question_id}: a multi-select question of {len(mechanism.options)} options is too "
                                 "large to count by report here", "design")
    assert raw_positions is not None  # counted above, or refused
    # The other checks of the plain estimate of the respondents' own reports, and the fit test of those reports.
    plain = estimate_counts(mechanism, raw, level, method, question_id, simultaneous)
    tested = deferred(_reports_test, loaded, question_id, mechanism, frame, raw_positions, domain)
    table = pd.DataFrame(rows, columns=["estimate", "se", "ci_low", "ci_high", "unbiased", "unbiased_se"],
                         index=pd.Index(mechanism.options, name="option"))
    notes = [*([] if sample.waves is None else [PANEL_BOUND]),
             "each row is the share selecting that option (options are not exclusive)",
             f"design-based: {sample.description}; {sample.n_psu:,} PSUs in {sample.n_strata:,} strata "
             f"({sample.df:,} degrees of freedom); mean design effect over the options {deff:.3g}, effective n "
             f"{counted / deff:,.0f} of {counted:,}",
             f"each option's interval at its own effective n (Korn and Graubard); {FIT_ON_REPORTS}"]

    def refit(level, method, simultaneous):
        return design_estimate(loaded, question_id, design, level, method, simultaneous, by, group)

    return dataclasses.replace(plain, counts=raw, table=table, certificate=likelihood.Certificate.worst(certificates),
                               fit_source=tested, covariance_source=None,
                               remarks=[*notes, *(n for n in plain.remarks if n not in notes)],
                               sample=sample.description, design_effect=deff, effective_n=counted / deff,
                               design_df=sample.df, refit=refit)


def domain_difference_se(loaded, question_id: str, by: str, first, second, design: SampleDesign,
                         functional: np.ndarray) -> tuple[float, int]:
    """(standard error, degrees of freedom) of functional·θ̂ in domain ``first`` less the same in ``second``: the two
    domains share PSUs, so their estimates are correlated and the difference's variance is that of the difference
    of their influences, summed within PSUs (not the sum of two variances, which assumes independent samples).
    ``functional`` weighs the result's table rows (an answer's indicator, or the scale's values for a mean)."""
    question = loaded.question(question_id)
    option = None
    if isinstance(question.mechanism, UnaryMechanism):  # one option's share: its bit, a yes/no of its own
        option = question.mechanism.options[int(np.argmax(functional))]
        functional = np.array([1.0, 0.0])
    question, mechanism, frame, sample, positions = _prepared(loaded, question_id, design, by, option)
    grouped = isinstance(mechanism, GroupedMechanism)
    q = (_bit_channel(mechanism) if option is not None else compliance.class_matrix(mechanism) if grouped
         else channels.channel_matrix(mechanism))
    rows = np.array([row for _, row in compliance._linear_rows(mechanism)]) if grouped else np.eye(q.shape[1])
    levels = frame[by].map(lambda v: None if is_missing(v) else key(v))
    influences = []
    for group in (first, second):
        domain = (levels == key(group)).to_numpy() & (positions >= 0)
        w = np.where(domain, sample.weights, 0.0)
        total = float(w.sum())
        lam = np.bincount(positions[domain], weights=w[domain], minlength=q.shape[0]) / total
        theta, _ = likelihood.certified_maximum(q, lam * domain.sum())
        along = functional[: len(rows)] @ rows @ fit_jacobian(q, theta, lam)  # d(functional·θ̂)/dλ, per report
        influence = np.zeros(len(positions))
        influence[domain] = w[domain] * (along[positions[domain]] - along @ lam) / total
        influences.append(influence)
    variance = sample.covariance((influences[0] - influences[1])[:, None])[0, 0]
    return float(np.sqrt(max(variance, 0.0))), sample.df


def _prepared(loaded, question_id: str, design: SampleDesign, by: str | None, option=None):
    """(question, mechanism, the design frame, the resolved sample — over a panel's waves, `panel_sample` —, each
    response's report position — -1 where it has none; a split ballot's direct arm counts as none: the design's
    estimate is the randomized arm's). A multi-select question's ``option``: its bit, position 0 where the report holds
    the option, 1 where not."""
    if not isinstance(design, SampleDesign):
        raise AnalysisError(f"design: expected a SampleDesign, got {type(design).__name__}", "design")
    question = loaded.question(question_id)
    mechanism = question.mechanism
    frame = _frame(loaded, question_id, design, by)
    sample = panel_sample(loaded, design, question_id, frame, design.resolve(frame), by)
    reports = frame[question_id]
    if isinstance(mechanism, UnaryMechanism):
        positions = np.array([-1 if is_missing(r) else (0 if option in r else 1) for r in reports], dtype=np.int64)
        return question, mechanism, frame, sample, positions
    if question.split_ballot is not None:
        reports = reports.map(lambda value: randomized_report(question.split_ballot, value))
    return question, mechanism, frame, sample, report_positions(mechanism, reports.tolist())


def _bit_channel(mechanism) -> np.ndarray:
    """A multi-select option's channel: P(report holds it | holds it, does not) over (holds, does not)."""
    channel = channels.binary_channel(mechanism)
    return np.array([[channel.p, channel.q], [1 - channel.p, 1 - channel.q]])


def design_subgroups(loaded, question_id: str, by: str, design: SampleDesign, level: float = 0.95,
                     method: str | None = None, simultaneous: bool = False) -> dict:
    """{level of ``by``: the domain's design-based result}, for the levels with reports."""
    results = {}
    for group in loaded.levels(by):
        try:
            results[group] = design_estimate(loaded, question_id, design, level, method, simultaneous, by, group)
        except AnalysisError as error:
            if "no responses with a report" not in str(error):
                raise
    return results


def _reports_test(loaded, question_id: str, mechanism, frame: pd.DataFrame, positions: np.ndarray,
                  domain: np.ndarray | None):
    """The fit test of the respondents' own reports (each response's report ``positions``, -1 for none, in the rows of
    ``frame``; within the ``domain``): `fit.test_counts`, and a panel's wave by wave (`fit.over_waves`: one person's
    memoized reports in several waves are correlated)."""
    kept = (positions >= 0) & (domain if domain is not None else True)
    size = len(mechanism.reports)
    if not loaded.pools_waves:
        return fit.test_counts(mechanism, np.bincount(positions[kept], minlength=size))
    waves = _waves_of(loaded, question_id, frame)
    return fit.over_waves({wave: fit.test_counts(mechanism, np.bincount(positions[kept & (waves == wave)],
                                                                        minlength=size))
                           for wave in loaded.waves if (kept & (waves == wave)).any()})


def panel_covariance_sample(loaded, design: SampleDesign | None, question_id: str, frame: pd.DataFrame):
    """The sample whose covariance of per-response scores is the middle of a model's sandwich (`regression`,
    `predictor`): the design's, over a panel's waves (`panel_sample`); without a design, a simple random sample's
    bounded over a panel's pooled waves, or None where the data are not those (the model's own inverse information
    then). A logistic regression on a three-wave panel of people who kept their answers stated an SE of 0.094 where
    its estimates' spread was 0.178."""
    if design is not None:
        return panel_sample(loaded, design, question_id, frame, design.resolve(frame))
    simple = SampleDesign()
    bounded = panel_sample(loaded, simple, question_id, frame, simple.resolve(frame))
    return bounded if bounded.waves is not None else None


def sample_words(design: SampleDesign | None, sample) -> str:
    """What a model's result says its sample was (``sample``: `panel_covariance_sample`'s)."""
    words = "simple random sample" if design is None else sample.description
    return words if sample is None or sample.waves is None else f"{words}; {PANEL_BOUND}"


#: How a design-based estimate tests its fit (`fit.test_counts`), as its notes say.
FIT_ON_REPORTS = ("the fit test on the respondents' own reports, unweighted (honest randomization draws each report "
                  "independently given the answers, whatever the design)")
