"""The marginal likelihood of a randomized yes/no answer with a random intercept per group, by adaptive Gauss–Hermite
quadrature (`mixed` fits it).

Respondent i of group j reports "yes" with probability π_ij(u) = q + (p − q)·σ(x_ijᵀβ + u_j), where p = P(yes | yes)
and q = P(yes | no) come from the design's exact channel and u_j ~ N(0, τ²). A group's likelihood integrates its
reports' over u_j:

    L_j = ∫ exp(h_j(u)) du / (√(2π) τ),   h_j(u) = Σ_i log P(r_ij | u) − u²/(2τ²).

Adaptive quadrature centres the nodes on h_j's mode û_j and scales them by its curvature c_j = −h_j''(û_j): with K
nodes z_k and weights w_k of Gauss–Hermite,

    log L_j ≈ −log(√(2π) τ) + ½ log 2 − ½ log c_j + log Σ_k w_k exp(z_k² + h_j(û_j + √2 z_k / √c_j)).

K = 1 is the Laplace approximation, with the expected information for c_j as lme4's ``glmer`` has it for this
non-canonical link (``nAGQ = 1``, RRreg's ``RRmixed`` default; ``nAGQ`` > 1 is this quadrature). Without randomization a large
group's integrand is close to a Gaussian around its mode and needs few nodes; with it, it is not: each report's
likelihood levels off as u grows (π stays within [q, p]), so a large group's integrand keeps a shoulder that a
Gaussian around the mode misses. Measured against direct integration (tests/analysis/test_mixed.py), the error of
15 nodes was 1e-14 for groups of one, 1e-8 for groups of 6, 3e-4 for groups of 40 and 3e-3 for groups of 100 (τ up to
2), and shrinks as nodes are added; `mixed` therefore adds nodes until doubling them moves the log-likelihood at the
estimate by less than `mixed.QUADRATURE_TOLERANCE`.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import sparse
from scipy.special import expit, roots_hermite

#: Newton steps toward each group's mode, at most (each a vector operation over all respondents).
MODE_STEPS = 200
MODE_TOLERANCE = 1e-10
#: Points proposed per group for each draw from its conditional distribution (`GroupedReports.posterior_draw`).
PROPOSALS = 32


class OneFactor:
    """What a fit reads of data with one grouping factor (`GroupedReports`, `mixed_predictor.PredictorReports`), as
    `mixed_laplace.CrossedReports` gives it for several: per factor, its number of groups, their sizes, and each
    group's conditional mode and SE. Needs ``count``, ``sizes`` and ``modes(params, tau)``."""

    count: int
    sizes: np.ndarray

    def modes(self, params: np.ndarray, tau: float, start: np.ndarray | None = None) -> tuple:
        raise NotImplementedError

    @property
    def counts(self) -> list[int]:
        return [self.count]

    @property
    def factor_sizes(self) -> list[np.ndarray]:
        return [self.sizes]

    def effects(self, params: np.ndarray, taus: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each group's conditional mode and conditional SE (1/√ the curvature there), as a list of one factor."""
        modes, curvature, _ = self.modes(params, float(taus[0]))
        return [(modes, 1 / np.sqrt(curvature))]


class GroupedReports(OneFactor):
    """The data of the fit: reports (1 = "yes"), the fixed effects' design matrix, each respondent's group (0..G−1),
    and the channel's p = P(yes | yes), q = P(yes | no)."""

    def __init__(self, reports: np.ndarray, exog: np.ndarray, groups: np.ndarray, p: float, q: float):
        self.reports = np.asarray(reports, dtype=float)
        self.exog = np.asarray(exog, dtype=float)
        self.groups = np.asarray(groups, dtype=np.int64)
        self.count = int(self.groups.max()) + 1 if len(self.groups) else 0
        self.sizes = np.bincount(self.groups, minlength=self.count)
        self.p, self.q = float(p), float(q)
        # Respondents alike in group, report and covariates contribute alike: the sums run over the distinct rows,
        # each weighed by how many respondents it stands for (categorical covariates: 10⁵ respondents in 200 groups
        # were a few thousand rows). The public arrays above stay one row per respondent.
        rows, counts = np.unique(np.column_stack([self.groups, self.reports, self.exog]), axis=0, return_counts=True)
        self._groups, self._reports, self._exog = rows[:, 0].astype(np.int64), rows[:, 1], rows[:, 2:]
        self._counts = counts.astype(float)
        #: the modes of the last point evaluated: the next point's start (the optimiser's points are near each other;
        #: Newton's steps from there take 2–3 steps where from 0 they took 6–10)
        self._warm_start: np.ndarray | None = None

    @property
    def parameter_count(self) -> int:
        return self.exog.shape[1]

    def posterior_draw(self, beta: np.ndarray, tau: float, rng: np.random.Generator, start: np.ndarray | None = None,
                       proposals: int = PROPOSALS) -> np.ndarray:
        """One draw of each group's intercept from its conditional distribution given its reports, ∝ exp h_j(u), by
        sampling-importance-resampling: ``proposals`` points from a Student t (4 degrees of freedom) centred on the
        mode and scaled by the curvature, one kept by its weight exp h_j(u) / t(u). The normal at the mode alone
        missed the shoulder a randomized group's conditional keeps (`loglik`): small-area intervals drawn from it
        held their truth 0.93 of the time where this holds 0.95 (scripts/mixed_coverage.py areas)."""
        modes, curvature, _ = self.modes(beta, tau, start)
        scale = 1 / np.sqrt(curvature)
        t = rng.standard_t(4, (self.count, proposals))
        points = modes[:, None] + scale[:, None] * t
        h = self._sum(self.report_loglik((self._exog @ beta)[:, None] + points[self._groups])) - points**2 / (2 * tau**2)
        log_weights = h + 2.5 * np.log1p(t**2 / 4)  # − log of the t density, up to a constant
        log_weights -= log_weights.max(axis=1, keepdims=True)
        weights = np.exp(log_weights)
        cumulative = np.cumsum(weights, axis=1)
        chosen = (cumulative < rng.random((self.count, 1)) * cumulative[:, -1:]).sum(axis=1)
        return points[np.arange(self.count), np.minimum(chosen, proposals - 1)]

    def _sum(self, values: np.ndarray) -> np.ndarray:
        """Per group, the sum of a per-respondent quantity (columns: one sum per column)."""
        if values.ndim == 1:
            return np.bincount(self._groups, weights=values * self._counts, minlength=self.count)
        return self._membership @ values

    @functools.cached_property
    def _membership(self) -> sparse.csr_matrix:
        """groups × distinct rows, each row's count in its group: a product sums all columns at once."""
        return sparse.csr_matrix((self._counts, (self._groups, np.arange(len(self._groups)))),
                                 shape=(self.count, len(self._groups)))

    def report_loglik(self, linear: np.ndarray, slopes: bool = False):
        """log P(report | linear predictor), per distinct row (and per column of ``linear``): one logarithm per entry,
        of the probability of the report made (a "no" is a "yes" with p and q complemented). ``slopes``: also its
        derivative in the linear predictor, (log P(report))'."""
        yes = (self._reports > 0).reshape((-1,) + (1,) * (linear.ndim - 1))
        sign = np.where(yes, 1.0, -1.0)
        s = expit(linear)
        made = np.clip(np.where(yes, self.q, 1 - self.q) + sign * (self.p - self.q) * s, 1e-300, None)
        if not slopes:
            return np.log(made)
        return np.log(made), sign * (self.p - self.q) * s * (1 - s) / made

    def modes(self, beta: np.ndarray, tau: float, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each group's mode û_j of h_j, the curvature c_j there and the expected information there. The mode is found
        by Newton's steps where the observed curvature is at least half the expected information, and Fisher scoring's
        (divided by the expected information, always positive) elsewhere: a randomized report's log-likelihood need
        not be concave in u, and Newton's steps alone oscillated there. The observed curvature at the mode scales the
        nodes (the expected one where the observed is not positive). ``start``: modes to start from
        (a nearby fit's: a bootstrap draw's)."""
        fixed = self._exog @ beta
        return group_modes(lambda modes: self._derivatives(fixed, modes, tau), self.count, start)

    def _derivatives(self, fixed: np.ndarray, modes: np.ndarray, tau: float) -> tuple:
        """Per group at ``modes``: h'(u), −h''(u) and the expected information (the Fisher curvature)."""
        spread = self.p - self.q
        s = expit(fixed + modes[self._groups])
        probability = np.clip(self.q + spread * s, 1e-300, 1 - 1e-16)
        slope = spread * s * (1 - s)
        bend = slope * (1 - 2 * s)
        ratio = self._reports / probability - (1 - self._reports) / (1 - probability)
        square = self._reports / probability**2 + (1 - self._reports) / (1 - probability) ** 2
        gradient = self._sum(ratio * slope) - modes / tau**2
        observed = self._sum(square * slope**2 - ratio * bend) + 1 / tau**2
        fisher = self._sum(slope**2 / (probability * (1 - probability))) + 1 / tau**2
        return gradient, observed, fisher

    def loglik(self, beta: np.ndarray, tau: float, nodes: int = 15, per_group: bool = False):
        """The marginal log-likelihood (``per_group``: each group's) by adaptive Gauss–Hermite quadrature."""
        return self._quadrature(beta, tau, nodes)[0 if not per_group else 1]

    def posterior_nodes(self, beta: np.ndarray, tau: float, nodes: int = 31) -> tuple[np.ndarray, np.ndarray]:
        """Each group's conditional distribution of its intercept given its reports as the quadrature sees it: the
        nodes (groups × nodes) and their normalised weights, so that Σ_k weight_k·f(node_k) is E[f(u_j) | reports]
        (a share's expectation, say) to the quadrature's accuracy."""
        _, _, weights, _, points = self._quadrature(beta, tau, nodes, slopes=True)
        return points, weights

    def loglik_gradient(self, beta: np.ndarray, tau: float, nodes: int = 15) -> tuple[float, np.ndarray]:
        """The log-likelihood and its gradient in (β, log τ), the nodes held where this point's modes and curvatures
        put them: the exact integral does not depend on where they are, so what this leaves out is the derivative of
        the quadrature's error alone (checked against differences in tests/analysis/test_mixed.py). One evaluation,
        where differences took 2·(k + 1)."""
        total, _, weights, reports_slope, points = self._quadrature(beta, tau, nodes, slopes=True)
        # per respondent: the posterior-weighted slope of its report's log-likelihood in the linear predictor
        per_row = np.einsum("ik,ik->i", weights[self._groups], reports_slope) * self._counts
        d_beta = self._exog.T @ per_row
        d_log_tau = float(np.sum(weights * points**2) / tau**2) - self.count
        return total, np.append(d_beta, d_log_tau)

    def _quadrature(self, beta: np.ndarray, tau: float, nodes: int, slopes: bool = False):
        modes, curvature, expected = self.modes(beta, tau, self._warm_start)
        self._warm_start = modes
        if nodes == 1:  # the Laplace approximation as glmer computes it (RRmixed's default): its PIRLS weights are the
            curvature = expected  # expected information; the two Laplaces differed by 0.5 in a log-likelihood here
        points = quadrature_points(modes, curvature, nodes)
        linear = (self._exog @ beta)[:, None] + points[self._groups]
        if slopes:
            logs, report_slopes = self.report_loglik(linear, slopes=True)
        else:
            logs = self.report_loglik(linear)
        groups, weights = integrated(self._sum(logs), points, curvature, tau, nodes)
        if not slopes:
            return float(groups.sum()), groups
        return float(groups.sum()), groups, weights, report_slopes, points


def group_modes(derivatives, count: int, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each group's mode of h_j, given ``derivatives(modes)`` → (h', −h'', the expected information) per group: Newton's
    step where the observed curvature is at least half the expected (near the mode: quadratic convergence), Fisher
    scoring's elsewhere (never a step against the slope, never an oscillation). Returns the modes, the curvature
    that scales the nodes there (the observed, or the expected where the observed is not positive) and the expected
    information."""
    modes = np.zeros(count) if start is None else np.array(start, dtype=float)
    for _ in range(MODE_STEPS):
        gradient, observed, fisher = derivatives(modes)
        step = gradient / np.where(observed > 0.5 * fisher, observed, fisher)
        modes = modes + step
        if np.max(np.abs(step)) < MODE_TOLERANCE:
            break
    _, observed, fisher = derivatives(modes)
    return modes, np.where(observed > 0, observed, fisher), fisher


def quadrature_points(modes: np.ndarray, curvature: np.ndarray, nodes: int) -> np.ndarray:
    """The adaptive rule's points, groups × nodes: the Gauss–Hermite nodes centred on each mode, scaled by √(2/c)."""
    z, _ = hermite(nodes)
    return modes[:, None] + np.sqrt(2.0 / curvature)[:, None] * z[None, :]


def integrated(sums: np.ndarray, points: np.ndarray, curvature: np.ndarray, tau: float,
               nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Each group's log ∫ exp(h_j(u)) du / (√(2π) τ) from its reports' log-likelihood summed at each point (``sums``,
    groups × nodes), and the points' normalised weights (the group's conditional distribution as the rule sees it)."""
    z, w = hermite(nodes)
    h = sums - points**2 / (2 * tau**2)
    inner = np.log(w)[None, :] + z[None, :] ** 2 + h
    top = inner.max(axis=1)
    mass = np.exp(inner - top[:, None])
    total_mass = mass.sum(axis=1)
    groups = -np.log(np.sqrt(2 * np.pi) * tau) + 0.5 * np.log(2.0 / curvature) + top + np.log(total_mass)
    return groups, mass / total_mass[:, None]


@functools.lru_cache(maxsize=16)
def hermite(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite nodes and weights (for ∫ e^(−z²) f(z) dz), computed once per count."""
    return roots_hermite(nodes)
