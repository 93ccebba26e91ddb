"""The spread of the published estimate where the inverse Fisher information does not describe it.

The estimate deniable publishes is the maximum-likelihood distribution on the simplex. For a k-ary
randomized-response channel it is the moment estimate clipped to the simplex, and the inverse Fisher
information is its standard error. For ill-conditioned channels — ordinal scales and numeric grids, whose
columns differ little at small ε — the inverse information is the variance of the *unbiased* estimator
(which publishes values far outside [0, 1]), while the constrained maximiser moves much less: numeric 0..4 at
ε = 1, n = 100 has a Fisher standard error of 1.21 on a share whose estimate varies with SD 0.30.

So for those channels the standard error beside an estimate is a parametric bootstrap: surveys of the same
n drawn from the channel at the fitted distribution, each fitted as the estimate was, and the covariance of
those fits. An estimate's draws are seeded by the channel and the observed counts, so the same counts give the
same standard error on every surface (API, CLI, dashboard, notebook), and a fit that moves in its last digits (a
change of summation order, another BLAS) moves its standard error by as little, not by a new Monte Carlo error.
"""

from __future__ import annotations

import hashlib
import math
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from deniable.client.compliance import GroupedMechanism
from deniable.client.laplace import LaplaceMechanism
from deniable.client.mechanisms import UnaryMechanism

from . import channels, likelihood
from .deadline import check_time

#: Up to this many answers the bootstrap's surveys are fitted together (`_batched_maximise`: 15 ms for 1,000
#: surveys of a 5-point scale, 60 ms for 11 values, 0.9 s for 21); a longer grid's surveys are fitted one by one.
BATCH_ANSWERS = 24
#: Bootstrap surveys behind one covariance: a standard error's relative Monte Carlo error is about √((κ − 1)/4R), κ the
#: fits' kurtosis: 2.0% for normal fits at 1,250 (1,000 left 2.2%; 200, 5%, left a mean's SE 14% off in a test). A
#: grid longer than `BATCH_ANSWERS` starts from 200, its fits being one by one (1,250 cost a 0..100 estimate 52 s of
#: CPU against 7): its mean's SE reaches `TARGET_ERROR` through a control variate (`Bootstrap.variance`), with more
#: surveys only where that is not enough (`_drawn_to_target`); every SE's error is stated (`Bootstrap.relative_error`).
REPLICATES = 1250
LONG_GRID_REPLICATES = 200
#: A fit on at most this many answers has its linearization on that face worked out as a control variate
#: (`Bootstrap.variance`): a |S| × |S| solve and a reports × |S| product (a plan's uniform 0..50 grid: 51).
LINEARIZED_SUPPORT = 120
#: A mean's SE is drawn to this Monte Carlo error relative to itself (`bootstrap` adds surveys, up to `REPLICATES`).
TARGET_ERROR = 0.02


def needs_bootstrap(mechanism) -> bool:
    """Is the standard error of this design's estimate the bootstrap, not the inverse information? For the designs
    estimated on the simplex of answers (`from_counts._grid`: ordinal scales, numeric grids, other channels) whose
    channel is not k-ary randomized response. Yes/no designs, multi-select and compliance designs: no."""
    if isinstance(mechanism, (GroupedMechanism, UnaryMechanism)):
        return False
    if not isinstance(mechanism, LaplaceMechanism) and channels.is_binary(mechanism):
        return False
    return channels.marginal_channel(channels.channel_matrix(mechanism)) is None


def _seed(q: channels.Channel, key: np.ndarray, n: int, block: int = 0) -> int:
    digest = _channel_digest(q)
    for part in (np.ascontiguousarray(key, dtype=float), np.array([n])):
        digest.update(part.tobytes())
    if block:  # the surveys added to reach `TARGET_ERROR`: a block of their own, the first block's seed unchanged
        digest.update(np.array([block]).tobytes())
    return int.from_bytes(digest.digest()[:8], "little")


_DIGESTS: dict = {}
#: The hash of a long number grid's written-out matrix, by its structure: the matrix is a read-only view (laid out by
#: columns), which `_DIGESTS` does not keep, and each interval end's memo key hashed its 24 MB again (0..1000: 26 ms
#: an end, 1.6 s of an estimate).
_STRUCTURE_DIGESTS: dict = {}
_DIGESTS_LOCK = threading.Lock()


def _channel_digest(q: channels.Channel):
    """The hash of a channel's entries, as the start of every seed drawn through it. A matrix that owns its entries and
    is read-only (what `channels.channel_matrix` returns) cannot change, so its hash is kept for as long as it lives:
    a 0..1000 grid's 24 MB took 40 ms to hash, twice in every estimate. A number's channel given as its structure
    alone (a grid too long to write out) is hashed by its four numbers."""
    if isinstance(q, channels.FoldedGeometric):
        return hashlib.sha256(b"folded geometric" + np.array([q.alpha, q.points, q.keep, q.other]).tobytes())
    q = np.asarray(q)
    known = None if q.flags.writeable else channels.structure(q)
    if known is not None:  # a long number grid's matrix (a read-only view): hashed once per structure, as written
        with _DIGESTS_LOCK:
            found = _STRUCTURE_DIGESTS.get(known)
        if found is None:
            found = hashlib.sha256(np.ascontiguousarray(q, dtype=float).tobytes())
            with _DIGESTS_LOCK:
                _STRUCTURE_DIGESTS[known] = found
                while len(_STRUCTURE_DIGESTS) > 8:
                    _STRUCTURE_DIGESTS.pop(next(iter(_STRUCTURE_DIGESTS)))
        return found.copy()
    kept = q.base is None and not q.flags.writeable
    if kept and id(q) in _DIGESTS:
        return _DIGESTS[id(q)].copy()
    digest = hashlib.sha256(np.ascontiguousarray(q, dtype=float).tobytes())
    if kept:
        _DIGESTS[id(q)] = digest.copy()
        weakref.finalize(q, _DIGESTS.pop, id(q), None)
    return digest


@dataclass(frozen=True)
class Bootstrap:
    """Surveys drawn through a channel from one answer distribution, and the maximum-likelihood fit of each:
    ``draws`` and ``fits`` have a row per survey. Their covariance is the published estimate's spread where the
    information does not describe it; `calibration` reads the same surveys for the likelihood-ratio cut.

    A functional's variance (a mean's) is read with a control variate where that is the more precise reading: the
    fit's linearization on the face ``pi`` sits on, V = gᵀM·Q_Sᵀ(c/n − λ)/λ (M the inverse information restricted to
    that face and to Σπ = 1), has mean 0 and variance gᵀMg/n exactly, and follows the fitted mean closely (correlation
    0.98–0.995 for 0..30 to 0..1000 numbers near a face), so Var F = gᵀMg/n + Var(F − V) + 2 Cov(F − V, V) leaves to
    the surveys only the small remainder: a long grid's 200 surveys state a mean's SE to 0.7–1.8% from 1,000 reports or
    more (5% read plainly). A share's fits pile at its face instead, so its variance is read plainly (`variances`)."""
    q: channels.Channel
    pi: np.ndarray
    draws: np.ndarray
    fits: np.ndarray
    _face: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def covariance(self) -> np.ndarray:
        return np.atleast_2d(np.cov(self.fits, rowvar=False))

    # Read as `estimators.LinearSpread` is: from the fits, without the k × k matrix (a 0..10,000 grid's is 800 MB).
    def variances(self) -> np.ndarray:
        """Each share's variance over the surveys (read plainly: a share's fits pile at its face, which its
        linearization does not follow)."""
        return np.var(self.fits, axis=0, ddof=1) if len(self.fits) > 1 else np.full(self.fits.shape[1], np.nan)

    def variance(self, functional: np.ndarray) -> float:
        """The variance of ``functional``ᵀπ over the surveys, with the control variate where it states the smaller
        Monte Carlo error (`relative_error`)."""
        return self._read(functional)[0]

    def matrix(self) -> np.ndarray:
        return self.covariance

    def relative_error(self, functional: np.ndarray | None = None) -> float:
        """The Monte Carlo error of a bootstrap standard error relative to itself: of ``functional``ᵀπ when given
        (as `variance` reads it), else the largest over the shares the surveys were drawn at above 0 (a share at 0
        has fits piled at 0, which one standard error does not describe: its interval does). Read plainly it is
        √((κ − 1)/4R) (the delta method for a standard deviation, κ the kurtosis of the fits over the R surveys); a
        figure every survey fits alike has no spread to misstate. NaN with fewer than two surveys."""
        if len(self.fits) < 2:
            return math.nan
        if functional is not None:
            return self._read(functional)[1]
        values = self.fits[:, self.pi > 0]
        deviations = values - values.mean(axis=0)
        second = (deviations**2).mean(axis=0)
        spread = second > 1e-24
        if not spread.any():
            return 0.0
        kurtosis = (deviations[:, spread] ** 4).mean(axis=0) / second[spread] ** 2
        return float(np.sqrt(np.max(kurtosis - 1) / (4 * len(self.fits))))

    def _read(self, functional: np.ndarray) -> tuple[float, float]:
        """(variance, its standard error's relative Monte Carlo error) of ``functional``ᵀπ: plainly, or with the
        face's control variate when that states the smaller error."""
        replicates = len(self.fits)
        if replicates < 2:
            return math.nan, math.nan
        functional = np.asarray(functional, dtype=float)
        values = self.fits @ functional
        plain = float(np.var(values, ddof=1))
        if plain <= 1e-24:
            return plain, 0.0
        centred = values - values.mean()
        best = plain, _standard_error_error(centred**2 * replicates / (replicates - 1), plain)
        # One share alone is read plainly, as `variances` reads it, by whichever route it is asked for (a range of
        # one value, a unit functional): its fits pile at its face, which the linearization does not follow.
        control = self._control(functional) if np.count_nonzero(functional) > 1 else None
        if control is not None:
            linear, exact = control
            remainder = values - linear
            centred = remainder - remainder.mean()
            terms = (centred**2 + 2 * centred * linear) * replicates / (replicates - 1)
            variance = exact + float(terms.mean())
            if variance > 0:
                error = _standard_error_error(terms, variance)
                if error < best[1]:
                    best = variance, error
        return best

    def _control(self, functional: np.ndarray) -> tuple[np.ndarray, float] | None:
        """The fit's linearization on the face of ``pi`` at each survey, and its exact variance (None where the face
        is too wide to solve on, or its information is singular)."""
        face = self._face.get("face", False)
        if face is False:
            face = self._face["face"] = _face_linearization(self.q, self.pi, self.draws)
        if face is None:
            return None
        support, inverse, scaled, n = face
        along = inverse @ functional[support]
        return scaled @ along, float(functional[support] @ along) / n


def _standard_error_error(terms: np.ndarray, variance: float) -> float:
    """The relative Monte Carlo error of √(mean of ``terms``) as a standard error: sd(terms)/(√R·2·variance)."""
    return float(np.std(terms, ddof=1) / (math.sqrt(len(terms)) * 2 * variance))


def _face_linearization(q, pi: np.ndarray, draws: np.ndarray):
    """(support S, M on S, each survey's (c/n − λ)/λ·Q_S, n) for the fits' linearization on the face of ``pi``: M is
    the inverse of the information Q_Sᵀdiag(1/λ)Q_S restricted to Σπ_S = 1. None for more than `LINEARIZED_SUPPORT`
    answers or a singular information."""
    support = np.flatnonzero(pi > 0)
    if not 1 < len(support) <= LINEARIZED_SUPPORT:
        return None
    n = float(draws[0].sum())
    rates = np.clip(channels.apply(q, pi), 0, None)
    rates = rates / rates.sum()
    reached = rates > 0
    on_face = channels.columns(q, support)[reached]
    information = on_face.T @ (on_face / rates[reached, None])
    try:
        inverse = np.linalg.inv(information)
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(inverse).all():
        return None
    direction = inverse.sum(axis=1)
    inverse = inverse - np.outer(direction, direction) / direction.sum()
    deviations = (draws[:, reached] / n - rates[reached]) / rates[reached]
    return support, inverse, deviations @ on_face, n


def bootstrap(q: channels.Channel, pi: np.ndarray, n: int, replicates: int | None = None,
              counts: np.ndarray | None = None) -> Bootstrap:
    """``replicates`` surveys of ``n`` reports drawn through ``q`` from the answer distribution ``pi``, with their
    maximum-likelihood fits. Every fit meets the certificate's KKT tolerance: all are solved together
    (`_batched_maximise`), and any the batch leaves short is solved alone.

    Deterministic: the draws are seeded by ``q``, n and ``counts`` when given (an estimate's observed counts: its
    fitted ``pi`` is a function of them, but only to its certified precision; seeding by ``pi`` itself drew new
    surveys when it moved by 2e-12, and a 0..1000 grid's mean SE went from 10.8 to 12.0; a point mass's test passes
    the point mass, which is exact), else by ``q`` and n alone
    (a plan's assumed distribution): common random numbers, so a distribution moved in its last bits draws the same
    surveys (`stable_multinomial`) and its figures move by the fits' round-off, not by a Monte Carlo error. Seeded by
    the distribution rounded to 12 decimals, a 0..50 number's planned mean SE read 0.544 at the uniform shares and
    0.660 with one share 1e-12 higher."""
    q = channels.as_channel(q)
    pi, draws = draw_surveys(q, pi, n, replicates, counts)
    surveys = Bootstrap(q, pi, draws, fit_surveys(q, draws, pi))
    return surveys if replicates is not None else _drawn_to_target(surveys, n, counts)


def _drawn_to_target(surveys: Bootstrap, n: int, counts: np.ndarray | None) -> Bootstrap:
    """``surveys`` with blocks of as many surveys again added (each seeded by its index, the first block unchanged)
    until the mean's SE is stated to `TARGET_ERROR`, or `REPLICATES` are drawn: a long grid's 200 mostly reach it
    through the control variate (a 0..100 number from 10⁴ reports: 1.3%), but a fit on two or three answers of a small
    survey leaves 2.5–4% (0..50 at ε 2 from 400: 1,000 surveys, 1.3 s of CPU). Blocks of a fixed size, so an input
    moved in its last bits draws the same surveys unless its error sits on the target. The mean's functional is the
    grid's index: a number's values and a scale's positions are affine in it, which moves neither a standard error's
    relative error nor the control variate's."""
    index, size = np.arange(surveys.q.shape[1], dtype=float), len(surveys.fits)
    block = 1
    while surveys.relative_error(index) > TARGET_ERROR and len(surveys.fits) + size <= REPLICATES:
        added = draw_surveys(surveys.q, surveys.pi, n, size, counts, block)[1]
        surveys = Bootstrap(surveys.q, surveys.pi, np.vstack([surveys.draws, added]),
                            np.vstack([surveys.fits, fit_surveys(surveys.q, added, surveys.pi)]))
        block += 1
    return surveys


def draw_surveys(q: channels.Channel, pi: np.ndarray, n: int, replicates: int | None = None,
                 counts: np.ndarray | None = None, block: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The surveys `bootstrap` fits, without fitting them: (``pi`` normalised, the draws, a row per survey)."""
    if replicates is None:
        replicates = REPLICATES if q.shape[1] <= BATCH_ANSWERS else LONG_GRID_REPLICATES
    pi = np.clip(np.asarray(pi, dtype=float), 0, None)
    pi = pi / pi.sum()
    rates = np.clip(channels.apply(q, pi), 0, None)
    rng = np.random.default_rng(_seed(q, np.zeros(0) if counts is None else counts, n, block))
    return pi, stable_multinomial(rng, n, rates / rates.sum(), replicates)


def fit_surveys(q: channels.Channel, draws: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """The fits `bootstrap` makes of surveys drawn at ``pi`` (any subset of them: each row is fitted on its own). A
    long grid's surveys, fitted one by one, all start from ``pi`` (`maximise_each`'s ``fallback``): their projected
    unbiased estimates are worked out only for the batch, which starts from them (for a 0..1000 grid's 200 surveys
    they were a 1.2-GFlop product nothing read). Unless ``pi`` is spread over most of the grid (a plan's uniform
    shares): then each fit starts where the solver's own sparse start puts it (`likelihood.SPARSE_START_ABOVE`), since
    from a wide start each Newton step works on every answer (a 0..1000 grid's fit from uniform shares took 13 s,
    from the sparse start 5 ms; a 0..10,000 grid's would write out its whole channel, 2.4 GB)."""
    if q.shape[1] <= BATCH_ANSWERS:
        return maximise_each(q, draws, _starts(q, draws, pi), fallback=pi)
    return maximise_each(q, draws, pi if np.count_nonzero(pi) <= likelihood.SPARSE_START_ABOVE else None)


def maximise_each(q: channels.Channel, counts: np.ndarray, starts: np.ndarray | None, fallback: np.ndarray | None = None,
                  tilt: np.ndarray | None = None) -> np.ndarray:
    """The certified maximiser of Σ_r c_r log (Qx)_r (+ tiltᵀx) over the simplex for each row of ``counts``:
    together where the grid is short enough (`_batched_maximise`), one by one for the rows it leaves short and for
    longer grids (from ``fallback`` when given, else from ``starts``; None: the solver's own start, longer grids only)."""
    rows = len(counts)
    starts = None if starts is None else np.broadcast_to(starts, (rows, q.shape[1]))
    tilts = None if tilt is None else np.broadcast_to(tilt, (rows, q.shape[1]))
    if q.shape[1] <= BATCH_ANSWERS:
        matrix = channels.written_out(q, "the fits")  # a grid this short is always written out
        fits, certified = np.empty((rows, q.shape[1])), np.empty(rows, dtype=bool)
        for block in row_blocks(rows, q.shape[0]):  # each row is fitted on its own: a block of them at a time
            fits[block], certified[block] = _batched_maximise(
                matrix, counts[block], np.full(q.shape[1], 1 / q.shape[1]) if starts is None else starts[block],
                tilt=None if tilts is None else tilts[block])
    else:
        fits, certified = np.empty((rows, q.shape[1])), np.zeros(rows, dtype=bool)
    for row in np.flatnonzero(~certified):
        check_time()
        # A bootstrap's row left short starts from the distribution it was drawn at (``fallback``): closer to its
        # fit than its projected unbiased estimate on a long grid (a 0..1000 number: 3.9 against 5.0 s of fits).
        start = fallback if fallback is not None else None if starts is None else starts[row]
        fits[row] = likelihood.maximise(q, counts[row], start=start,
                                        tilt=None if tilts is None else tilts[row])[0]
    return fits


#: `stable_multinomial` draws each report as a uniform against the rates' cumulative sum when there are at most this
#: many reports per rate, else as a chain of binomials (a numpy call per rate). Measured for 200 and 1,250 surveys: a
#: rate's binomial call costs about what a survey's report costs (0.3–1.1 reports per rate broke even); a 0..10,000
#: number's 30,001 reports from 10⁴ reports, 200 surveys: 0.83 s a chain, 0.27 s report by report, drawn eight times
#: an estimate. A scale's or a short grid's surveys, from more reports than it has rates, keep their chain and draws.
REPORTS_PER_RATE = 1
#: Uniforms drawn at once (8 MB): a large n's surveys are counted a block of rows at a time.
UNIFORMS_AT_ONCE = 1 << 20


def stable_multinomial(rng: np.random.Generator, n: int, rates: np.ndarray, size: int) -> np.ndarray:
    """``size`` multinomial draws of ``n`` reports at ``rates``: for many rates and few reports, each report one
    uniform placed among the rates' cumulative sums rounded to 9 decimals (`REPORTS_PER_RATE`); else as a chain of
    binomials whose shares are rounded to 9
    decimals and mirrored above ½ here, not inside numpy. numpy's own multinomial mirrors each conditional share at
    exactly ½, and switches between two samplers that spend different numbers of uniforms: a symmetric channel's
    share sits at ½ up to round-off, so a fit 2e-13 away (another BLAS kernel) drew other surveys from the same seed
    (a 7-point scale: one row of 200 changed, and every row after it; its SE moved by 2%). Rounded, such a share is
    exactly ½ on every machine; a generic share changes its rounding only within 1e-13 of a midpoint. The law is the
    multinomial's, at shares within 1e-9 of the given ones; numpy alone (planning imports no scipy). Either way a
    rate moved in its last bits draws the same surveys, and which way is a function of n, size and the rates' count."""
    if n <= REPORTS_PER_RATE * len(rates):
        return _report_by_report(rng, n, rates, size)
    draws = np.zeros((size, len(rates)))
    remaining, mass = np.full(size, n, dtype=np.int64), 1.0
    for answer, rate in enumerate(rates[:-1]):
        if answer % 64 == 0:
            check_time()
        share = round(min(max(rate / mass, 0.0), 1.0), 9) if mass > 0 else 0.0
        if share > 0.5:
            drawn = remaining - rng.binomial(remaining, 1.0 - share)
        else:
            drawn = rng.binomial(remaining, share)
        draws[:, answer] = drawn
        remaining = remaining - drawn
        mass -= rate
    draws[:, -1] = remaining
    return draws


def _report_by_report(rng: np.random.Generator, n: int, rates: np.ndarray, size: int) -> np.ndarray:
    """`stable_multinomial`'s draws for many rates: each report the first rate whose cumulative sum (rounded to 9
    decimals, the last one 1) is above a uniform, counted per survey; a zero rate's report is never drawn."""
    k = len(rates)
    edges = np.round(np.cumsum(rates), 9)
    edges[-1] = 1.0
    draws = np.zeros((size, k))
    rows = max(1, UNIFORMS_AT_ONCE // max(n, 1))
    for first in range(0, size, rows):
        check_time()
        block = min(rows, size - first)
        reports = np.minimum(np.searchsorted(edges, rng.random((block, n)), side="right"), k - 1)
        reports += (k * np.arange(block))[:, None]
        draws[first:first + block] = np.bincount(reports.ravel(), minlength=block * k).reshape(block, k)
    return draws


def _starts(q: channels.Channel, counts: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Where each survey's fit starts: its unbiased estimate projected onto the simplex. At large n that is the fit
    itself; at small n its zeros are mostly the fit's, so fewer passes of the active set remain (a 0-40 number at
    n = 1,000: 69 → 50 ms). A start whose rates cannot produce the survey's reports (a zero in the channel) takes
    ``fallback``."""
    estimates = (counts / np.clip(counts.sum(axis=1, keepdims=True), 1, None)) @ channels.left_inverse(
        channels.written_out(q, "the starting points")).T
    starts = simplex_projection(estimates)
    impossible = ((channels.rates(q, starts) <= 0) & (counts > 0)).any(axis=1)
    starts[impossible] = fallback
    return starts


def simplex_projection(points: np.ndarray) -> np.ndarray:
    """The nearest point of the probability simplex to each row (Euclidean; sort and threshold, Held et al. 1974)."""
    descending = -np.sort(-points, axis=1)
    excess = np.cumsum(descending, axis=1) - 1
    positions = np.arange(1, points.shape[1] + 1)
    support = (descending - excess / positions > 0).sum(axis=1)
    threshold = excess[np.arange(len(points)), support - 1] / support
    return np.clip(points - threshold[:, None], 0, None)


def _batched_maximise(q: np.ndarray, counts: np.ndarray, start: np.ndarray, iterations: int = 40,
                      tilt: np.ndarray | None = None):
    """Maximise Σ_r c_r log (Qx)_r (+ tiltᵀx, a row of ``tilt`` per row) over the simplex for every row of ``counts``
    at once: active-set Newton
    steps (the equality-constrained step on each row's free answers, cut by the ratio test and Armijo's rule),
    answers leaving at zero and re-entering where the gradient asks; each pass works on the rows not yet
    converged. Returns (fits, certified per row), the certificate being the one `likelihood.maximise` meets:
    relative KKT residual within its tolerance.

    Its cost is numpy's per-call overhead on small arrays (200 surveys × 9 answers: a few µs a call, against about
    1 µs a row for the solves), so each pass makes as few calls as it can: the rates at the iterate serve both its
    gradient and its log-likelihood, the residual is one reduction, and the rows are re-selected only when some
    have converged."""
    rows, k = counts.shape[0], q.shape[1]
    totals = counts.sum(axis=1)
    x = np.where(start > 0, start, 0.0) * np.ones((rows, 1))  # one start for all rows, or one per row
    x /= x.sum(axis=1, keepdims=True)
    tolerance = likelihood.KKT_TOLERANCE
    # Each report's q_r q_rᵀ, flattened, written once; for a face of a long grid (30,001 reports × 24² answers: 138 MB)
    # a block of reports at a time, as each pass reads it.
    blocks = row_blocks(q.shape[0], k * k)
    outer = _outer_products(q, blocks[0]) if len(blocks) == 1 else None
    diagonal = np.s_[:, ::k + 1]  # the diagonal of each row's k × k block, flattened

    def weights_at(lam, c, observed):
        return np.where(observed, c / np.maximum(lam, 1e-300), 0.0)

    def value(lam, points, c, observed, t):
        logs = np.where(observed, np.log(np.maximum(lam, 1e-300)), 0.0)
        tilted = (c * logs).sum(axis=1) + (0.0 if t is None else (t * points).sum(axis=1))
        return np.where(((lam <= 0) & observed).any(axis=1), -np.inf, tilted)

    def residual(points, gradient, n):
        # Relative to the multiplier xᵀg, which is n without a tilt (Σ_r c_r (Qx)_r/(Qx)_r): on the support the
        # stationarity gap either way, off it only a gradient above the multiplier (one reduction gives both, as
        # every point has a support).
        multiplier = (points * gradient).sum(axis=1)
        relative = (gradient - multiplier[:, None]) / n[:, None]
        return np.where(points > 0, np.abs(relative), relative).max(axis=1), multiplier

    # One np.errstate for every pass (a rate of 0 is a report no point can produce: its log and ratio are masked out),
    # not one per helper call: entering and leaving one cost 5% of a pass.
    with np.errstate(divide="ignore", invalid="ignore"):
        moving = np.arange(rows)
        c, n, xm, t = counts, totals, x, tilt
        observed = c > 0
        for _ in range(iterations):
            check_time()
            lam = xm @ q.T
            weights = weights_at(lam, c, observed)
            gradient = weights @ q if t is None else weights @ q + t
            gaps, multiplier = residual(xm, gradient, n)
            going = gaps > tolerance * 0.01
            if not going.all():
                moving, c, n, observed, xm, lam, weights, gradient, multiplier = (
                    moving[going], c[going], n[going], observed[going], xm[going], lam[going], weights[going],
                    gradient[going], multiplier[going])
                t = None if t is None else t[going]
                if not len(moving):
                    break
            free = (xm > 0) | (gradient > multiplier[:, None] + n[:, None] * tolerance)
            scaled = weights / np.maximum(lam, 1e-300)
            if outer is not None:
                curvature = scaled @ outer  # Σ_r w_r q_r q_rᵀ, one GEMM (flattened)
            else:
                curvature = sum(scaled[:, block] @ _outer_products(q, block) for block in blocks)
            curvature[diagonal] += 1e-12 * curvature[diagonal].sum(axis=1)[:, None]
            curvature = curvature.reshape(-1, k, k)
            direction = _newton_on_face(curvature, gradient, free)
            if direction is None:
                break  # a singular row: the rows left uncertified are solved one by one
            for _ in range(k):
                # An answer at zero that the step would push below zero stays out of the face: re-solve those rows.
                blocked = (xm <= 0) & (direction < 0) & free
                again = np.flatnonzero(blocked.any(axis=1))
                if not len(again):
                    break
                free[again] &= ~blocked[again]
                redone = _newton_on_face(curvature[again], gradient[again], free[again])
                if redone is None:
                    break
                direction[again] = redone
            limits = np.where(direction < 0, xm / -direction, np.inf).min(axis=1)
            step = np.minimum(1.0, limits)
            current = value(lam, xm, c, observed, t)
            slope = (gradient * direction).sum(axis=1)
            accepted = np.zeros(len(moving), dtype=bool)
            for _ in range(30):
                candidate = np.maximum(xm + step[:, None] * direction, 0)
                better = value(candidate @ q.T, candidate, c, observed, t) >= \
                    current + 1e-4 * step * slope - likelihood.FORGIVEN_ROUNDOFF * np.abs(current)
                if better.all() and not accepted.any():
                    xm = candidate / candidate.sum(axis=1, keepdims=True)
                    break
                newly = better & ~accepted
                xm[newly] = candidate[newly] / candidate[newly].sum(axis=1, keepdims=True)
                accepted |= better
                if accepted.all():
                    break
                step = np.where(accepted, step, step / 2)
            xm[xm < 1e-15] = 0.0
            xm /= xm.sum(axis=1, keepdims=True)
            x[moving] = xm
        lam = x @ q.T
        weights = weights_at(lam, counts, counts > 0)
        return x, residual(x, weights @ q if tilt is None else weights @ q + tilt, totals)[0] <= tolerance


#: Entries of a surveys × reports array worked at once (16 MB): 200 surveys of a 0..10,000 grid's 30,001 reports
#: made four or five such temporaries at once, a quarter of a GB, for each end tested at a point mass or a face.
BLOCK_ENTRIES = 1 << 21


def row_blocks(rows: int, width: int) -> list[slice]:
    """Slices of ``rows`` rows, each with at most `BLOCK_ENTRIES` entries of ``width`` columns (one at least): surveys
    × reports arrays, and the reports' outer products (a row of k² entries each)."""
    step = max(1, BLOCK_ENTRIES // max(width, 1))
    return [slice(first, min(first + step, rows)) for first in range(0, rows, step)]


def _outer_products(q: np.ndarray, reports: slice) -> np.ndarray:
    rows = q[reports]
    return (rows[:, :, None] * rows[:, None, :]).reshape(len(rows), -1)


def _newton_on_face(curvature: np.ndarray, gradient: np.ndarray, free: np.ndarray) -> np.ndarray | None:
    """Per row, the Newton step on the free answers that keeps the shares summing to one: W_FF d + ν1 = g_F,
    Σ d = 0, and d = 0 off the face (None when a row's system is singular)."""
    rows, k = gradient.shape
    system = np.zeros((rows, k + 1, k + 1))
    np.copyto(system[:, :k, :k], curvature, where=free[:, :, None] & free[:, None, :])
    system.reshape(rows, -1)[:, :k * (k + 2):k + 2] += ~free  # an answer off the face: its row says d_j = 0
    system[:, :k, k] = free
    system[:, k, :k] = free
    right = np.zeros((rows, k + 1, 1))
    np.copyto(right[:, :k, 0], gradient, where=free)
    try:
        return np.linalg.solve(system, right)[:, :k, 0]
    except np.linalg.LinAlgError:
        return None


def published_covariance(q: channels.Channel, pi: np.ndarray, n: int, replicates: int | None = None,
                         counts: np.ndarray | None = None) -> np.ndarray:
    """The covariance of the maximum-likelihood estimate from ``n`` reports when the answers are distributed as
    ``pi`` (parametric bootstrap; `bootstrap`, seeded by ``counts`` when given)."""
    return bootstrap(q, pi, n, replicates, counts).covariance
