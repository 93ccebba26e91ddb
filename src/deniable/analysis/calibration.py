"""Likelihood-ratio intervals on the simplex of answers that hold at its faces: the cut calibrated at the estimate.

A profile-likelihood interval {θ : 2(ℓ̂ − ℓ_prof(θ)) ≤ c} covers at its level when the statistic at the truth has the
distribution the cut c was taken from. Inside the simplex that is χ²₁ (Wilks). Where the truth is on a face, or a
few standard errors from one (a point mass, a scale whose ends nobody chose, a U-shape, any low-information channel),
the nuisance shares sit on their bounds and the statistic is a mixture that can run far above χ²₁: an 11-point
scale with everyone on one answer covered 76% with χ²₁'s cut, 81% with χ²₁'s scaled by a constant fitted on a grid.

So where the estimate is near a face the cut of each functional aᵀπ is the ``level`` quantile of the same statistic
over surveys drawn at the estimate (the parametric bootstrap behind the standard errors: one set of surveys,
`bootstrap.bootstrap`): T_b = 2(ℓ_b(π̂_b) − max{ℓ_b(π) : aᵀπ = aᵀπ̂}), each survey's own maximum against its maximum
where the functional keeps the estimate's value. Never below χ²₁'s cut: where the faces are far the two agree up
to Monte Carlo error, and χ²₁ is then the exact asymptotic answer. The cut is the order statistic of rank
⌈(R + 1)·level⌉, whose coverage has Monte Carlo error about √(level(1 − level)/R) (0.7% at R = 1,000).

Where every share is more than `INTERIOR_MARGIN` standard errors (inverse information) from 0 the estimate is
interior: χ²₁'s cut and the inverse information's standard errors, in closed form, no bootstrap.
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import numpy as np

from . import bootstrap, channels, distributions, likelihood
from .deadline import check_time

#: An estimate whose every share is more than this many standard errors from 0 is interior (the faces are out of
#: reach of its sampling spread): closed-form standard errors and χ²₁'s cut. The margin the cheating-detection fit
#: uses for its boundary mixture.
INTERIOR_MARGIN = 3.0


def is_interior(q: channels.Channel, pi: np.ndarray, n: int) -> bool:
    """Is every share more than `INTERIOR_MARGIN` standard errors (inverse information, `channels.fitted_covariance`)
    from 0? A share at 0 answers at once, without the k × k inverse (a 0..1000 grid's costs a second; a longer grid's
    structure reads the variances in O(k))."""
    if not (np.asarray(pi) > 0).all():
        return False
    se = np.sqrt(np.clip(channels.fitted_variances(q, pi), 0, None) / n)
    return bool((pi > INTERIOR_MARGIN * se).all())


def _rank_quantile(statistics: np.ndarray, level: float) -> float:
    """The order statistic of rank ⌈(R + 1)·level⌉ (the largest when that exceeds R)."""
    ordered = np.sort(statistics)
    rank = min(math.ceil((len(ordered) + 1) * level), len(ordered))
    return float(ordered[rank - 1])


def loglikelihoods(q: channels.Channel, counts: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Σ_r c_r log (Qπ)_r per row of ``counts`` and ``points`` (reports with count 0 left out)."""
    values = np.empty(len(counts))
    for rows in bootstrap.row_blocks(len(counts), counts.shape[1]):
        rates = channels.rates(q, points[rows])
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(counts[rows] > 0, np.log(np.clip(rates, 1e-300, None)), 0.0)
        values[rows] = (counts[rows] * logs).sum(axis=1)
    return values


def _report_weights(q, draws: np.ndarray, points: np.ndarray) -> np.ndarray:
    """c_r / (Qπ)_r per survey, 0 where a report was not drawn: the EM step's and its bounds' weights."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(draws > 0, draws / channels.rates(q, points), 0.0)


#: Surveys read for a calibrated cut: the first this many of the standard errors' bootstrap (all of a long grid's
#: 200). Each functional's cut costs a fit of every survey (an 11-point scale: 20 ms per 400); the coverage's Monte
#: Carlo error is then ±1.1%, and it averages out over surveys rather than biasing them.
CALIBRATION_REPLICATES = 400


#: Surveys drawn at an interval's end (`_end_cut`): two sets per interval, so fewer (Monte Carlo error ±1.5%).
END_REPLICATES = 200


@dataclass(frozen=True)
class Calibration:
    """Surveys drawn at an estimate (``surveys``, behind its standard errors), read for the likelihood-ratio
    statistic of any functional on the first `CALIBRATION_REPLICATES` of them."""
    surveys: bootstrap.Bootstrap
    _statistics: dict = field(default_factory=dict, compare=False, repr=False)
    #: The cuts calibrated at interval ends (`_end_cut`), by functional, end and level: a second estimate of the same
    #: counts (another dashboard view, `conf_int`, the simultaneous intervals) draws no surveys again.
    _ends: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def bootstrap(self) -> bootstrap.Bootstrap:
        kept = slice(0, CALIBRATION_REPLICATES)
        return bootstrap.Bootstrap(self.surveys.q, self.surveys.pi, self.surveys.draws[kept], self.surveys.fits[kept])

    @property
    def replicates(self) -> int:
        return min(len(self.surveys.draws), CALIBRATION_REPLICATES)

    @property
    def monte_carlo_error(self) -> float:
        """The standard deviation of a calibrated interval's coverage from the finite number of surveys, at 95%."""
        return math.sqrt(0.95 * 0.05 / self.replicates)

    def cut(self, functional: np.ndarray, level: float) -> float:
        """The log-likelihood drop bounding a ``level`` profile interval of ``functional``ᵀπ: half the statistic's
        calibrated quantile, never below χ²₁'s."""
        return max(likelihood.likelihood_cut(level), _rank_quantile(self.statistics(functional), level) / 2)

    def statistics(self, functional: np.ndarray) -> np.ndarray:
        """T_b = 2(ℓ_b(π̂_b) − max{ℓ_b(π) : aᵀπ = aᵀπ̂}) for each survey b, π̂ the estimate they were drawn at
        (remembered per functional: another level, simultaneous intervals or a binning reads them again)."""
        functional = np.asarray(functional, dtype=float)
        key = functional.tobytes()
        if key not in self._statistics:
            self._statistics[key] = self._compute(functional)
        return self._statistics[key]

    def _compute(self, functional: np.ndarray) -> np.ndarray:
        boot = self.bootstrap
        peaks = loglikelihoods(boot.q, boot.draws, boot.fits)
        target = float(functional @ boot.pi)
        constrained, _ = constrained_maximum(boot, functional, target)
        return np.clip(2 * (peaks - constrained), 0, None)


def at_estimate(q: channels.Channel, counts: np.ndarray, pi: np.ndarray) -> Calibration:
    """The calibration at an estimate from ``counts``: its seeded surveys (`bootstrap.bootstrap`), remembered for the
    last few estimates (a refit at another level, a binning, the simultaneous intervals read the same ones)."""
    q, counts = channels.as_channel(q), np.asarray(counts)
    key = (bootstrap._seed(q, counts, int(counts.sum())), q.shape)
    found = _RECENT.pop(key, None)
    if found is None or not np.array_equal(found.surveys.pi, _normalised(pi)):
        found = Calibration(bootstrap.bootstrap(q, pi, int(counts.sum()), counts=counts))
    _RECENT[key] = found
    while len(_RECENT) > RECENT_ESTIMATES:
        _RECENT.pop(next(iter(_RECENT)))
    return found


#: Calibrations kept, most recent last (a 0..1000 grid's surveys: about 6 MB).
RECENT_ESTIMATES = 8
_RECENT: dict = {}


def _normalised(pi: np.ndarray) -> np.ndarray:
    pi = np.clip(np.asarray(pi, dtype=float), 0, None)
    return pi / pi.sum()


def constrained_maximum(boot: bootstrap.Bootstrap, functional: np.ndarray, target: float):
    """(max ℓ_b, its maximiser) over {π : aᵀπ = target} for each survey b of ``boot`` (its fits are the starts)."""
    low, high = float(functional.min()), float(functional.max())
    span = max(high - low, 1e-300)
    if target <= low + 1e-12 * span or target >= high - 1e-12 * span:
        return _face_maximum(boot, np.flatnonzero(np.abs(functional - target) <= 1e-12 * span))
    if np.count_nonzero(functional != low) == 1 and low == 0:
        return _share_maximum(boot, int(np.flatnonzero(functional)[0]), target / high)
    return _tilted_maximum(boot, functional, target)


def _face_maximum(boot: bootstrap.Bootstrap, face: np.ndarray):
    """max ℓ_b over the face of the simplex on ``face`` (the functional at an end of its range)."""
    sub = channels.written_out(boot.q, "a face's maximum")[:, face]
    points = np.zeros_like(boot.fits)
    if len(face) == 1:
        points[:, face[0]] = 1.0
        return loglikelihoods(sub, boot.draws, np.ones((len(boot.draws), 1))), points
    starts = _restricted_starts(boot, face, sub)
    possible = ~((sub.sum(axis=1) <= 0)[None, :] & (boot.draws > 0)).any(axis=1)
    values = np.full(len(boot.draws), -np.inf)
    points[:, face] = starts
    if possible.any():
        fits = bootstrap.maximise_each(sub, boot.draws[possible], starts[possible])
        values[possible] = loglikelihoods(sub, boot.draws[possible], fits)
        points[np.ix_(np.flatnonzero(possible), face)] = fits
    return values, points


def _restricted_starts(boot: bootstrap.Bootstrap, columns: np.ndarray, q: channels.Channel) -> np.ndarray:
    """Where each survey's constrained maximum is sought from: its own fit on ``columns``, renormalised, zeros kept. An
    answer the survey's maximum leaves out is mostly out of the constrained one too, and each one the fitter had to
    drive back to zero cost it a pass (the demo's hours: 0.41 → 0.33 s of CPU, every figure within 1e-12). A row
    whose fit has no mass on ``columns``, or whose start could not produce a report it has (``q``, the channel it is
    fitted through, with zeros), starts inside the simplex instead, a hair from its fit."""
    fits = boot.fits[:, columns]
    totals = fits.sum(axis=1, keepdims=True)
    inside = fits + 1e-9
    inside /= inside.sum(axis=1, keepdims=True)
    starts = np.divide(fits, totals, out=inside.copy(), where=totals > 0)
    unusable = ((channels.rates(q, starts) <= 0) & (boot.draws > 0)).any(axis=1)
    starts[unusable] = inside[unusable]
    return starts


def _share_maximum(boot: bootstrap.Bootstrap, answer: int, share: float) -> tuple[np.ndarray, np.ndarray]:
    """max ℓ_b with π_j = s: π = s·e_j + (1 − s)·ρ, ρ on the simplex of the other answers, is a simplex problem in ρ
    through Q' = (1 − s)·Q_{−j} + s·q_j·1ᵀ (Σρ = 1): every survey fitted together."""
    others = np.delete(np.arange(boot.q.shape[1]), answer)
    q = channels.written_out(boot.q, "a share's maximum")
    reduced = (1 - share) * q[:, others] + share * q[:, [answer]]
    starts = _restricted_starts(boot, others, reduced)
    fits = bootstrap.maximise_each(reduced, boot.draws, starts)
    points = np.zeros_like(boot.fits)
    points[:, others], points[:, answer] = (1 - share) * fits, share
    return loglikelihoods(reduced, boot.draws, fits), points


#: A survey's constrained maximum is taken where its functional is within this share of the functional's bootstrap
#: standard deviation of the target; the rest is the profile's first-order term (the statistic is then off by
#: about this squared, 1e-8).
_TARGET_TOLERANCE = 1e-4


def _tilted_maximum(boot: bootstrap.Bootstrap, functional: np.ndarray, target: float) -> tuple[np.ndarray, np.ndarray]:
    """max ℓ_b with aᵀπ = target, for every survey: the maximiser of ℓ_b + τ·aᵀπ has aᵀπ increasing in τ, so each
    survey's τ is found by a safeguarded secant (bracketed, bisected when the secant leaves the bracket), all surveys
    together. ℓ_prof(m) = ℓ_b(π(τ)) − τ·(m − aᵀπ(τ)) to first order closes the last gap."""
    q, draws = boot.q, boot.draws
    rows = len(draws)
    points = boot.fits.copy()
    values = points @ functional
    variance = float(np.var(values))
    scale = math.sqrt(variance) if variance > 0 else 1e-6 * float(np.ptp(functional))
    variance = max(variance, scale ** 2)
    tau = np.zeros(rows)
    gap = values - target
    below_tau, below_gap = np.full(rows, -np.inf), np.full(rows, np.nan)
    above_tau, above_gap = np.full(rows, np.inf), np.full(rows, np.nan)
    previous_tau, previous_gap = np.full(rows, np.nan), np.full(rows, np.nan)
    for _ in range(60):
        check_time()
        below = gap < 0
        below_tau, below_gap = np.where(below, tau, below_tau), np.where(below, gap, below_gap)
        above_tau, above_gap = np.where(~below, tau, above_tau), np.where(~below, gap, above_gap)
        moving = np.flatnonzero(np.abs(gap) > _TARGET_TOLERANCE * scale)
        if not len(moving):
            break
        t, g = tau[moving], gap[moving]
        with np.errstate(divide="ignore", invalid="ignore"):
            secant = np.where(np.isfinite(previous_tau[moving]) & (g != previous_gap[moving]),
                              t - g * (t - previous_tau[moving]) / (g - previous_gap[moving]), t - g / variance)
        low, high = below_tau[moving], above_tau[moving]
        bracketed = np.isfinite(low) & np.isfinite(high)
        # Without a bracket yet, step out past the last τ, at least as far as the gap at the path's starting slope.
        reach = np.maximum(4 * np.abs(t), np.abs(g) / variance)
        proposal = np.where((secant > low) & (secant < high), secant,
                            np.where(bracketed, (low + high) / 2, np.where(g > 0, t - reach, t + reach)))
        previous_tau[moving], previous_gap[moving] = t, g
        fits = bootstrap.maximise_each(q, draws[moving], points[moving], tilt=proposal[:, None] * functional)
        points[moving], tau[moving] = fits, proposal
        gap[moving] = fits @ functional - target
    return loglikelihoods(q, draws, points) - tau * (target - points @ functional), points


def interval(q: channels.Channel, counts: np.ndarray, pi: np.ndarray, functional: np.ndarray, level: float,
             calibrated: Calibration | None) -> tuple[float, float]:
    """The profile-likelihood interval of ``functional``ᵀπ at ``level``.

    χ²₁'s cut when ``calibrated`` is None (an interior estimate). Else the cut calibrated at the estimate, then one
    step of test inversion at each end: the end θ is in the interval iff its statistic is within the quantile of the
    law *at θ*, which is the law of surveys drawn at the constrained maximiser π̃(θ), not at π̂; where that quantile
    is higher the end moves out to it (`_end_cut`). Last, each end is tested at the point mass beyond it
    (`reaches_vertex`)."""
    return (end(q, counts, pi, functional, level, calibrated, -1.0),
            end(q, counts, pi, functional, level, calibrated, 1.0))


def end(q: channels.Channel, counts: np.ndarray, pi: np.ndarray, functional: np.ndarray, level: float,
        calibrated: Calibration | None, side: float) -> float:
    """One end of `interval`: the lower (``side`` −1) or the upper (+1), worked as `interval` works both, and
    remembered for the last `ENDS_KEPT` asked: the same counts estimated again (a second view of the dashboard, the
    CLI after it, a refit at the same level) read a wide number's bins and quartiles without a profile again."""
    functional = np.asarray(functional, dtype=float)
    digest = hashlib.sha256(np.ascontiguousarray(pi, dtype=float).tobytes())
    digest.update(functional.tobytes())
    key = (bootstrap._seed(channels.as_channel(q), np.asarray(counts), int(np.sum(counts))), digest.digest(), level, side,
           calibrated is None)
    with _ENDS_LOCK:
        found = _ENDS.get(key)
    if found is None:
        found = _end(q, counts, pi, functional, level, calibrated, side)
        with _ENDS_LOCK:
            _ENDS[key] = found
            while len(_ENDS) > ENDS_KEPT:
                _ENDS.pop(next(iter(_ENDS)))
    return found


#: Interval ends remembered (`end`): a wide number's publication reads about 50.
ENDS_KEPT = 4096
_ENDS: dict = {}
_ENDS_LOCK = threading.Lock()


def _end(q, counts, pi, functional, level, calibrated, side) -> float:
    long_grid = q.shape[1] > bootstrap.BATCH_ANSWERS
    cut = likelihood.likelihood_cut(level) if calibrated is None or long_grid else calibrated.cut(functional, level)
    bound = likelihood.profile_end(q, counts, pi, functional, cut, side)
    if calibrated is None:
        return bound
    oriented = side * functional
    extreme = float(oriented.max())
    if side * bound < extreme - 1e-9 * max(abs(extreme), 1.0) and not long_grid:
        key = (functional.tobytes(), bound, level)
        if key not in calibrated._ends:
            calibrated._ends[key] = _end_cut(q, counts, pi, functional, bound, level)
        wider = calibrated._ends[key]
        if wider > cut:
            bound = likelihood.profile_end(q, counts, pi, functional, wider, side)
    vertex = np.flatnonzero(oriented >= extreme - 1e-12 * max(abs(extreme), 1.0))
    if len(vertex) == 1 and side * bound < extreme and reaches_vertex(q, counts, pi, int(vertex[0]), level, cut):
        bound = side * extreme
    elif 1 < len(vertex) <= bootstrap.BATCH_ANSWERS and long_grid and side * bound < extreme and \
            reaches_face(q, counts, pi, oriented >= extreme - 1e-12 * max(abs(extreme), 1.0), level, cut):
        bound = side * extreme
    return bound


def _end_cut(q: channels.Channel, counts: np.ndarray, pi: np.ndarray, functional: np.ndarray, end: float,
             level: float) -> float:
    """The calibrated cut at an interval's end: surveys drawn at the maximiser of the likelihood where the
    functional equals ``end`` (the null the end is tested against)."""
    observed = bootstrap.Bootstrap(q, pi, np.asarray(counts, dtype=float)[None, :], np.asarray(pi, dtype=float)[None, :])
    _, (point,) = constrained_maximum(observed, functional, end)
    n = int(np.sum(counts))
    if is_interior(q, point, n):
        return likelihood.likelihood_cut(level)  # Wilks holds at an interior null: no surveys needed
    surveys = bootstrap.bootstrap(q, point, n, END_REPLICATES, counts=counts)
    return Calibration(surveys).cut(functional, level)


def reaches_vertex(q: channels.Channel, counts: np.ndarray, pi: np.ndarray, answer: int, level: float, cut: float) -> bool:
    """Does the interval reach the point mass on ``answer``? There the nuisance shares are all on their bounds and the
    statistic's law is a mixture of up to k − 1 degrees of freedom, which a bootstrap at an estimate a little inside
    the simplex under-states (an 11-point scale with everyone on one answer: 81% coverage). That law does not depend
    on the data: surveys of the same n drawn at the vertex (`VertexSurveys`, remembered). Tested only when the
    statistic lies between the estimate's cut and χ²ₖ₋₁'s quantile, above which no mixture of fewer degrees reaches."""

    n = int(np.sum(counts))
    at_mass = likelihood.loglikelihood(q, counts, likelihood.point_mass(len(pi), answer))
    statistic = 2 * (likelihood.loglikelihood(q, counts, pi) - at_mass)
    if statistic <= 2 * cut:
        return True
    if statistic > distributions.chi2_ppf(level, max(len(pi) - 1, 1)):
        return False
    return VertexSurveys.at(q, n, answer).within(statistic, level)


def reaches_face(q: channels.Channel, counts: np.ndarray, pi: np.ndarray, face: np.ndarray, level: float,
                 cut: float) -> bool:
    """Does the interval reach the face of the simplex on the answers ``face`` (a mask: a range of values' share at
    1)? There the shares off the face are all on their bounds and the statistic's law is a mixture of up to
    k − |face| degrees of freedom (a long grid's bin holding a point mass: χ²₁'s cut covered 90% of 100 surveys).
    Its law is taken from surveys drawn at the best point of the face for these counts (`FaceSurveys`), tested only
    where the statistic lies between the estimate's cut and the χ² quantile of k − |face| degrees, as
    `reaches_vertex`. Only faces of at most `bootstrap.BATCH_ANSWERS` answers, whose surveys' maxima on the face are
    fitted together: a wider face's, one by one, cost a 0..76 estimate 2.4 s, for quartiles that covered 99% without
    the test."""
    best = likelihood.maximise(q, counts, face=face)[0]
    statistic = 2 * (likelihood.loglikelihood(q, counts, pi) - likelihood.loglikelihood(q, counts, best))
    if statistic <= 2 * cut:
        return True
    if statistic > distributions.chi2_ppf(level, max(len(pi) - int(np.count_nonzero(face)), 1)):
        return False
    return FaceSurveys.at(q, counts, face, best).within(statistic, level)


def vertex_quantile(q: channels.Channel, n: int, answer: int, level: float) -> float:
    """The ``level`` quantile (order statistic of rank ⌈(R + 1)·level⌉) of 2(ℓ(π̂) − ℓ(e_j)) over surveys of n
    reports drawn at the point mass e_j: the exact parametric bootstrap of the test that the distribution is e_j."""
    return VertexSurveys.at(q, n, answer).quantile(level)


#: `VertexSurveys` or a subclass: what `VertexSurveys._kept` gives back is what it was asked for.
_Surveys = TypeVar("_Surveys", bound="VertexSurveys")


class VertexSurveys:
    """The surveys behind the test of a point mass e_j, with each one's statistic T_b = 2(ℓ_b(π̂_b) − ℓ_b(e_j))
    known to lie in [``low``, ``high``].

    The test only asks whether the data's statistic s is within the quantile of rank r = ⌈(R + 1)·level⌉, that is
    whether at least R − r + 1 of the T_b reach s, and most surveys settle that without their fit: any point x of
    the simplex gives ℓ_b(x) ≤ ℓ_b(π̂_b) ≤ ℓ_b(x) + max_a g_a(x) − n_b (the likelihood is concave; g its gradient,
    whose x-weighted mean is n_b), so a few batched EM steps from between e_j and the uniform distribution bound
    every T_b at once. Only the surveys those bounds leave on both sides of s are fitted, as `bootstrap.bootstrap`
    fits them; the answer is the one the whole bootstrap gives (a 0..100 number at n = 10⁴: sixteen point masses
    tested, 3.5 s of fits before, none needed now). The bounds and the fits are kept for the next test."""

    #: EM steps per round, and rounds before the undecided surveys are fitted.
    STEPS, ROUNDS = 10, 6
    _KEPT: dict = {}
    #: The surveys and the points behind their bounds are dropped past this many bytes in all (a 0..1000 grid's: 6.4 MB
    #: a vertex; a 0..10,000 grid's 64 MB, kept one at a time).
    KEPT_BYTES = 64 * 2**20

    def __init__(self, q: channels.Channel, n: int, answer: int):
        k = q.shape[1]
        self.q, self.vertex = q, likelihood.point_mass(k, answer)
        # Seeded by the point mass itself: exact, so no last bit can move it, and each vertex draws its own surveys.
        _, self.draws = bootstrap.draw_surveys(q, self.vertex, n, counts=self.vertex)
        self.totals = self.draws.sum(axis=1)
        self.at_vertex = loglikelihoods(q, self.draws, np.broadcast_to(self.vertex, (len(self.draws), k)))
        self.points = np.tile(0.5 * self.vertex + 0.5 / k, (len(self.draws), 1))
        self.rounds = 0
        self.low, self.high = self._bounds()
        self.exact = np.zeros(len(self.draws), dtype=bool)
        # One test at a time tightens the bounds (a page's request and the background thread may test the same mass).
        self._lock = threading.Lock()

    @classmethod
    def at(cls, q: channels.Channel, n: int, answer: int) -> "VertexSurveys":
        key = (bootstrap._seed(q, likelihood.point_mass(q.shape[1], answer), n), q.shape)
        return cls._kept(key, lambda: cls(channels.as_channel(q), n, answer))

    @classmethod
    def _kept(cls: type[_Surveys], key, make: Callable[[], _Surveys]) -> _Surveys:
        """The surveys kept under ``key``, made (``make()``) when not kept; all dropped past `KEPT_BYTES`."""
        if key not in cls._KEPT:
            if sum(kept.points.nbytes + kept.draws.nbytes for kept in cls._KEPT.values()) > cls.KEPT_BYTES \
                    or len(cls._KEPT) > 4096:
                cls._KEPT.clear()
            cls._KEPT[key] = make()
        return cls._KEPT[key]

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        gap = np.empty(len(self.draws))
        for rows in bootstrap.row_blocks(len(self.draws), self.draws.shape[1]):
            weights = _report_weights(self.q, self.draws[rows], self.points[rows])
            gap[rows] = channels.pulled_back(self.q, weights).max(axis=1) - self.totals[rows]
        low = 2 * (loglikelihoods(self.q, self.draws, self.points) - self.at_vertex)
        return low, low + 2 * np.clip(gap, 0, None)

    def _em_round(self) -> None:
        undecided = ~self.exact
        points, draws = self.points[undecided], self.draws[undecided]
        totals = self.totals[undecided]
        for _ in range(self.STEPS):
            check_time()
            for rows in bootstrap.row_blocks(len(draws), draws.shape[1]):
                weights = _report_weights(self.q, draws[rows], points[rows])
                points[rows] = points[rows] * channels.pulled_back(self.q, weights) / totals[rows, None]
        self.points[undecided] = points
        low, high = self._bounds()
        # A bound only ever tightens: each round's is valid, so keep the better of the two.
        self.low[undecided] = np.maximum(self.low, low)[undecided]
        self.high[undecided] = np.minimum(self.high, high)[undecided]
        self.rounds += 1

    def _fit(self, rows: np.ndarray) -> None:
        fits = bootstrap.fit_surveys(self.q, self.draws[rows], self.vertex)
        statistics = 2 * (loglikelihoods(self.q, self.draws[rows], fits) - self.at_vertex[rows])
        self.low[rows] = self.high[rows] = statistics
        self.exact[rows] = True

    def _needed(self, level: float) -> int:
        replicates = len(self.draws)
        return replicates - min(math.ceil((replicates + 1) * level), replicates) + 1

    def within(self, statistic: float, level: float) -> bool:
        """Is ``statistic`` at most the ``level`` quantile of the T_b (`_rank_quantile`, without computing it)?"""
        with self._lock:
            return self._within(statistic, level)

    def _within(self, statistic: float, level: float) -> bool:
        needed, batch = self._needed(level), 16
        while True:
            surely, maybe = int((self.low >= statistic).sum()), int((self.high >= statistic).sum())
            if surely >= needed:
                return True
            if maybe < needed:
                return False
            undecided = np.flatnonzero((self.low < statistic) & (self.high >= statistic))
            if self.rounds < self.ROUNDS:
                self._em_round()
                continue
            # Fit the surveys most likely to settle it first: the highest when it looks within, else the lowest; in
            # batches that double while it stays unsettled (a flat likelihood leaves most surveys undecided, and a
            # batch of 16 at a time spent more on each call than on its fits).
            middle = (self.low[undecided] + self.high[undecided]) / 2
            likely_within = surely + int((middle >= statistic).sum()) >= needed
            order = np.argsort(-middle if likely_within else middle, kind="stable")
            self._fit(undecided[order[:batch]])
            batch *= 2

    def quantile(self, level: float) -> float:
        with self._lock:
            if not self.exact.all():
                self._fit(np.flatnonzero(~self.exact))
            return _rank_quantile(np.clip(self.low, 0, None), level)


class FaceSurveys(VertexSurveys):
    """`VertexSurveys` for a face of the simplex: surveys drawn at ``best`` (the counts' best point on the face, the
    null the end is tested against), each one's statistic T_b = 2(ℓ_b(π̂_b) − max over the face of ℓ_b), bounded by
    EM steps and fitted only where the bounds leave the test open. The face's own maxima are fitted together (a bin's
    few values: `bootstrap.maximise_each`). Seeded by the counts and the face."""

    def __init__(self, q: channels.Channel, counts: np.ndarray, face: np.ndarray, best: np.ndarray):
        k, n = q.shape[1], int(np.sum(counts))
        self.q, self.vertex = q, np.asarray(best, dtype=float)
        _, self.draws = bootstrap.draw_surveys(q, self.vertex, n, counts=np.concatenate([counts, face]).astype(float))
        self.totals = self.draws.sum(axis=1)
        columns = np.flatnonzero(face)
        on_face = channels.columns(q, columns)
        start = self.vertex[columns] / self.vertex[columns].sum()
        self.at_vertex = loglikelihoods(on_face, self.draws, bootstrap.maximise_each(on_face, self.draws, start))
        self.points = np.tile(0.5 * self.vertex + 0.5 / k, (len(self.draws), 1))
        self.rounds = 0
        self.low, self.high = self._bounds()
        self.exact = np.zeros(len(self.draws), dtype=bool)
        self._lock = threading.Lock()

    @classmethod
    def at(cls, q: channels.Channel, counts: np.ndarray, face: np.ndarray,  # type: ignore[override]  # a face's own null
           best: np.ndarray) -> "FaceSurveys":
        key = ("face", bootstrap._seed(q, np.concatenate([counts, face]).astype(float), int(np.sum(counts))), q.shape)
        return cls._kept(key, lambda: cls(channels.as_channel(q), np.asarray(counts), np.asarray(face, dtype=bool), best))
