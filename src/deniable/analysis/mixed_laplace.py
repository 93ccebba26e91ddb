"""The marginal likelihood of a randomized yes/no answer with random intercepts for several grouping factors, crossed
or nested (a school and a district; an interviewer and a village), by the Laplace approximation (`mixed` fits it).

Respondent i reports "yes" with probability q + (p − q)·σ(x_iᵀβ + Σ_f u_f[g_f(i)]), each factor's intercepts
u_f ~ N(0, τ_f²), independent. With b the intercepts of every factor stacked (q of them), Z the respondents × b
indicator and Λ = diag(τ_f² of each b's factor),

    h(b) = Σ_i log P(r_i | x_iᵀβ + Z_i b) − ½ bᵀΛ⁻¹b,
    log L ≈ h(b̂) − ½ log det(ZᵀWZ + Λ⁻¹) − Σ_f G_f log τ_f,

b̂ the mode of h and W the expected information of each report at b̂: lme4's ``glmer`` with ``nAGQ = 1`` for this
non-canonical link (RRreg's ``RRmixed`` default), whose PIRLS weights are the expected information too. With one
factor it is `mixed_likelihood.GroupedReports` at one node (a test checks they agree); several factors' integral has
as many dimensions as there are intercepts, which quadrature cannot reach, so lme4 offers only this for them too.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import linalg, sparse
from scipy.sparse import linalg as sparse_linalg
from scipy.special import expit

from .mixed_likelihood import MODE_STEPS, MODE_TOLERANCE

#: Intercepts (levels of every factor) up to which the information is a dense matrix; beyond, a sparse one.
DENSE_LIMIT = 1500


class CrossedReports:
    """The data of the fit: reports (1 = "yes"), the fixed effects' design matrix, each respondent's level of each
    grouping factor (codes 0..G_f − 1, one array per factor), and the channel's p = P(yes | yes), q = P(yes | no)."""

    def __init__(self, reports: np.ndarray, exog: np.ndarray, factors: list[np.ndarray], p: float, q: float):
        self.reports = np.asarray(reports, dtype=float)
        self.exog = np.asarray(exog, dtype=float)
        self.factors = [np.asarray(codes, dtype=np.int64) for codes in factors]
        self.counts = [int(codes.max()) + 1 if len(codes) else 0 for codes in self.factors]
        self.offsets = np.concatenate([[0], np.cumsum(self.counts)]).astype(int)
        n = len(self.reports)
        columns = np.concatenate([offset + codes for offset, codes in zip(self.offsets, self.factors)])
        self.design = sparse.csr_matrix((np.ones(len(columns)), (np.tile(np.arange(n), len(self.factors)), columns)),
                                        shape=(n, int(self.offsets[-1])))
        #: each intercept's factor (0..F − 1)
        self.factor_of = np.repeat(np.arange(len(self.factors)), self.counts)
        self.factor_sizes = [np.bincount(codes, minlength=count) for codes, count in zip(self.factors, self.counts)]
        self.p, self.q = float(p), float(q)
        self._warm_start: np.ndarray | None = None

    @property
    def parameter_count(self) -> int:
        return self.exog.shape[1]

    def _terms(self, linear: np.ndarray):
        """Per respondent at ``linear``: log P(report), its slope in the linear predictor, the expected information
        (the Fisher weight) and the observed one (−(log P)'', which may be negative)."""
        spread = self.p - self.q
        s = expit(linear)
        probability = np.clip(self.q + spread * s, 1e-300, 1 - 1e-16)
        slope = spread * s * (1 - s)
        yes = self.reports > 0
        made = np.where(yes, probability, 1 - probability)
        sign = np.where(yes, 1.0, -1.0)
        first = sign * slope / made
        observed = first**2 - sign * slope * (1 - 2 * s) / made
        return np.log(made), first, slope**2 / (probability * (1 - probability)), observed

    def _information(self, weights: np.ndarray, precision: np.ndarray):
        """ZᵀWZ + Λ⁻¹ for per-respondent ``weights``: dense up to `DENSE_LIMIT` intercepts (one bincount over every
        respondent's pairs of levels, then a Cholesky factor, which also says whether it is positive definite;
        scipy's sparse products cost 2 ms a time here, where a fit makes thousands), sparse beyond."""
        size = self.design.shape[1]
        if size > DENSE_LIMIT:
            return (self.design.T @ sparse.diags(weights) @ self.design + sparse.diags(precision)).tocsc()
        matrix = np.bincount(self._pairs, weights=weights[self._pair_respondent], minlength=size * size)
        matrix = matrix.reshape(size, size)
        matrix[np.diag_indices(size)] += precision
        return matrix

    @functools.cached_property
    def _pairs(self) -> np.ndarray:
        """Each respondent's pairs of intercepts (one level of each factor, every ordered pair of factors), as flat
        indices of the q × q matrix."""
        size = self.design.shape[1]
        levels = [offset + codes for offset, codes in zip(self.offsets, self.factors)]
        return np.concatenate([row * size + column for row in levels for column in levels])

    @functools.cached_property
    def _pair_respondent(self) -> np.ndarray:
        return np.tile(np.arange(len(self.reports)), len(self.factors) ** 2)

    def modes(self, beta: np.ndarray, taus: np.ndarray, start: np.ndarray | None = None):
        """The mode b̂ of h: Newton's step (the observed information) where that is positive definite and the step
        raises h, else Fisher scoring's (the expected information, positive definite where the observed need not be)
        halved until h does not fall; as in `GroupedReports.modes`, Newton near the mode converges to 1e-10 in a few
        steps where Fisher's alone crept. Returns (b̂, h(b̂), the factor of ZᵀWZ + Λ⁻¹ with W the expected
        information at b̂ (`_Factor`))."""
        precision = 1.0 / np.asarray(taus, dtype=float)[self.factor_of] ** 2
        fixed = self.exog @ beta
        b = np.zeros(self.design.shape[1]) if start is None else np.array(start, dtype=float)

        def objective(point):
            logs, *rest = self._terms(fixed + self.design @ point)
            return (float(logs.sum() - 0.5 * np.sum(precision * point**2)), *rest)

        value, slopes, fisher, observed = objective(b)
        for _ in range(MODE_STEPS):
            gradient = self.design.T @ slopes - precision * b
            step, moved = None, None
            newton = _Factor.of(self._information(observed, precision))
            if newton is not None:
                trial_step = newton.solve(gradient)
                trial = objective(b + trial_step)
                if np.all(np.isfinite(trial_step)) and trial[0] >= value - 1e-12:
                    step, moved = trial_step, trial
            if step is None:
                factor = _Factor.of(self._information(fisher, precision))
                assert factor is not None  # the expected information plus Λ⁻¹ is positive definite
                step = factor.solve(gradient)
                for _ in range(30):
                    moved = objective(b + step)
                    if moved[0] >= value - 1e-12:
                        break
                    step = step / 2
            assert moved is not None  # a step was taken, Newton's or Fisher's
            b = b + step
            value, slopes, fisher, observed = moved
            if np.max(np.abs(step)) < MODE_TOLERANCE:
                break
        factor = _Factor.of(self._information(fisher, precision))
        assert factor is not None
        return b, value, factor

    def loglik(self, beta: np.ndarray, taus: np.ndarray) -> float:
        """The Laplace approximation of the marginal log-likelihood (glmer's, ``nAGQ = 1``)."""
        taus = np.asarray(taus, dtype=float)
        b, value, factor = self.modes(beta, taus, self._warm_start)
        self._warm_start = b
        return value - 0.5 * factor.log_det - float(np.dot(self.counts, np.log(taus)))

    def effects(self, beta: np.ndarray, taus: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per factor: its levels' conditional modes and conditional SEs (the square roots of the diagonal of the
        inverse information: each level's uncertainty given the other factors' too)."""
        b, _, factor = self.modes(beta, np.asarray(taus, dtype=float), self._warm_start)
        variances = factor.inverse_diagonal()
        return [(b[start:end], np.sqrt(variances[start:end])) for start, end in zip(self.offsets, self.offsets[1:])]


class _Factor:
    """A factorisation of a symmetric positive definite matrix, dense (Cholesky) or sparse (LU): solves, the log
    determinant and the inverse's diagonal."""

    def __init__(self, matrix, dense):
        self.matrix, self.dense = matrix, dense

    @classmethod
    def of(cls, matrix) -> _Factor | None:
        """None where the matrix is not positive definite (a dense Cholesky fails) or singular."""
        try:
            if isinstance(matrix, np.ndarray):
                return cls(matrix, linalg.cho_factor(matrix, lower=True, check_finite=False))
            return cls(matrix, sparse_linalg.splu(matrix))
        except (linalg.LinAlgError, RuntimeError, ValueError):
            return None

    def solve(self, vector: np.ndarray) -> np.ndarray:
        if isinstance(self.matrix, np.ndarray):
            return linalg.cho_solve(self.dense, vector, check_finite=False)
        return self.dense.solve(vector)

    @property
    def log_det(self) -> float:
        if isinstance(self.matrix, np.ndarray):
            return 2.0 * float(np.sum(np.log(np.diag(self.dense[0]))))
        return float(np.sum(np.log(np.abs(self.dense.U.diagonal()))))

    def inverse_diagonal(self) -> np.ndarray:
        if isinstance(self.matrix, np.ndarray):
            return np.diag(self.solve(np.eye(len(self.matrix))))
        size = self.matrix.shape[0]
        diagonal = np.empty(size)
        for start in range(0, size, 500):  # 500 columns of the inverse at a time: its diagonal, not q² numbers
            stop = min(start + 500, size)
            block = np.zeros((size, stop - start))
            block[np.arange(start, stop), np.arange(stop - start)] = 1.0
            diagonal[start:stop] = self.dense.solve(block)[np.arange(start, stop), np.arange(stop - start)]
        return diagonal
