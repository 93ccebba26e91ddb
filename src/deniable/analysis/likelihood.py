"""Maximum likelihood on the probability simplex for a randomized-response channel, with a certificate.

The reports of n respondents are multinomial with rates λ = Qπ, so the log-likelihood

    ℓ(π) = Σ_r c_r log (Qπ)_r

is concave in π. Its maximum over the simplex is characterised by the KKT conditions: with the
gradient g_j = Σ_r c_r Q_rj / (Qπ)_r (whose π-weighted mean is exactly n),

    g_j = n where π_j > 0,    g_j ≤ n where π_j = 0,

and concavity turns them into a bound: ℓ(π*) − ℓ(π) ≤ max_j g_j − n for every feasible π. That
bound is the certificate every estimate carries (`Certificate.optimality_gap`).

The maximiser is a constrained Newton method (Wang 2007, "On fast computation of the nonparametric
maximum likelihood estimate of a mixing distribution", JRSS B): each step maximises the exact
second-order model of ℓ over the simplex face spanned by the current support and every coordinate
whose gradient exceeds the multiplier, then backtracks along the segment to the model's maximiser.
Why this and not EM: EM's multiplicative update can never revive a coordinate that reached 0, so an
accelerated EM can stop in a wrong corner and look converged (it has). Here a zero coordinate
whose gradient says it should be positive re-enters the next model, the step is Newton's (quadratic
convergence, so the certificate is reached to ~1e-12 in a handful of steps), and the stopping rule *is*
the certificate rather than a small change between iterates.

The same solver maximises ℓ(π) + τ·aᵀπ (a linear tilt), which traces the profile likelihood of any
linear functional aᵀπ (one share, a grid mean): `profile_interval`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from deniable.client.errors import DeniableWarning

from . import channels
from .deadline import check_time
from .errors import AnalysisError

#: Relative KKT tolerance: |g_j/n − 1| on the support and (g_j/n − 1)₊ off it must not exceed it.
KKT_TOLERANCE = 1e-9
#: Entries of a structure's columns written at once for the curvature (16 MB): `_Problem.curvature`.
CURVATURE_BLOCK = 1 << 21
#: Above this many answers the solver starts from the best single answer and grows the support
#: through local maxima of the gradient (numeric grids); below it, from the uniform distribution.
SPARSE_START_ABOVE = 256


class ConvergenceWarning(DeniableWarning):
    """The maximiser stopped before its certificate met the tolerance; the estimate may not be the maximum."""


@dataclass(frozen=True)
class Certificate:
    """Evidence that an estimate maximises the likelihood on its parameter space.

    ``kkt_residual``: the worst relative violation of the KKT conditions (≤ ``tolerance`` when certified);
    ``optimality_gap``: an upper bound on how far the log-likelihood of the estimate can be below the
    maximum (max_j g_j − n, from concavity); ``unique``: False when other parameter values reach the same
    likelihood (the data or the channel cannot tell them apart), None when not examined.
    """

    kkt_residual: float
    optimality_gap: float
    iterations: int
    tolerance: float = KKT_TOLERANCE
    unique: bool | None = None

    @property
    def converged(self) -> bool:
        return self.kkt_residual <= self.tolerance

    @staticmethod
    def worst(certificates) -> "Certificate":
        """One certificate for several independent problems (the options of a multi-select question)."""
        certificates = list(certificates)
        uniques = [c.unique for c in certificates]
        return Certificate(max(c.kkt_residual for c in certificates), sum(c.optimality_gap for c in certificates),
                           max(c.iterations for c in certificates), max(c.tolerance for c in certificates),
                           None if None in uniques else all(uniques))


class _Problem:
    """max f(x) = Σ_r c_r log (b + Ax)_r + tᵀx over the simplex, on the observed rows (c_r > 0) only.
    The offset b (default 0) holds the part of the rates that a fixed share contributes (`profile_loglikelihood`).
    A number's long grid is applied through its structure (`channels.structure`): no copy of the observed rows, and
    O(k + R) products instead of O(k·R). ``face``: the answers x may hold (a mask; None: all), for the best point of a
    face of the simplex through a structure, whose columns of the face are not written out."""

    def __init__(self, q: channels.Channel, counts: np.ndarray, tilt: np.ndarray | None = None,
                 offset: np.ndarray | None = None, face: np.ndarray | None = None):
        observed = counts > 0
        self.face = face
        self.q, self.observed = q, observed
        self.structure = channels.structure(q)
        self.c = counts[observed].astype(float)
        self.n = float(self.c.sum())
        self.tilt = tilt
        self.offset = None if offset is None else np.asarray(offset, dtype=float)[observed]
        if self.structure is None:
            self.a = np.ascontiguousarray(channels.written_out(q, "the fit")[observed], dtype=float)
            reachable = self.a.max(axis=1, initial=0.0) + (0.0 if self.offset is None else self.offset)
            if (reachable <= 0).any():
                raise AnalysisError("a report was observed that no answer can produce under this channel")
        # A structured channel's every entry is positive: every report is reachable from every answer.

    def columns(self, answers: np.ndarray, rows=slice(None)) -> np.ndarray:
        """The observed rows of the channel's columns ``answers`` (``rows``: some of them, by position)."""
        if self.structure is None:
            return self.a[rows, answers] if isinstance(rows, slice) else self.a[rows[:, None], answers]
        return channels.columns(self.q, answers, np.flatnonzero(self.observed)[rows])

    def curvature(self, answers: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """Σ_r c_r/λ_r² q_r q_rᵀ over the observed reports, on ``answers``: the log-likelihood's negated Hessian. A
        structure's columns are written a block of reports at a time: a 0..10,000 grid's 30,001 reports on a face of
        a thousand answers would be 240 MB at once."""
        scale = np.sqrt(self.c) / rates
        if self.structure is None:
            weighted = self.a[:, answers] * scale[:, None]
            return weighted.T @ weighted
        block = max(1, CURVATURE_BLOCK // max(len(answers), 1))
        total = np.zeros((len(answers), len(answers)))
        for first in range(0, len(scale), block):
            rows = np.arange(first, min(first + block, len(scale)))
            weighted = self.columns(answers, rows) * scale[rows, None]
            total += weighted.T @ weighted
        return total

    def rates(self, x):
        # The maximum of a long grid often sits on a few answers (4 of 1,001): multiply by those columns only, where
        # the whole matrix would cost a k × k product per line-search step.
        support = x.nonzero()[0]
        if self.structure is not None:
            product = self.structure.matvec(x)[self.observed]
        else:
            product = self.a[:, support] @ x[support] if 4 * len(support) < len(x) else self.a @ x
        return product if self.offset is None else self.offset + product

    def value(self, x, rates=None):
        rates = self.rates(x) if rates is None else rates
        if (rates <= 0).any():
            return -math.inf
        result = float(self.c @ np.log(rates))
        return result + float(self.tilt @ x) if self.tilt is not None else result

    def gradient(self, rates):
        if self.structure is None:
            g = self.a.T @ (self.c / rates)
        else:
            weights = np.zeros(len(self.observed))
            weights[self.observed] = self.c / rates
            g = self.structure.rmatvec(weights)
        return g + self.tilt if self.tilt is not None else g

    def on_face(self, gradient: np.ndarray) -> np.ndarray:
        """The gradient where x may move, −inf off the face: what the search and the certificate look at."""
        return gradient if self.face is None else np.where(self.face, gradient, -np.inf)

    def uniform(self) -> np.ndarray:
        k = self.q.shape[1]
        return np.full(k, 1.0 / k) if self.face is None else self.face / np.count_nonzero(self.face)

    def violations(self, x, gradient) -> tuple[float, float]:
        """(relative KKT residual, optimality gap): the certificate's two figures."""
        multiplier = float(x @ gradient)
        off = max(float((self.on_face(gradient) - multiplier).max()), 0.0)
        on = float(np.abs(gradient[x > 0] - multiplier).max())
        return max(off, on) / self.n, off

    def certificate(self, x, gradient, iterations) -> Certificate:
        return Certificate(*self.violations(x, gradient), iterations)

    def start(self) -> np.ndarray:
        k = self.q.shape[1]
        uniform = self.uniform()
        if k <= SPARSE_START_ABOVE:
            return uniform
        vertex_values = None
        if self.structure is not None:
            weights = np.zeros(len(self.observed))
            weights[self.observed] = self.c
            vertex_values = self.structure.vertex_loglikelihoods(weights)  # O(k + R), not the matrix's logarithms
        if vertex_values is None and self.structure is not None:
            # A layered structure (a panel's) has no such form: its columns a block at a time, never all written out.
            blocks = np.array_split(np.arange(k), max(1, k // 256))
            with np.errstate(divide="ignore"):
                vertex_values = np.concatenate([self.c @ np.log(self.columns(block)) for block in blocks])
        elif vertex_values is None:
            with np.errstate(divide="ignore"):
                vertex_values = self.c @ np.log(self.columns(np.arange(k)))
        best = int(np.argmax(self.on_face(vertex_values)))
        if not math.isfinite(vertex_values[best]):
            return uniform
        x = np.zeros(k)
        x[best] = 1.0
        return x


def _simplex_qp(h_matrix: np.ndarray, gradient: np.ndarray, x: np.ndarray, max_iterations: int) -> np.ndarray:
    """The step d maximising gᵀd − ½dᵀHd subject to x + d in the simplex (x + d ≥ 0, Σd = 0), by a primal
    active-set method started at d = 0. The unknown is the step itself, not x + d: near the optimum the
    step is many orders smaller than x and solving for x + d would lose it to cancellation. H is positive
    semidefinite; a tiny ridge keeps each equality-constrained subproblem nonsingular (it only shortens
    steps along directions the data do not inform)."""
    size = len(x)
    ridge = 1e-12 * max(float(h_matrix.trace()) / size, 1e-300)
    h_matrix = h_matrix.copy()
    h_matrix.flat[::size + 1] += ridge
    step = np.zeros(size)
    free = x > 0
    scale = max(float(np.abs(gradient).max()), 1e-300)
    released = None
    # Each pass is a few dozen operations on arrays of a few elements: numpy's per-call overhead is most of the
    # fit's time, so the small systems go to LAPACK's dgesv directly (numpy.linalg.solve's checks cost 4× the
    # solve; the same routine, the same bits).
    for _ in range(max_iterations):
        check_time()
        index = free.nonzero()[0]
        residual = gradient - h_matrix @ step  # the model's gradient at x + step
        m = len(index)
        if m == 0:
            return step
        kkt = np.empty((m + 1, m + 1))
        kkt[:m, :m] = h_matrix[index[:, None], index]
        kkt[:m, m] = kkt[m, :m] = 1.0
        kkt[m, m] = 0.0
        right = np.zeros(m + 1)
        right[:m] = residual[index]
        solution = _solve(kkt, right)
        move, multiplier = solution[:m], solution[m]
        if not math.isfinite(solution.sum()):  # a NaN or an infinity anywhere
            return step
        shrinking = (move < 0).nonzero()[0]
        length, blocking = 1.0, None
        if len(shrinking):
            ratios = (x[index[shrinking]] + step[index[shrinking]]) / -move[shrinking]
            nearest = int(ratios.argmin())
            if ratios[nearest] < 1.0:
                length, blocking = float(ratios[nearest]), shrinking[nearest]
        if length <= 0.0 and index[blocking] == released:
            # The released bound blocks at once: round-off in a nearly singular model. The model cannot be
            # improved further here; the outer iteration's certificate judges the point reached.
            return step
        step[index] += length * move
        released = None
        if length < 1.0:
            step[index[blocking]] = -x[index[blocking]]  # exactly at its bound
            free[index[blocking]] = False
            continue
        # The minimum on this face is reached: release the bound whose multiplier has the wrong sign.
        violation = gradient - h_matrix @ step - multiplier
        violation[free] = -np.inf
        worst = int(violation.argmax())
        if violation[worst] <= 1e-10 * scale:
            return step
        free[worst] = True
        released = worst
    return step


def _solve(matrix: np.ndarray, right: np.ndarray) -> np.ndarray:
    """matrix⁻¹·right by LU with partial pivoting (LAPACK dgesv, through numpy: scipy.linalg's own took 40 ms to
    import in every process that fits); where the matrix is singular, the least-squares solution (an SVD, 15× the
    cost)."""
    try:
        return np.linalg.solve(matrix, right)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(matrix, right, rcond=None)[0]


def _candidates(x, gradient, multiplier) -> np.ndarray:
    """The face of the next model: the support and the coordinates whose gradient exceeds the multiplier
    (on long ordered grids only the local maxima of the gradient among them, as in Wang's method)."""
    rising = gradient > multiplier
    if len(x) > SPARSE_START_ABOVE:
        padded = np.concatenate([[-np.inf], gradient, [-np.inf]])
        rising &= (gradient >= padded[:-2]) & (gradient >= padded[2:])
    return ((x > 0) | rising).nonzero()[0]


#: The share of |ℓ| that Armijo's rule forgives (its last few ulps): near the optimum the gain of a Newton step is below
#: ℓ's round-off, and refusing it would stall the iteration short of its certificate. This maximiser's and the batched
#: one's (`bootstrap`).
FORGIVEN_ROUNDOFF = 8 * float(np.finfo(float).eps)

#: Newton steps after which a fit still short of its certificate takes `EM_STEPS` EM steps (see `maximise`).
NEWTON_BEFORE_EM = 60
EM_STEPS = 200


def maximise(q: channels.Channel, counts: np.ndarray, *, tilt: np.ndarray | None = None, offset: np.ndarray | None = None,
             start: np.ndarray | None = None, tolerance: float = KKT_TOLERANCE,
             max_iterations: int = 1000, face: np.ndarray | None = None) -> tuple[np.ndarray, Certificate]:
    """The maximiser of Σ_r c_r log (offset + Qπ)_r (+ tiltᵀπ) over the simplex, and its certificate.

    ``q`` is reports × answers, ``counts`` one count per report. Raises nothing on slow convergence:
    the certificate says whether the tolerance was met (callers warn)."""
    counts = np.asarray(counts, dtype=float)
    if counts.sum() <= 0:
        raise AnalysisError("no reports to estimate from")
    problem = _Problem(channels.as_channel(q), counts, tilt, offset, face)
    x = problem.start() if start is None else np.asarray(start, dtype=float).copy()
    if not math.isfinite(problem.value(x)):
        x = problem.uniform()
    for iteration in range(max_iterations + 1):
        rates = problem.rates(x)
        gradient = problem.gradient(rates)
        if problem.violations(x, gradient)[0] <= tolerance * 0.01 or iteration == max_iterations:
            break
        if iteration == NEWTON_BEFORE_EM and tilt is None and offset is None:
            # Newton's quadratic model fits log x badly where a share is tiny but not zero (one report in 15,000 of
            # a public choice), and its steps crawl. The EM update x ← x∘∇/(xᵀ∇) climbs the likelihood every step
            # (it is exact at once for a public question); Newton goes on from where it stops.
            for _ in range(EM_STEPS):
                x = x * gradient / float(x @ gradient)
                gradient = problem.gradient(problem.rates(x))
            continue
        multiplier = float(x @ gradient)
        face = _candidates(x, problem.on_face(gradient), multiplier)
        hessian = problem.curvature(face, rates)
        step = _simplex_qp(hessian, gradient[face], x[face], 20 * len(face) + 50)
        direction = np.zeros(len(x))
        direction[face] = step
        slope = float(gradient @ direction)
        if not slope > 0:
            # The model offers nothing (round-off): move toward the most violated vertex instead.
            direction = -x.copy()
            direction[int(np.argmax(problem.on_face(gradient)))] += 1.0
            slope = float(gradient @ direction)
        current = problem.value(x, rates)
        forgiven = FORGIVEN_ROUNDOFF * abs(current)  # Armijo's rule, with the last few ulps of ℓ forgiven
        length = 1.0
        while length > 1e-12:
            candidate = x + length * direction
            candidate[candidate < 0] = 0.0
            if problem.value(candidate) >= current + 1e-4 * length * slope - forgiven:
                break
            length /= 2
        else:
            break  # no ascent possible in floating point: the certificate below says how close we are
        x = candidate / candidate.sum()
    rates = problem.rates(x)
    return x, problem.certificate(x, problem.gradient(rates), iteration)


def certified_maximum(q: channels.Channel, counts: np.ndarray) -> tuple[np.ndarray, "Certificate"]:
    """The maximum-likelihood shares on the simplex and the certificate that proves them (KKT residual,
    optimality gap, iterations, uniqueness): what every estimate of record is built from."""
    marginal = channels.marginal_channel(q)  # k-ary randomized response: the closed form, which the certificate proves
    pi, found = maximise(q, counts, start=None if marginal is None else marginal.simplex_maximum(counts))
    checked = certify(q, counts, pi)
    return pi, Certificate(checked.kkt_residual, checked.optimality_gap, found.iterations, checked.tolerance,
                           checked.unique)


def symmetric_maximum(channel: channels.BinaryChannel, counts: np.ndarray,
                      tolerance: float = KKT_TOLERANCE) -> tuple[np.ndarray, Certificate] | None:
    """`certified_maximum` for a channel Q = (p − o)I + o11ᵀ (k-ary randomized response, a public choice; ``channel``
    holds its (p, o)), from its structure in O(k log k) with no k × k matrix: the closed form
    (`BinaryChannel.simplex_maximum`) and its certificate, whose gradient is g_j = o·Σ_r c_r/λ_r + (p − o)·c_j/λ_j.
    None when the closed form does not exist or its certificate fails the tolerance (the caller goes to the
    dense route); the same numbers as `certify` on the written-out matrix (a test holds them together)."""
    pi = channel.simplex_maximum(counts)
    if pi is None:
        return None
    counts = np.asarray(counts, dtype=float)
    observed = counts > 0
    rates = channel.rate(pi)
    if (rates[observed] <= 0).any():
        return None
    ratio = np.zeros(len(counts))
    ratio[observed] = counts[observed] / rates[observed]
    gap = channel.p - channel.q
    gradient = channel.q * float(ratio.sum()) + gap * ratio
    n = float(counts.sum())
    multiplier = float(pi @ gradient)
    support = pi > 0
    off = max(float((gradient - multiplier).max()), 0.0)
    on = float(np.abs(gradient[support] - multiplier).max())
    # Another maximiser keeps the rates of every observed report (ℓ is strictly concave in them), and Q_obs d = 0 with
    # Σd = 0 leaves d free only on tight answers no one reported: a second maximiser exists iff two or more of those
    # are tight and one of them has a share to give (the rank test and LP of `_unique`, solved by hand).
    free = (gradient >= multiplier - tolerance * n) & ~observed
    unique = not (np.count_nonzero(free) >= 2 and bool(support[free].any()))
    certificate = Certificate(max(off, on) / n, off, 0, tolerance, unique)
    return (pi, certificate) if certificate.converged else None


def loglikelihood(q: channels.Channel, counts: np.ndarray, pi: np.ndarray) -> float:
    """Σ_r c_r log (Qπ)_r over the observed reports (−inf when an observed report has rate 0)."""
    return _Problem(channels.as_channel(q), np.asarray(counts, dtype=float)).value(np.asarray(pi, dtype=float))


def certify(q: channels.Channel, counts: np.ndarray, pi: np.ndarray, tolerance: float = KKT_TOLERANCE) -> Certificate:
    """The KKT certificate of ``pi`` (however it was found), with the uniqueness check."""
    q, counts, pi = channels.as_channel(q), np.asarray(counts, dtype=float), np.asarray(pi, dtype=float)
    problem = _Problem(q, counts)
    rates = problem.rates(pi)
    if (rates <= 0).any():  # an observed report made impossible: infinitely far from the maximum
        return Certificate(math.inf, math.inf, 0, tolerance, None)
    gradient = problem.gradient(rates)
    found = problem.certificate(pi, gradient, 0)
    return Certificate(found.kkt_residual, found.optimality_gap, 0, tolerance,
                       _unique(problem.columns, gradient, pi, tolerance * problem.n))


def _unique(columns, gradient: np.ndarray, pi: np.ndarray, slack: float) -> bool:
    """Is π the only maximiser? Every maximiser has the same rates on the observed reports (ℓ is strictly
    concave in them) and lives on the answers whose gradient equals the multiplier. So another one
    exists iff some d ≠ 0 on those answers has Q_obs d = 0, Σd = 0 and d ≥ 0 where π is 0. ``columns`` gives the
    observed rows of the channel's columns (`_Problem.columns`)."""
    multiplier = float(pi @ gradient)
    tight = np.flatnonzero(gradient >= multiplier - slack)
    if len(tight) <= 1:
        return True
    system = np.vstack([columns(tight), np.ones(len(tight))])
    if np.linalg.matrix_rank(system) == len(tight):
        return True
    positive = pi[tight] > 0
    if np.linalg.matrix_rank(system[:, positive]) < positive.sum():
        return False  # a direction within the support: both signs stay feasible
    # Any other direction must raise some zero share: ask an LP for the largest such rise.
    bounds = [(-1.0, 1.0) if p else (0.0, 1.0) for p in positive]
    from scipy import optimize  # here, not at the top: planning fits (`bootstrap`) without loading scipy

    result = optimize.linprog(-np.where(positive, 0.0, 1.0), A_eq=system, b_eq=np.zeros(len(system)), bounds=bounds,
                              method="highs")
    return not (result.status == 0 and result.fun is not None and -result.fun > 1e-9)


# --- profile likelihood of a linear functional --------------------------------------------------------

def profile_loglikelihood(q: channels.Channel, counts: np.ndarray, answer: int, share: float, start=None) -> float:
    """max ℓ(π) over the simplex with π[answer] = share, computed directly: π = share·e_j + (1 − share)·ρ
    with ρ free on the other answers (an offset problem, no search). The interval of `profile_interval`
    for e_j is exactly {share : this ≥ ℓ(π̂) − cut}; tests and the coverage study use this to check it."""
    q, counts = np.asarray(q, dtype=float), np.asarray(counts, dtype=float)
    if share >= 1:
        return loglikelihood(q, counts, point_mass(q.shape[1], answer))
    others = np.delete(np.arange(q.shape[1]), answer)
    rho, _ = maximise((1 - share) * q[:, others], counts, offset=share * q[:, answer], start=start)
    pi = np.zeros(q.shape[1])
    pi[others] = (1 - share) * rho
    pi[answer] = share
    return loglikelihood(q, counts, pi)


def point_mass(k: int, answer: int) -> np.ndarray:
    """e_answer among ``k`` answers (not a row of a k × k identity: a long grid's would be 800 MB)."""
    mass = np.zeros(k)
    mass[answer] = 1.0
    return mass


def likelihood_cut(level: float) -> float:
    """Half the χ²₁ quantile: the log-likelihood drop that bounds a ``level`` profile interval."""
    from . import distributions  # here, not at the top: planning fits (`bootstrap`) without loading scipy

    return float(distributions.chi2_ppf(level, 1)) / 2


def profile_interval(q: channels.Channel, counts: np.ndarray, mle: np.ndarray, functional: np.ndarray, cut: float,
                     xtol: float = 1e-10) -> tuple[float, float]:
    """{aᵀπ : max over π ∈ simplex with that value of ℓ(π) ≥ ℓ(π̂) − cut}, for a = ``functional``.

    The profile is concave in the value, so the set is an interval around aᵀπ̂. Each endpoint is where
    the path π(τ) = argmax ℓ(π) + τ·aᵀπ crosses the cut (ℓ falls and aᵀπ rises with τ > 0; both
    reverse for τ < 0); when even the extreme face of the simplex stays above the cut, the endpoint is
    that extreme (the interval reaches the edge of the parameter space)."""
    return profile_end(q, counts, mle, functional, cut, -1.0, xtol), profile_end(q, counts, mle, functional, cut, 1.0, xtol)


def profile_end(q: channels.Channel, counts: np.ndarray, mle: np.ndarray, functional: np.ndarray, cut: float, side: float,
                xtol: float = 1e-10) -> float:
    """One end of `profile_interval`: the lower (``side`` −1) or the upper (+1). A quantile's interval reads one end
    of each distribution function it inverts, never both."""
    q, counts = channels.as_channel(q), np.asarray(counts, dtype=float)
    functional = np.asarray(functional, dtype=float)
    peak = loglikelihood(q, counts, mle)
    centre = float(functional @ mle)
    end = _profile_end(q, counts, mle, functional, side, peak - cut, centre, peak, xtol)
    return min(end, centre) if side < 0 else max(end, centre)


def _profile_end(q, counts, mle, functional, side, threshold, centre, peak, xtol) -> float:
    oriented = side * functional
    extreme = float(oriented.max())
    if side * centre >= extreme - 1e-15 * max(abs(extreme), 1.0):
        return centre
    on_edge = oriented >= extreme - 1e-12 * max(abs(extreme), 1.0)
    face = np.flatnonzero(on_edge)
    # The best the likelihood can do at the edge of the parameter space in this direction (none at all
    # when the answers of that edge cannot produce a report that was observed: a public question's).
    if len(face) == 1:
        best_on_face = loglikelihood(q, counts, point_mass(len(mle), face[0]))
    elif isinstance(q, channels.FoldedGeometric):  # every report reachable; the face's columns never written out
        best_on_face = loglikelihood(q, counts, maximise(q, counts, face=on_edge)[0])
    else:
        face_columns = q[:, face]
        if (counts[face_columns.sum(axis=1) <= 0] > 0).any():
            best_on_face = -math.inf
        else:
            sub, _ = maximise(face_columns, counts)
            best_on_face = loglikelihood(face_columns, counts, sub)
    if best_on_face >= threshold:
        return side * extreme
    # Along π(τ) the log-likelihood falls like peak − ½·m'(0)·τ² near τ = 0, so Newton's method runs in
    # u = τ² (exact for a quadratic profile), with dℓ/du = −m'(τ)/2 where m'(τ) = aᵀdπ/dτ comes from
    # differentiating the tilted KKT conditions on the support. A bracket keeps it safe where the support
    # changes along the path.
    problem = _Problem(q, counts)  # the observed reports' rows, or a number's structure
    pi, value = mle, peak
    # Where the functional's answers are all at 0 in π̂, nothing moves until τ lifts one of them to the
    # multiplier: the path starts at that τ.
    gradient = problem.gradient(problem.rates(mle))
    multiplier, level = float(mle @ gradient), float(oriented @ mle)
    rising = oriented > level
    u = float(np.min((multiplier - gradient[rising]) / (oriented[rising] - level))) ** 2 if rising.any() else 0.0
    u = u if (mle[rising] == 0).all() else 0.0
    u_low, u_high = u, math.inf
    # The functional at the bracket's two ends. The search stops when they meet, not when two iterates do: the path
    # reaches the face beyond the crossing at a finite τ and stays there, so two iterates past it are equal while the
    # crossing lies far back (an ordinal share of 0.996 at n = 3,000 once got the interval [0, 1], not [0.77, 1]).
    inside, outside = centre, math.nan
    for _ in range(200):
        slope = _path_slope(problem, pi, oriented, math.sqrt(u))
        if value >= threshold:
            if u >= u_low:
                u_low, inside = u, float(functional @ pi)
        elif u <= u_high:
            u_high, outside = u, float(functional @ pi)
        if abs(inside - outside) <= xtol:
            break
        newton = u + 2 * (value - threshold) / slope if slope > 0 else math.inf
        if u_low < newton < u_high:
            proposal = newton
        elif math.isfinite(u_high):
            proposal = (u_low + u_high) / 2
        else:
            proposal = 4 * u_low if u_low > 0 else 1.0
        pi, _ = maximise(q, counts, tilt=math.sqrt(proposal) * oriented, start=pi)
        value, u = loglikelihood(q, counts, pi), proposal
        if abs(value - threshold) <= 1e-9:
            break
        if math.isfinite(u_high) and u_high - u_low <= 1e-14 * u_high:
            break
    return float(functional @ pi)


def _path_slope(problem: _Problem, pi, oriented, tau) -> float:
    """m'(τ) = aᵀdπ/dτ on the tilted path, from [H 1; 1ᵀ 0][dπ; dν] = [a; 0] on the answers whose tilted
    gradient meets the multiplier (the support, and any answer about to enter it)."""
    rates = problem.rates(pi)
    tilted = problem.gradient(rates) + tau * oriented
    support = np.flatnonzero((pi > 0) | (tilted >= float(pi @ tilted) * (1 - 1e-9)))
    m = len(support)
    kkt = np.zeros((m + 1, m + 1))
    kkt[:m, :m] = problem.curvature(support, rates)
    kkt[:m, m] = kkt[m, :m] = 1.0
    rhs = np.concatenate([oriented[support], [0.0]])
    solution = _solve(kkt, rhs)
    return float(oriented[support] @ solution[:m])


def warn_if_uncertified(certificate: Certificate, what: str, stacklevel: int = 3) -> None:
    if not certificate.converged:
        warnings.warn(f"{what}: the maximiser stopped with KKT residual {certificate.kkt_residual:.2e} "
                      f"(tolerance {certificate.tolerance:.0e}); the estimate may not be the maximum-likelihood one",
                      ConvergenceWarning, stacklevel=stacklevel)
