"""The estimate of one question from its report counts: one estimator per shape of mechanism (`shape`, registered
in `ESTIMATORS`: a binomial share, the simplex of answers, independent options, a numeric grid, latent classes),
each building a finished `EstimateResult` with its fit test and notes.

The estimate of record is the certified maximum-likelihood estimate; the unbiased moment estimate stays beside it;
intervals always contain the estimate. Everything that estimates from counts calls `estimate_counts`: `estimate()`
for a question or loaded data (`estimation`), the design-based estimate's shares (`weighted`), waves and subgroups.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pandas as pd

from deniable.client.compliance import GroupedMechanism
from deniable.client.laplace import LaplaceMechanism
from deniable.client.mechanisms import UnaryMechanism

from . import blas, bootstrap, calibration, channels, compliance, distributions, fit, likelihood, ranges
from . import estimators as est
from .errors import AnalysisError
from .results import (
    CATEGORICAL_METHODS,
    COLUMNS,
    DEFAULT_CATEGORICAL_METHOD,
    MARGINAL_METHODS,
    PROFILE_GRID_LIMIT,
    EstimateResult,
    MeanEstimate,
    deferred,
)


def estimate_counts(mechanism, counts, level, method, question_id, simultaneous=False, warn=True, scores=None,
                    bins=None, values=False) -> EstimateResult:
    """``scores``: what the result's mean averages (`precision.scores`); a number's grid by default. A wide number
    (`ranges.is_wide`) is published as its mean, quartiles and bins (``bins``: the spec's lower edges, else round ones),
    its per-value rows read on request (`EstimateResult.value_rows`), or all of them in the table when ``values``;
    ``values`` on a question with no grid of values is an error. The fit test of the counts is run when the
    result's `EstimateResult.fit` (or its notes) is first read: counts that are not the reports' own (a design's or a
    panel's at an effective n) are never tested, their callers putting the reports' own test in its place (on a
    0..10,000 grid the test of such counts was 19 s of Monte Carlo).

    On one BLAS thread: the matrices here are at most a few thousand wide, where a BLAS's threads spin more
    than they compute (a k = 100 estimate took ten times the CPU with OpenBLAS's default threads). k-ary randomized
    response and public choices are worked in O(k) vector operations, no BLAS call: they skip the limit, whose setting
    and restoring cost 50 µs (an eighth of such an estimate)."""
    if values and not isinstance(mechanism, LaplaceMechanism):
        raise AnalysisError(f"values: {question_id or 'this question'} is not a number question; its rows are its "
                            "answers already (per-value rows are a number's)", "values")
    publication = (bins, values)
    if channels.symmetric_channel(mechanism) is not None:
        return _estimate_on_one_thread(mechanism, counts, level, method, question_id, simultaneous, warn, scores,
                                       publication)
    with blas.one_thread():
        return _estimate_on_one_thread(mechanism, counts, level, method, question_id, simultaneous, warn, scores,
                                       publication)


def _estimate_on_one_thread(mechanism, counts, level, method, question_id, simultaneous, warn, scores,
                            publication) -> EstimateResult:
    counts = np.asarray(counts, dtype=np.int64)
    if counts.sum() == 0:
        raise AnalysisError(f"{question_id or 'question'}: no reports to estimate from")
    if shape(mechanism) == "numeric":
        result = _grid(mechanism, counts, level, method, question_id, simultaneous, scores, publication)
    else:
        result = ESTIMATORS[shape(mechanism)](mechanism, counts, level, method, question_id, simultaneous, scores)
    lead, trail = [], []
    certificate = result.certificate
    if not certificate.converged:
        lead.append(f"NOT CERTIFIED: the maximiser stopped with KKT residual {certificate.kkt_residual:.2e} "
                    f"(tolerance {certificate.tolerance:.0e}); the estimate may not be the maximum")
        if warn:
            likelihood.warn_if_uncertified(certificate, question_id or mechanism.design, stacklevel=4)
    if certificate.unique is False:
        trail.append("the likelihood has more than one maximiser for these counts: other distributions fit the "
                     "reports exactly as well, so the estimate is one of them (the intervals cover them all)")
    averaged = None if result.mean is None else (
        scores if scores is not None else np.array(mechanism.answers, dtype=float))

    def refit(level, method, simultaneous):
        return estimate_counts(mechanism, counts, level, method, question_id, simultaneous, warn=False, scores=averaged,
                               bins=publication[0], values=publication[1])

    return dataclasses.replace(result, fit_source=deferred(fit.result_test, mechanism, counts, result), scores=averaged,
                               refit=refit, remarks=(*lead, *result.remarks, *trail))


def shape(mechanism) -> str:
    """How a mechanism is estimated, one of `designs.SHAPES` (each design names its own: `designs.Design.shape`; any
    design but a grouped one asked as a two-answer question is one share of a binomial count, "binary")."""
    if isinstance(mechanism, GroupedMechanism):
        return "grouped"
    if isinstance(mechanism, UnaryMechanism):
        return "unary"
    if isinstance(mechanism, LaplaceMechanism):
        return "numeric"
    if channels.is_binary(mechanism):
        return "binary"
    return "symmetric" if channels.symmetric_channel(mechanism) is not None else "channel"


def _compliance(mechanism, counts, level, method, question_id):
    """Cheating detection and the stochastic lie detector: latent classes of respondents (`compliance`)."""
    table, certificate, covariance, notes, test, classes = compliance.estimate_compliance(mechanism, counts, level,
                                                                                          method, question_id)
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, method or "likelihood", table,
                          certificate, covariance, remarks=notes, compliance_test=test, class_shares=classes)


def _check_method(method, methods, design):
    if method not in methods:
        raise AnalysisError(f"method must be one of {', '.join(methods)} for a {design} question, got {method!r}")


def binary_share(channel: channels.BinaryChannel, k: int, n: int, level: float, method: str):
    """(estimate, se, interval, unbiased, unbiased se, certificate) of the share behind k "yes" of n."""
    mle = est.binary_mle(channel, k, n)
    interval, _ = est.binary_interval(channel, k, n, level, method)
    unbiased = float(channel.prevalence(k / n))
    q = np.array([[channel.p, channel.q], [1 - channel.p, 1 - channel.q]])
    certificate = likelihood.certify(q, np.array([k, n - k]), np.array([mle, 1 - mle]))
    return (mle, math.sqrt(channel.unit_variance(channel.rate(mle)) / n), interval, unbiased,
            math.sqrt(channel.unit_variance(k / n) / n), certificate)


def _binary(mechanism, counts, level, method, question_id):
    """Two answers (yes/no, or a choice of two): the first answer's share from its binomial report count."""
    method = method or est.DEFAULT_BINARY_METHOD
    _check_method(method, est.BINARY_METHODS, "two-answer")
    channel = channels.binary_channel(mechanism)
    first, second = mechanism.answers
    k, n = int(counts[0]), int(counts.sum())
    value, se, (low, high), unbiased, unbiased_se, certificate = binary_share(channel, k, n, level, method)
    table = pd.DataFrame({"estimate": [value, 1 - value], "se": [se, se], "ci_low": [low, 1 - high],
                          "ci_high": [high, 1 - low], "unbiased": [unbiased, 1 - unbiased],
                          "unbiased_se": [unbiased_se, unbiased_se]}, index=pd.Index([first, second], name="answer"))
    notes = [] if 0 <= unbiased <= 1 else [_outside_note([first], f"the observed rate of {first!r} reports is outside "
                                                                   "what the design can produce")]
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, method, table, certificate,
                          covariance_source=np.array([[se**2, -se**2], [-se**2, se**2]]), remarks=notes)


#: How many answers a note names before it counts the rest (a 1,000-option question can have hundreds outside).
NOTE_NAMES = 8


def named_answers(answers, total: int | None = None) -> str:
    """The first `NOTE_NAMES` of ``answers`` by name and the rest counted (``total``: how many there are in all, when
    only the first are given)."""
    total = len(answers) if total is None else total
    listed = ", ".join(map(str, answers[:NOTE_NAMES]))
    return listed + (f" and {total - NOTE_NAMES} other answers" if total > NOTE_NAMES else "")


def _outside_note(answers, why: str, total: int | None = None) -> str:
    """``answers``: those outside, or their first `NOTE_NAMES` when ``total`` counts them all."""
    listed = named_answers(answers, total)
    return (f"the unbiased estimate of {listed} lies outside [0, 1] ({why}); the estimate is the maximum-likelihood "
            "one on the parameter space and the interval is for it")


def _multi_select(mechanism, counts, level, method, question_id, simultaneous):
    method = method or est.DEFAULT_BINARY_METHOD
    _check_method(method, est.BINARY_METHODS, "multi-select")
    channel = channels.binary_channel(mechanism)
    n = int(counts.sum())
    options = mechanism.options
    each = est.per_answer_level(level, len(options), simultaneous)
    membership = np.array([[option in report for report in mechanism.reports] for option in options])
    rows, certificates = [], []
    for option, selected in zip(options, membership):
        value, se, (low, high), unbiased, unbiased_se, certificate = binary_share(
            channel, int(counts[selected].sum()), n, each, method)
        rows.append((value, se, low, high, unbiased, unbiased_se))
        certificates.append(certificate)
    table = pd.DataFrame(rows, columns=COLUMNS, index=pd.Index(options, name="option"))
    notes = ["each row is the share selecting that option (options are not exclusive)"]
    outside = [o for o, u in zip(options, table["unbiased"]) if not 0 <= u <= 1]
    if outside:
        notes.append(_outside_note(outside, "sampling noise at this n"))
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, method, table,
                          likelihood.Certificate.worst(certificates), simultaneous=simultaneous, remarks=notes)


def _grid(mechanism, counts, level, method, question_id, simultaneous, scores=None, publication=(None, False)):
    """Single choice, ordinal, public choice and numeric grids: the simplex of answer shares. ``publication``: a
    number's (bins, values), see `estimate_counts`."""
    numeric = isinstance(mechanism, LaplaceMechanism)
    wide = ranges.is_wide(mechanism) and not publication[1]
    # k-ary randomized response and public choices are worked from their two numbers, in O(k): the k × k matrix is
    # written out only for what needs it (profile intervals, a mean, the covariance when read).
    marginal = None if numeric else channels.symmetric_channel(mechanism)
    written_out = []

    def q():
        if not written_out:
            written_out.append(channels.channel_matrix(mechanism))
        return written_out[0]

    if marginal is None and not numeric:
        marginal = channels.marginal_channel(q())
    if marginal is not None:
        method = method or est.DEFAULT_BINARY_METHOD
        _check_method(method, MARGINAL_METHODS, mechanism.design)
    else:
        method = method or DEFAULT_CATEGORICAL_METHOD
        _check_method(method, CATEGORICAL_METHODS, mechanism.design)
    n = int(counts.sum())
    calibrated = None
    found = None if marginal is None else likelihood.symmetric_maximum(marginal, counts)
    pi, certificate = found if found is not None else likelihood.certified_maximum(q(), counts)
    if marginal is not None:
        # Each share's report count is binomial through one channel, so the inverse information is the estimate's
        # covariance and every standard error is in closed form, O(k); the k × k covariance is written out when read.
        fitted_rates, rates = marginal.rate(pi), counts / n
        fitted = est.LinearSpread(None, fitted_rates, n, marginal)
        se = np.sqrt(marginal.unit_variance(fitted_rates) / n)
        unbiased = marginal.prevalence(rates)
        unbiased_se = np.sqrt(marginal.unit_variance(rates) / n)
        unbiased_spread = est.LinearSpread(None, rates, n, marginal)
    else:
        fitted, calibrated = published_spread(mechanism, q(), counts, pi)
        se = np.sqrt(np.clip(fitted.variances(), 0, None))
        unbiased, unbiased_spread = est.unbiased(q(), counts)
        unbiased_se = np.sqrt(np.clip(unbiased_spread.variances(), 0, None))
    notes = []
    if numeric:
        scores = np.array(mechanism.answers, dtype=float) if scores is None else scores
    if calibrated is not None:
        notes.append(_calibration_note(calibrated, len(pi) <= bootstrap.BATCH_ANSWERS, scores))
    if wide:
        return _wide(mechanism, counts, level, method, question_id, simultaneous, scores, publication[0], q(), pi,
                     certificate, fitted, calibrated, unbiased, unbiased_spread, se, unbiased_se, notes)
    each = est.per_answer_level(level, len(pi), simultaneous)
    row_method = method
    if marginal is not None and method == "clopper-pearson":
        low, high = _clopper_pearson_shares(marginal, counts, n, each)
        # The interval is for the answer's own binomial count; the estimate also uses the simplex, so it can sit a
        # hair outside: widen to reach it (a superset covers at least as often).
        low, high = np.minimum(low, pi), np.maximum(high, pi)
    else:
        if numeric and method == "likelihood" and len(pi) > PROFILE_GRID_LIMIT:
            row_method = "wald"
            notes.append(f"the {len(pi)} grid rows have Wald intervals (profile intervals for each of more than "
                         f"{PROFILE_GRID_LIMIT} grid points would take seconds); the mean's interval is profile likelihood")
        low, high = _share_intervals(None if row_method == "wald" else q(), counts, pi, se, each, row_method, calibrated)
    answers = mechanism.answers  # a fresh list on every read
    # One new array, column by column in memory (the layout of the DataFrame's block): the table takes it as is.
    table = pd.DataFrame(np.array([pi, se, low, high, unbiased, unbiased_se]).T, columns=_COLUMN_INDEX.view(),
                         index=_answer_index(tuple(answers), "value" if numeric else "answer"), copy=False)
    outside = np.flatnonzero((unbiased < -1e-12) | (unbiased > 1 + 1e-12))
    if len(outside) and not numeric:
        notes.append(_outside_note([answers[i] for i in outside[:NOTE_NAMES]], "sampling noise at this n", len(outside)))
    if numeric:
        notes.append("rows are the estimated distribution on the grid; the mean is the grid average under it")
    elif scores is not None:
        notes.append(f"the mean is the average position on the scale (1 = {mechanism.answers[0]}, "
                     f"{len(scores)} = {mechanism.answers[-1]}) under the estimated shares")
    mean = None
    if scores is not None:
        mean = _mean(q(), counts, pi, fitted, unbiased, unbiased_spread, scores, level,
                     "likelihood" if method == "clopper-pearson" else method, calibrated)
    # The k × k covariance is written out when read (`EstimateResult.covariance`): what is published reads it as `fitted`.
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, method, table, certificate,
                          fitted, mean=mean, simultaneous=simultaneous, remarks=notes)


def _wide(mechanism, counts, level, method, question_id, simultaneous, scores, edges, q, pi, certificate, fitted,
          calibrated, unbiased, unbiased_spread, se, unbiased_se, notes) -> EstimateResult:
    """A wide number's publication (`ranges`): its bins as the table, its quartiles, its mean; per-value rows only as
    read (`EstimateResult.value_rows`)."""
    values = np.array(mechanism.answers, dtype=float)
    if edges is None:
        edges = ranges.default_edges(mechanism.minimum, mechanism.maximum, mechanism.step)
    members = ranges.groups(values, edges)
    each = est.per_answer_level(level, len(members), simultaneous)
    table = ranges.range_table(q, counts, pi, members, fitted.variance, each, calibrated, unbiased,
                               unbiased_spread.variance)
    quantiles = ranges.QuantileSearch(q, counts, pi, values, level, calibrated).table()
    mean = _mean(q, counts, pi, fitted, unbiased, unbiased_spread, scores, level, method, calibrated)

    def value_rows(indices):
        """The rows ``values=True`` gives these values (its intervals, at its per-answer level), and no others."""
        indices = np.asarray(indices, dtype=int)
        each_value = est.per_answer_level(level, len(pi), simultaneous)
        row_method = "wald" if method == "wald" or len(pi) > PROFILE_GRID_LIMIT else method
        low, high = _share_intervals(q, counts, pi, se, each_value, row_method, calibrated, indices)
        answers = mechanism.answers
        return pd.DataFrame(np.array([pi[indices], se[indices], low, high, unbiased[indices], unbiased_se[indices]]).T,
                            columns=COLUMNS, index=pd.Index([answers[i] for i in indices], name="value"))

    notes = [*notes, f"rows are shares of ranges of values ({len(members)} bins); the quartiles' intervals invert "
             "the test of the distribution function at the grid points; per-value shares on request (values=True): "
             f"single values of a grid of {len(values)} are seldom identified at this ε and n"]
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, method, table, certificate,
                          fitted, mean=mean, simultaneous=simultaneous, remarks=notes, quantiles=quantiles,
                          shares=pi, rows_of=value_rows, bin_members=dict(members))


#: The table's columns as an Index, built once: a DataFrame given a list spends 90 µs making one (a fifth of a small
#: question's estimate); each table gets a view (an Index's name can be set in place, and a view's name is its own;
#: a copy would also cost the DataFrame its cached checks: 56 µs against 19 for a 4-answer table).
_COLUMN_INDEX = pd.Index(COLUMNS)


@functools.lru_cache(maxsize=64)
def _shared_answer_index(answers: tuple, name: str) -> pd.Index:
    return pd.Index(answers, name=name)


def _answer_index(answers: tuple, name: str) -> pd.Index:
    """The table's index, built once per question (a thousand answers: 70 µs of a millisecond estimate), and handed
    out as a view: an Index's name can be set in place, which must not reach another result's table."""
    return _shared_answer_index(answers, name).view()


def _clopper_pearson_shares(channel, counts, n, level):
    """`estimators.binary_interval` (Clopper–Pearson) for every answer's count at once: the quantiles are
    computed in one vectorised call; the rare count whose mapped interval misses [0, 1] takes the scalar path,
    once per distinct count."""
    rate_low, rate_high = est.clopper_pearson_rates(counts, n, level)
    ends = channel.prevalence(rate_low), channel.prevalence(rate_high)  # decreasing where p < q
    low, high = np.minimum(*ends), np.maximum(*ends)
    missed = (high <= 0) | (low >= 1)
    for count in np.unique(counts[missed]) if missed.any() else ():  # `binary_interval`'s own fallback, without its Clopper–Pearson again
        rows = missed & (counts == count)
        low[rows], high[rows] = est.likelihood_interval(channel, int(count), n, level)
    return np.minimum(np.maximum(low, 0.0), 1.0), np.minimum(np.maximum(high, 0.0), 1.0)


def published_spread(mechanism, q: channels.Channel, counts: np.ndarray, pi: np.ndarray):
    """The covariance published beside an estimate ``pi`` on the simplex of answers (not k-ary randomized response,
    whose shares are binomial), and the calibration behind it when there is one: the inverse information where it
    describes the spread (a public number, or an estimate whose shares are all several standard errors inside the
    simplex); for an ordinal scale or a numeric grid near a face, the parametric bootstrap of the fit at the estimate
    (`analysis.bootstrap`), whose surveys also calibrate the intervals' cut (`analysis.calibration`). The covariance is
    read as `estimators.LinearSpread` is: ``variances()``, ``variance(functional)``, ``matrix()``."""
    n = int(np.sum(counts))
    if bootstrap.needs_bootstrap(mechanism) and not calibration.is_interior(q, pi, n):
        calibrated = calibration.at_estimate(q, counts, pi)
        return calibrated.surveys, calibrated
    return est.fitted_spread(q, pi, n), None


def _calibration_note(calibrated: calibration.Calibration, short: bool, scores: np.ndarray | None = None) -> str:
    """What the near-face route did; ``short``: a grid whose surveys are fitted together (`bootstrap.BATCH_ANSWERS`);
    ``scores``: the grid or scale whose mean is published beside the shares."""
    surveys = calibrated.surveys
    errors = f"a share's standard error {surveys.relative_error():.1%}"
    if scores is not None:
        errors = f"the mean's {surveys.relative_error(scores):.1%}, " + errors
    bootstrapped = (f"standard errors by parametric bootstrap ({len(surveys.draws)} surveys; their Monte Carlo error "
                    f"relative to themselves: {errors} at most)")
    if short:
        return (f"the estimate is near a face of the simplex (a share within {calibration.INTERIOR_MARGIN:g} standard "
                f"errors of 0): {bootstrapped}, and each interval's likelihood cut calibrated "
                f"on {calibrated.replicates} surveys drawn at the estimate and at each end (coverage's Monte Carlo "
                f"error ±{calibrated.monte_carlo_error:.1%}); an end stops short of a point mass only if surveys drawn "
                "at that point mass reject it; a share at or near 0 has estimates piled at 0, which one standard error "
                "does not describe (the bootstrap's mostly states more): read its interval")
    return (f"the estimate is near a face of the simplex (a share within {calibration.INTERIOR_MARGIN:g} standard errors "
            f"of 0): {bootstrapped}; on a grid this long the intervals keep χ²₁'s cut, and an end stops short of a "
            "point mass only if surveys drawn at that point mass reject it")


def _share_intervals(q, counts, pi, se, level, method, calibrated=None, indices=None):
    """Each answer's interval (``indices``: those answers' only)."""
    indices = np.arange(len(pi)) if indices is None else indices
    if method == "wald":
        z = distributions.norm_isf((1 - level) / 2)
        return np.clip(pi[indices] - z * se[indices], 0, None), np.clip(pi[indices] + z * se[indices], None, 1)
    ends = [calibration.interval(q, counts, pi, np.eye(1, len(pi), i)[0], level, calibrated) for i in indices]
    low, high = np.array(ends, dtype=float).reshape(-1, 2).T
    return np.clip(low, 0, 1), np.clip(high, 0, 1)


def _mean(q, counts, pi, fitted, unbiased, unbiased_spread, grid, level, method,
          calibrated=None) -> MeanEstimate:
    value = float(grid @ pi)
    se = math.sqrt(max(fitted.variance(grid), 0.0))
    if method == "wald":
        z = distributions.norm_isf((1 - level) / 2)
        low, high = max(value - z * se, grid[0]), min(value + z * se, grid[-1])
    else:
        low, high = calibration.interval(q, counts, pi, grid, level, calibrated)
    unbiased_se = math.sqrt(max(unbiased_spread.variance(grid), 0.0))
    return MeanEstimate(value, se, est.ConfidenceInterval(float(low), float(high)), level, method,
                        float(grid @ unbiased), unbiased_se)


#: The estimator of each shape (`shape`), called as (mechanism, counts, level, method, question id, simultaneous,
#: scores): a binomial share, the simplex of answers (through k-ary randomized response's two numbers where it has
#: them, `_grid`), independent options, a numeric grid, a design with groups.
ESTIMATORS = {
    "binary": lambda mechanism, counts, level, method, question_id, simultaneous, scores:
        _binary(mechanism, counts, level, method, question_id),
    "symmetric": _grid,
    "channel": _grid,
    "unary": lambda mechanism, counts, level, method, question_id, simultaneous, scores:
        _multi_select(mechanism, counts, level, method, question_id, simultaneous),
    "numeric": _grid,
    "grouped": lambda mechanism, counts, level, method, question_id, simultaneous, scores:
        _compliance(mechanism, counts, level, method, question_id),
}
