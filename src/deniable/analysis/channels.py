"""The channel as numbers: the exact channel of a mechanism as a float matrix, its left inverse, and the
two-number form of binary channels. numpy only, so planning (`deniable survey check`) loads no scipy."""

from __future__ import annotations

import functools
import math
import threading
import weakref
from dataclasses import dataclass
from typing import Union

import numpy as np

from deniable.client.compliance import GroupedMechanism
from deniable.client.laplace import LaplaceMechanism
from deniable.client.mechanisms import Mechanism, OrdinalMechanism, SymmetricMechanism, UnaryMechanism
from deniable.client.panels import MemoizedLaplace

from .errors import AnalysisError

#: The longest number grid whose channel is written out as a matrix (3,001 × 1,001: 24 MB); a longer grid's channel is
#: its structure alone (`FoldedGeometric`: 0..10,000 written out would be 2.4 GB), which the fit, its certificate, the
#: bootstrap, the fit test, the unbiased estimate and the mean's interval read as it is.
WRITTEN_OUT_POINTS = 1001

#: A channel as the analysis passes it: the matrix written out, or (a number grid longer than `WRITTEN_OUT_POINTS`)
#: its structure alone.
Channel = Union[np.ndarray, "FoldedGeometric"]


def channel_matrix(mechanism: Mechanism) -> Channel:
    """Q[r, a] as floats (reports × answers). The shapes with a formula are built from it with numpy
    (a 1000-option k-ary channel, a 1001-point number grid: milliseconds, where converting a million
    exact fractions takes seconds); any other channel is converted entry by entry from its exact form.
    Tests compare both routes entry by entry. A design that measures compliance is analysed over its
    latent classes of respondents (cheaters, lying carriers as classes of their own): its columns are those.
    A number's grid longer than `WRITTEN_OUT_POINTS` is given as its structure, not a matrix."""
    if isinstance(mechanism, GroupedMechanism):
        return np.array([[float(p) for p in column] for _, column in mechanism.latent_classes]).T
    if isinstance(mechanism, SymmetricMechanism):
        matrix = np.full((len(mechanism.answers),) * 2, float(mechanism.other))
        np.fill_diagonal(matrix, float(mechanism.keep))
        return matrix
    if isinstance(mechanism, OrdinalMechanism):
        k = len(mechanism.answers)
        distance = np.abs(np.subtract.outer(np.arange(k), np.arange(k)))
        weights = float(mechanism.base) ** distance  # w^|r − a| ≤ 1: no overflow at any k
        return weights / weights.sum(axis=0)
    if isinstance(mechanism, LaplaceMechanism):
        if mechanism.alpha is None:
            return np.eye(mechanism.points + 1)  # a public number: reported as answered
        keep, other = 1.0, 0.0
        if isinstance(mechanism, MemoizedLaplace):  # a repeated survey's number: the layer re-randomizes the window
            keep, other = float(mechanism.layer.keep), float(mechanism.layer.other)
        return _number_channel(float(mechanism.alpha), mechanism.points, keep, other)
    return np.array([[float(p) for p in row] for row in mechanism.channel()])


@functools.lru_cache(maxsize=8)
def _number_channel(alpha: float, points: int, keep: float, other: float) -> np.ndarray | FoldedGeometric:
    """A number's channel (reports −N..2N), kept for the next estimate of the same question (a 0..1000 grid's takes
    0.1 s to write out and 24 MB): read-only, so every holder sees the same numbers. Past `WRITTEN_OUT_POINTS`, its
    structure alone."""
    structure = FoldedGeometric(alpha, points, keep, other)
    structured = points >= FoldedGeometric.FASTER_FROM and points * -math.log(alpha) <= FoldedGeometric.LARGEST_EXPONENT
    if structured and points + 1 > WRITTEN_OUT_POINTS:
        return structure
    matrix = structure.columns(np.arange(points + 1))
    if structured:
        return _remember_structure(matrix, structure)
    matrix = np.ascontiguousarray(matrix)  # a short grid's is read by rows (products with the matrix written out)
    matrix.flags.writeable = False
    return matrix


def written_out(q: Channel, what: str) -> np.ndarray:
    """The channel as a matrix, for a computation that reads its entries (a joint channel, a left inverse written
    out); a number grid too long to write out is refused, naming ``what`` would need it."""
    if isinstance(q, FoldedGeometric):
        raise AnalysisError(f"{what}: a number grid of {q.points + 1:,} values is too long to write out its channel "
                            f"(at most {WRITTEN_OUT_POINTS:,}); coarsen the question's step")
    return q


def left_inverse(q: np.ndarray) -> np.ndarray:
    known = structure(q)
    if known is not None:  # a long number grid's: two SVDs of half its size, a third of a second at 0..1000, once
        found = _LEFT_INVERSES.get(known)
        if found is None:
            found = _mirrored_pinv(q)
            found.flags.writeable = False
            with _LEFT_INVERSES_LOCK:  # a page's request and the background thread may both have worked it out
                while len(_LEFT_INVERSES) >= 4:
                    _LEFT_INVERSES.pop(next(iter(_LEFT_INVERSES)))
                _LEFT_INVERSES[known] = found
        return found
    if q.shape[0] == q.shape[1]:
        return np.linalg.inv(q)
    if np.array_equal(q, q[::-1, ::-1]):
        return _mirrored_pinv(q)
    return np.linalg.pinv(q)


def _mirrored_pinv(q: np.ndarray) -> np.ndarray:
    """``numpy.linalg.pinv(q)`` for a matrix that reversing both its rows and its columns leaves unchanged (a number's
    channel: report −N + i under answer a is report 2N − i under N − a). In the orthonormal bases of mirror-even and
    mirror-odd vectors it is two blocks of half the size, whose singular values together are its own, cut as pinv
    cuts them: two SVDs of a quarter of the work (a 0..1000 grid's 3,001 × 1,001 channel: 0.6 s → 0.15 s)."""
    columns_even, columns_odd = _mirror_halves(q, axis=1)
    blocks = [_mirror_halves(columns_even, axis=0)[0], _mirror_halves(columns_odd, axis=0)[1]]
    decompositions = [np.linalg.svd(block, full_matrices=False) for block in blocks]
    cutoff = 1e-15 * max((s.max(initial=0.0) for _, s, _ in decompositions), default=0.0)  # numpy's default rcond
    inverses = []
    for u, s, vt in decompositions:
        large = s > cutoff
        scaled = np.divide(1.0, s, out=np.zeros_like(s), where=large)
        inverses.append(vt.T @ (scaled[:, None] * u.T))
    rows = q.shape[0]
    even_part = _mirror_join(inverses[0], None, rows, axis=1)
    odd_part = _mirror_join(None, inverses[1], rows, axis=1)
    return _mirror_join(even_part, odd_part, q.shape[1], axis=0)


_HALF_ROOT = np.sqrt(0.5)


def _mirror_halves(matrix: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates along ``axis`` in the mirror-even basis ((e_i + e_{L−1−i})/√2, then e_middle for odd L) and the
    mirror-odd one ((e_i − e_{L−1−i})/√2)."""
    moved = np.moveaxis(matrix, axis, 0)
    half = moved.shape[0] // 2
    first, last = moved[:half], moved[::-1][:half]
    even = (first + last) * _HALF_ROOT
    if moved.shape[0] % 2:
        even = np.concatenate([even, moved[half:half + 1]])
    return np.moveaxis(even, 0, axis), np.moveaxis((first - last) * _HALF_ROOT, 0, axis)


def _mirror_join(even: np.ndarray | None, odd: np.ndarray | None, length: int, axis: int) -> np.ndarray:
    """`_mirror_halves` undone: the vectors of length ``length`` along ``axis`` with these even and odd coordinates
    (None: zero)."""
    half = length // 2
    given = even if even is not None else odd
    assert given is not None, "an even or an odd part is needed"
    # Written in the layout of the result (through a view along ``axis``), with one temporary of half its size: a
    # 0..1000 grid's left inverse, 1,001 × 3,001, took 0.16 s of a cold estimate zeroed first and then added to across
    # its rows.
    result = np.empty((*given.shape[:axis], length, *given.shape[axis + 1:]))
    joined = np.moveaxis(result, axis, 0)
    top, bottom = joined[:half], joined[::-1][:half]
    if even is None:
        top[...] = 0.0
    else:
        even = np.moveaxis(even, axis, 0)
        np.multiply(even[:half], _HALF_ROOT, out=top)
    bottom[...] = top
    if odd is not None:
        odd = np.moveaxis(odd, axis, 0) * _HALF_ROOT
        top += odd
        bottom -= odd
    if length % 2:
        joined[half] = 0.0 if even is None else even[half]
    return result


def symmetric_covariance(channel: "BinaryChannel", rates: np.ndarray) -> np.ndarray:
    """Q⁻¹(diag λ − λλᵀ)Q⁻ᵀ for a k-ary randomized-response channel Q = (p − o)I + o11ᵀ, in closed form: its
    inverse is (I − o11ᵀ)/(p − o) (the columns sum to 1) and (diag λ − λλᵀ) sends 1 to 0, so the product is
    (diag λ − λλᵀ)/(p − o)². O(k²) to write out, no inversion (tests compare it with the dense route)."""
    return (np.diag(rates) - np.outer(rates, rates)) / (channel.p - channel.q) ** 2


def fitted_covariance(q: Channel, pi: np.ndarray) -> np.ndarray:
    """Covariance of the maximum-likelihood estimate for one respondent, at the fitted rates λ = Qπ:
    the inverse Fisher information Qᵀdiag(1/λ)Q, restricted to the simplex (Σπ = 1). For a square
    channel it equals the moment estimator's covariance Q⁻¹(diag λ − λλᵀ)Q⁻ᵀ evaluated at λ = Qπ, so
    wherever the two estimates agree their standard errors agree; for a tall channel (numeric grids)
    it is the smaller, efficient one. A k-ary randomized-response channel takes the closed form; a number's structure
    its own (`FoldedGeometric.fitted_covariance`: what it publishes is read in O(k) by `fitted_variances` and
    `fitted_variance`)."""
    if isinstance(q, FoldedGeometric):
        return q.fitted_covariance(pi)
    marginal = marginal_channel(q)
    if marginal is not None:
        return symmetric_covariance(marginal, q @ pi)
    rates = q @ pi
    reached = rates > 0
    weighted = q[reached] / rates[reached, None]
    information = q[reached].T @ weighted
    try:
        inverse = np.linalg.inv(information)
        if not np.isfinite(inverse).all():
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        inverse = np.linalg.pinv(information, hermitian=True)  # public channels: unreached answers have no variance
    direction = inverse.sum(axis=1)
    return inverse - np.outer(direction, direction) / direction.sum()


def fitted_variances(q, pi: np.ndarray) -> np.ndarray:
    """The diagonal of `fitted_covariance`: each share's variance with one respondent. Through a number's structure
    where it has one, in O(k) and more accurate than the written-out information's inverse (condition 6·10¹² at
    0..1000 ε = 1, where the inverse's figures are good to about 10⁻⁶)."""
    known = structure(q)
    if known is not None:
        return known.fitted_variances(pi)
    return np.diag(fitted_covariance(q, pi)).copy()


def fitted_variance(q, pi: np.ndarray, functional: np.ndarray) -> float:
    """gᵀ·`fitted_covariance`·g, g = ``functional`` (a mean's scores): its variance with one respondent (through a
    number's structure where it has one, as `fitted_variances`)."""
    known = structure(q)
    if known is not None:
        return known.fitted_variance(pi, functional)
    return float(functional @ fitted_covariance(q, pi) @ functional)


@dataclass(frozen=True)
class BinaryChannel:
    """P(report yes | yes) = p, P(report yes | no) = q: λ = q + (p − q)π."""

    p: float
    q: float

    def rate(self, pi):
        return self.q + (self.p - self.q) * pi

    def prevalence(self, rate):
        return (rate - self.q) / (self.p - self.q)

    def unit_variance(self, rate):
        """Variance of the unbiased prevalence estimate from one report at report rate λ."""
        return rate * (1 - rate) / (self.p - self.q) ** 2

    def simplex_maximum(self, counts: np.ndarray) -> np.ndarray | None:
        """The maximum-likelihood shares on the simplex for k-ary randomized response whose every answer has this
        channel (`marginal_channel`), in closed form: Σ_j c_j log(q + (p − q)π_j) is separable, so its KKT conditions
        give π_j = max(c_j/ν − q/(p − q), 0), with ν set by Σπ = 1 (water-filling over the sorted counts, O(k log k)
        where an iterative maximiser works in k² per step). None where p ≤ q (no such channel is built)."""
        gap = self.p - self.q
        if not gap > 0:
            return None
        counts = np.asarray(counts, dtype=float)
        floor = self.q / gap
        descending = np.sort(counts)[::-1]
        levels = np.cumsum(descending) / (1 + floor * np.arange(1, len(counts) + 1))  # ν if the s largest are the support
        support = int(np.count_nonzero(descending > floor * levels))  # the s whose s-th count stays above the floor
        if support == 0:
            return None
        shares = np.maximum(counts / levels[support - 1] - floor, 0.0)
        return shares / shares.sum()  # (1 + floor) − floor is not always 1 in floats


def is_binary(mechanism: Mechanism) -> bool:
    """Two answers and two reports: one share to estimate, from a binomial count (yes/no questions, and
    any choice between two options)."""
    return not isinstance(mechanism, UnaryMechanism) and len(mechanism.answers) == 2 and len(mechanism.reports) == 2


def symmetric_channel(mechanism: Mechanism) -> BinaryChannel | None:
    """`marginal_channel` read from the mechanism's two numbers, without writing out its k × k matrix: the (keep, other)
    of k-ary randomized response or a public choice, for the estimators that work from the structure in O(k)."""
    if isinstance(mechanism, SymmetricMechanism) and mechanism.keep > mechanism.other and len(mechanism.answers) >= 2:
        return BinaryChannel(float(mechanism.keep), float(mechanism.other))
    return None


def marginal_channel(q: Channel) -> BinaryChannel | None:
    """For a square channel with one value on the diagonal and one off it (k-ary randomized response, a
    public question), the count of report j is Binomial(n, o + (p − o)π_j): each answer's share has a
    two-answer channel of its own, (p, o). None for any other channel."""
    if isinstance(q, FoldedGeometric) or q.shape[0] != q.shape[1] or q.shape[0] < 2:
        return None
    k = q.shape[0]
    diagonal = np.diagonal(q)
    off = q.ravel()[1:].reshape(k - 1, k + 1)[:, :k]  # the entries off the diagonal, without building a mask
    if np.ptp(diagonal) > 1e-15 or np.ptp(off) > 1e-15 or diagonal[0] == off[0, 0]:
        return None
    return BinaryChannel(float(diagonal[0]), float(off[0, 0]))


def binary_channel(mechanism: Mechanism) -> BinaryChannel:
    """The (p, q) of a two-answer mechanism (P(first report | first answer), P(first report | second
    answer)), or of one option's bit in a unary mechanism."""
    if isinstance(mechanism, UnaryMechanism):
        return BinaryChannel(float(mechanism.keep_one), float(mechanism.flip_zero))
    (first, second), report = mechanism.answers, mechanism.reports[0]
    return BinaryChannel(float(mechanism.probability(report, first)), float(mechanism.probability(report, second)))


@dataclass(frozen=True)
class FoldedGeometric:
    """A number's channel (`LaplaceMechanism`: answers 0..N, reports −N..2N, P(r | a) ∝ α^|r − a| with the tails
    folded onto the two end reports; the memoized composite keep·Q + other too) applied to vectors through its
    structure, in O(N) rather than the O(N²) of the written-out matrix: the two-sided geometric sum
    Σ_a α^|v − a| x_a is a forward and a backward first-order recursion, here running sums of x scaled by α^∓a
    (every term is nonnegative where it is used, probabilities and count ratios, so the sums lose nothing to
    cancellation). A 0..1000 grid's product is 3 million multiplications written out; here about 20,000.
    Tests compare both routes on every shape it takes."""
    alpha: float
    points: int
    keep: float = 1.0
    other: float = 0.0
    #: α^−N = e^ε at most; the running sums scale by up to e^(ε) and e^(ε) again, so above this the matrix is used.
    LARGEST_EXPONENT = 300.0
    #: Below this many grid steps the written-out product is the faster (one BLAS thread, a single vector: 25 against
    #: 6 µs at 0..100, 28 against 18 at 0..200, 29 against 51 at 0..300; 40 against 870 at 0..1000).
    FASTER_FROM = 250

    @property
    def shape(self) -> tuple[int, int]:
        """(reports, answers), as the written-out matrix's."""
        return 3 * self.points + 1, self.points + 1

    def columns(self, answers, reports=None) -> np.ndarray:
        """The written-out matrix's columns ``answers`` (at the rows ``reports``, 0..3N, increasing; None: all), entry
        for entry as `channel_matrix` writes them: α^|v − a|·(1 − α)/(1 + α), the two folded tails α^d/(1 + α), under
        a panel's layer other + (keep − other)·Q."""
        alpha, last = self.alpha, 3 * self.points
        rows = np.arange(last + 1) if reports is None else np.asarray(reports)
        # Written answer by answer (the transpose's rows are the matrix's columns, so it comes out laid out by columns,
        # as the estimators read it), each α^d looked up among the 2N + 1 distances rather than raised again: a 0..1000
        # grid's 3 million powers took 60 ms, and its copy into columns 24 MB more.
        distance = np.abs(np.subtract.outer(np.asarray(answers), rows - self.points))
        powers = alpha ** np.arange(2 * self.points + 1)
        transposed = (1 - alpha) / (1 + alpha) * powers[distance]
        tails = np.flatnonzero((rows == 0) | (rows == last))
        transposed[:, tails] = powers[distance[:, tails]] / (1 + alpha)  # the folded tails
        return self._layer(transposed).T

    def row(self, report: int) -> np.ndarray:
        """The written-out matrix's row ``report`` (0..3N, for the reports −N..2N), entry for entry as `columns` writes
        it, in O(N)."""
        alpha, reports = self.alpha, 3 * self.points + 1
        report = report % reports
        distance = np.abs(np.arange(self.points + 1) - (report - self.points))
        powers = alpha ** distance
        return self._layer(powers / (1 + alpha) if report in (0, reports - 1) else (1 - alpha) / (1 + alpha) * powers)

    def _layer(self, entries: np.ndarray) -> np.ndarray:
        """Entries of the number's own channel as the channel's: under a panel's layer, other + (keep − other)·Q."""
        return entries if (self.keep, self.other) == (1.0, 0.0) else self.other + (self.keep - self.other) * entries

    @functools.cached_property
    def _powers(self) -> tuple[np.ndarray, np.ndarray]:
        """α^a and α^−a for a = 0..N, worked out once per channel (every product reads them: a bootstrap's fits of a
        0..1000 grid made 5,000 products)."""
        exponents = np.arange(self.points + 1) * math.log(self.alpha)
        powers = np.exp(exponents), np.exp(-exponents)
        for array in powers:
            array.flags.writeable = False
        return powers

    def _two_sided(self, x: np.ndarray, up: np.ndarray, down: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Σ_a α^|v − a| x_a for v = 0..N along the last axis: B_v + α·F_(v−1), with F_v = Σ_(a≤v) α^(v−a) x_a and
        B_v = Σ_(a≥v) α^(a−v) x_a (the two overlap only at a = v, counted once)."""
        forward = up * np.cumsum(x * down, axis=-1)
        backward = down * np.cumsum((x * up)[..., ::-1], axis=-1)[..., ::-1]
        result = backward.copy()
        result[..., 1:] += self.alpha * forward[..., :-1]
        return result, forward, backward

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """Q @ x for x over the answers (the last axis; a batch of rows in front is applied row by row)."""
        x = np.asarray(x, dtype=float)
        up, down = self._powers
        inner, forward, backward = self._two_sided(x, up, down)
        tail = up[1:]  # α^1..α^N: how far a report beyond the grid lies from its nearer end
        below = backward[..., :1] * tail[::-1]  # reports −N..−1: α^|v| B_0
        above = forward[..., -1:] * tail  # reports N + 1..2N: α^(v − N) F_N
        rates = np.concatenate([below, inner, above], axis=-1) * ((1 - self.alpha) / (1 + self.alpha))
        rates[..., [0, -1]] *= 1 / (1 - self.alpha)  # the folded tails: α^d/(1 + α), not (1 − α)/(1 + α)·α^d
        return self._layered(rates, x)

    def rmatvec(self, w: np.ndarray) -> np.ndarray:
        """Qᵀ @ w for w over the reports (the last axis), as `matvec`."""
        w = np.asarray(w, dtype=float)
        n = self.points
        up, down = self._powers
        weighted = w * ((1 - self.alpha) / (1 + self.alpha))
        weighted[..., [0, -1]] = w[..., [0, -1]] / (1 + self.alpha)
        below, inner, above = weighted[..., :n], weighted[..., n:2 * n + 1], weighted[..., 2 * n + 1:]
        tail = up[1:]
        result, _, _ = self._two_sided(inner, up, down)
        # Reports below the grid reach answer a at distance a + |v|, those above at (v − N) + (N − a).
        result += (below @ tail[::-1])[..., None] * up + (above @ tail)[..., None] * up[::-1]
        return self._layered(result, w)

    # --- the unbiased estimate through the structure ---------------------------------------------------------
    # Below the grid every report's row is a multiple of report 0's (Q_va = α^|v|·Q_0a for −N < v < 0, and the folded
    # −N's is α^N/(1 − α) of it), and above it of report N's: their rates sum to (Tπ)_0/(1 − α) and (Tπ)_N/(1 − α),
    # with T = (1 − α)/(1 + α)·[α^|i − j|] the block of the reports 0..N. So π̂ = T⁻¹μ, μ the report shares with those
    # outside merged into the two ends (times 1 − α), is unbiased, uses every report, and T⁻¹ is tridiagonal (T is a
    # Kac–Murdock–Szegő matrix): O(N), where the pseudo-inverse of a written-out matrix is two SVDs. Under a panel's
    # layer each rate is other + (keep − other)·(Qπ)_v, undone report by report first.

    def _interior_inverse(self, x: np.ndarray, squared: bool = False) -> np.ndarray:
        """T⁻¹x along the last axis (``squared``: the entrywise square of T⁻¹ applied instead)."""
        alpha = self.alpha
        scale = 1 / ((1 - alpha) / (1 + alpha) * (1 - alpha * alpha))
        middle, side, corner = (1 + alpha * alpha) * scale, -alpha * scale, scale
        if squared:
            middle, side, corner = middle * middle, side * side, corner * corner
        result = middle * x
        result[..., [0, -1]] = corner * x[..., [0, -1]]
        result[..., 1:] += side * x[..., :-1]
        result[..., :-1] += side * x[..., 1:]
        return result

    def _merged(self, rates: np.ndarray, weight: float) -> np.ndarray:
        """The shares of the reports 0..N, those below (above) the grid added to report 0 (N), times ``weight``."""
        n = self.points
        merged = np.array(rates[..., n:2 * n + 1], dtype=float)
        merged[..., 0] = weight * rates[..., :n + 1].sum(axis=-1)
        merged[..., -1] = weight * rates[..., 2 * n:].sum(axis=-1)
        return merged

    def unbiased(self, rates: np.ndarray) -> np.ndarray:
        """The unbiased estimate of the answer shares from the report shares ``rates`` (see above)."""
        undone = (np.asarray(rates, dtype=float) - self.other) / (self.keep - self.other)
        return self._interior_inverse(self._merged(undone, 1 - self.alpha))

    def unbiased_weights(self, functional: np.ndarray) -> np.ndarray:
        """w over the reports with wᵀλ = gᵀ(the unbiased estimate) up to a constant, g = ``functional`` (the last axis:
        a batch of functionals in front gives a row each): its variance is Σ w_v²λ_v − (wᵀλ)² over n."""
        n, pulled = self.points, self._interior_inverse(np.asarray(functional, dtype=float))
        weights = np.empty((*pulled.shape[:-1], 3 * n + 1))
        weights[..., n:2 * n + 1] = pulled
        weights[..., :n + 1] = (1 - self.alpha) * pulled[..., :1]
        weights[..., 2 * n:] = (1 - self.alpha) * pulled[..., -1:]
        return weights / (self.keep - self.other)

    def unbiased_variances(self, rates: np.ndarray, n: float) -> np.ndarray:
        """Each share's variance in the unbiased estimate from n reports at shares ``rates``, in O(N): row a of T⁻¹ has
        three entries, so Σ_v w_v²λ_v is the squared inverse applied to the merged shares (weighted (1 − α)²)."""
        rates = np.asarray(rates, dtype=float)
        second = self._interior_inverse(self._merged(rates, (1 - self.alpha) ** 2), squared=True)
        first = self._interior_inverse(self._merged(rates, 1 - self.alpha))
        return (second - first * first) / ((self.keep - self.other) ** 2 * n)

    # --- the inverse information through the structure ------------------------------------------------------------
    # Every report's row is a multiple of one of T's (below the grid of report 0's, above it of report N's) plus, under a
    # panel's layer, other·1. So I = Σ_r q_r q_rᵀ/λ_r = κ²·T·D·T + (terms in 1aᵀ + a1ᵀ and 11ᵀ), κ = keep − other, D
    # diagonal: 1/λ_v for the inner reports, Σ s_v²/λ_v over the reports merged into each end (s_v the multiple). The
    # terms in 1 vanish on the simplex's tangent space, so the covariance restricted to it, I⁻¹ − I⁻¹11ᵀI⁻¹/(1ᵀI⁻¹1), is
    # that of κ²TDT: M = T⁻¹·diag(1/D)·T⁻¹/κ² with T⁻¹ tridiagonal, so every share's variance and any functional's in O(N)
    # (a 0..10,000 grid's information written out is 800 MB, its inverse 10¹² operations).

    def _information_diagonal(self, pi: np.ndarray) -> np.ndarray:
        """1/D (above) at the rates λ = Qπ, over the reports 0..N."""
        n, alpha = self.points, self.alpha
        rates = self.matvec(np.asarray(pi, dtype=float))
        up = self._powers[0]
        multiples = up[::-1].copy()  # the reports −N..0 as multiples of report 0's row: α^|v|, the folded one α^N/(1 − α)
        multiples[0] /= 1 - alpha
        inverse = np.empty(n + 1)
        with np.errstate(divide="ignore"):
            inverse[1:-1] = rates[n + 1:2 * n]
            inverse[0] = 1 / np.sum(multiples * multiples / rates[:n + 1])
            inverse[-1] = 1 / np.sum(multiples[::-1] * multiples[::-1] / rates[2 * n:])
        return inverse / (self.keep - self.other) ** 2

    def _information_parts(self, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """What the restricted inverse information at ``pi`` is read from: 1/D (over κ²), M·1 and 1ᵀM1."""
        diagonal = self._information_diagonal(pi)
        through_ones = self._interior_inverse(diagonal * self._interior_inverse(np.ones(self.points + 1)))
        return diagonal, through_ones, float(through_ones.sum())

    def fitted_variances(self, pi: np.ndarray) -> np.ndarray:
        """The diagonal of `fitted_covariance` for one respondent, in O(N): row a of T⁻¹ has three entries."""
        diagonal, through_ones, total = self._information_parts(pi)
        return self._interior_inverse(diagonal, squared=True) - through_ones * through_ones / total

    def fitted_variance(self, pi: np.ndarray, functional: np.ndarray) -> float:
        """gᵀ·`fitted_covariance`·g for one respondent, g = ``functional``, in O(N)."""
        diagonal, through_ones, total = self._information_parts(pi)
        pulled = self._interior_inverse(np.asarray(functional, dtype=float))
        along = float(functional @ through_ones)
        return float(diagonal @ (pulled * pulled)) - along * along / total

    def fitted_covariance(self, pi: np.ndarray) -> np.ndarray:
        """The restricted inverse information written out (k × k): pentadiagonal M less a rank-one term."""
        diagonal, through_ones, total = self._information_parts(pi)
        inverse = self._interior_inverse(np.eye(self.points + 1))  # T⁻¹ is symmetric
        return (inverse * diagonal) @ inverse - np.outer(through_ones, through_ones) / total

    def vertex_loglikelihoods(self, counts: np.ndarray) -> np.ndarray | None:
        """Σ_r c_r log Q_ra for every answer a (the log-likelihood of each point mass), in O(N) rather than the
        written-out matrix's O(N²) logarithms: log Q_ra is a report's constant plus |v − a|·log α, and Σ_r c_r |v_r − a|
        for every a is two running sums of the counts and of the counts times v (integers: exact). None under a
        panel's layer, whose entries are sums (other + (keep − other)·α^d) with no such form."""
        if self.keep != 1.0 or self.other != 0.0:
            return None
        n, log_alpha = self.points, math.log(self.alpha)
        counts = np.asarray(counts, dtype=float)
        reports = np.arange(-n, 2 * n + 1, dtype=float)
        answers = np.arange(n + 1)
        # Σ_(v<a) c_v (a − v) + Σ_(v>a) c_v (v − a), from prefix sums over the reports up to each answer's own.
        below_count = np.concatenate([[0.0], np.cumsum(counts)])[answers + n]
        below_moment = np.concatenate([[0.0], np.cumsum(counts * reports)])[answers + n]
        total_count, total_moment = float(counts.sum()), float(counts @ reports)
        distances = (answers * below_count - below_moment) + (total_moment - below_moment) - answers * (
            total_count - below_count)
        ends = counts[0] + counts[-1]
        constants = (total_count - ends) * math.log((1 - self.alpha) / (1 + self.alpha)) - ends * math.log1p(self.alpha)
        return constants + log_alpha * distances

    def _layered(self, product: np.ndarray, vector: np.ndarray) -> np.ndarray:
        if self.keep == 1.0 and self.other == 0.0:
            return product
        return self.other * vector.sum(axis=-1, keepdims=True) + (self.keep - self.other) * product


_STRUCTURES: dict = {}
_LEFT_INVERSES: dict = {}
_LEFT_INVERSES_LOCK = threading.Lock()


def _remember_structure(matrix: np.ndarray, structure: FoldedGeometric) -> np.ndarray:
    # Keyed by the matrix's identity for as long as it lives (the entry goes with it), and the matrix made read-only,
    # so the structure can never describe a matrix that has since changed. Stored by columns: what is still read of
    # it directly is a few columns at a time (the maximiser's Newton model on its face).
    matrix = np.asfortranarray(matrix)
    matrix.flags.writeable = False
    _STRUCTURES[id(matrix)] = structure
    weakref.finalize(matrix, _STRUCTURES.pop, id(matrix), None)
    return matrix


def rates(q: Channel, points: np.ndarray) -> np.ndarray:
    """Q·π for each row π of ``points`` (through the structure where the channel has one)."""
    known = structure(q)
    return points @ written_out(q, "rates").T if known is None else known.matvec(points)


def pulled_back(q: Channel, weights: np.ndarray) -> np.ndarray:
    """Qᵀ·w for each row w of ``weights`` (through the structure where the channel has one)."""
    known = structure(q)
    return weights @ q if known is None else known.rmatvec(weights)


def structure(q) -> FoldedGeometric | None:
    """The structured form of a channel (a number's), or None: a product through it is then O(N) (`FoldedGeometric`).
    ``q`` is the structure itself, or a matrix `channel_matrix` wrote out; slices and copies of the matrix have none."""
    if isinstance(q, FoldedGeometric):
        return q
    return _STRUCTURES.get(id(q))


def as_channel(q):
    """A channel as the estimators take it: a structure as it is (never written out), anything else as a float
    matrix."""
    return q if isinstance(q, FoldedGeometric) else np.asarray(q, dtype=float)


def columns(q, answers, reports=None) -> np.ndarray:
    """The channel's columns ``answers`` as a matrix (reports × len(answers); only the rows ``reports`` when given),
    from the structure when ``q`` is one (the rows not asked for never written out)."""
    if isinstance(q, FoldedGeometric):
        return q.columns(answers, reports)
    return q[:, answers] if reports is None else q[np.asarray(reports)[:, None], answers]


def row(q, report: int) -> np.ndarray:
    """The channel's row ``report``: every answer's rate of that report."""
    return q.row(report) if isinstance(q, FoldedGeometric) else q[report]


def apply(q, pi: np.ndarray) -> np.ndarray:
    """Q·π for one distribution ``pi``: a written-out matrix's own product (its bits, which seeded draws read), a
    structure's recursions for a bare one."""
    return q.matvec(pi) if isinstance(q, FoldedGeometric) else q @ pi
