"""A public outcome with a randomized yes/no answer among its covariates and a random intercept per group:
``mixed("trust ~ dodged + age + (1 | school)", data)``, the multilevel form of `predictor` (R's ``rr::rrreg.predictor``
and RRreg's ``RRlin``, which have no random effects).

Respondent i of group j has a true answer z_i nobody sees, modelled as `predictor` models it, P(z = 1 | x) = σ(x_zᵀγ),
and the outcome given z and the group's intercept u_j ~ N(0, τ²): y ~ N(xᵀβ + δz + u_j, s²) (linear), or Bernoulli
with σ(xᵀβ + δz + u_j) (logistic). Each respondent's likelihood given u is the mixture over z,

    ℓ_i(u) = log Σ_z P(z | x_i)·P(r_i | z)·f(y_i | z, x_i, u),

and a group's is the integral of Π_i exp ℓ_i(u) over N(0, τ²), by the same adaptive Gauss–Hermite quadrature as
`mixed_likelihood` (the mode of h_j(u) = Σ_i ℓ_i(u) − u²/2τ² by Newton's steps where the curvature is positive,
else by the complete-data information's, which always is).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

from .mixed_likelihood import OneFactor, group_modes, integrated, quadrature_points
from .predictor import LatentPredictorModel


class PredictorReports(OneFactor):
    """The data of the fit: a `LatentPredictorModel` (the outcome, both design matrices, each respondent's report
    through its channel) and each respondent's group (0..G − 1). Parameters: the model's (β with δ, γ, and log s for
    a linear outcome)."""

    def __init__(self, model: LatentPredictorModel, groups: np.ndarray):
        if model.latent is None:
            raise ValueError("a PredictorReports needs a model with a randomized covariate")
        self.model = model
        assert model.latent_exog is not None  # a model with a randomized covariate has the covariate's own model
        self.latent_exog: np.ndarray = model.latent_exog
        self.groups = np.asarray(groups, dtype=np.int64)
        self.count = int(self.groups.max()) + 1 if len(self.groups) else 0
        self.sizes = np.bincount(self.groups, minlength=self.count)
        self.reports = np.asarray(model.endog, dtype=float)  # the outcome: one per respondent
        self.parameter_count = len(model.exog_names)
        self._warm_start: np.ndarray | None = None
        given_yes, given_no = np.asarray(model.given_yes), np.asarray(model.given_no)
        with np.errstate(divide="ignore"):
            self._log_given = np.column_stack([np.log(given_no), np.log(given_yes)])  # z = 0, z = 1

    def _fixed(self, params: np.ndarray):
        """Per respondent and z (columns z = 0, 1): the log of P(z | x)·P(r | z), and the linear predictor without
        u; and the scale s (None for a logistic outcome)."""
        beta, gamma, log_scale = self.model._split(params)
        linear_z = self.latent_exog @ gamma
        prior = np.column_stack([log_expit(-linear_z), log_expit(linear_z)])
        eta = np.column_stack([self.model.exog_no @ beta, self.model.exog_yes @ beta])
        return prior + self._log_given, eta, None if log_scale is None else float(np.exp(log_scale))

    def _outcome(self, eta: np.ndarray, scale: float | None):
        """log f(y | η) and its first two derivatives in η, elementwise (η: respondents × z × anything)."""
        y = self.reports.reshape((-1,) + (1,) * (eta.ndim - 1))
        if scale is None:
            share = expit(eta)
            return y * log_expit(eta) + (1 - y) * log_expit(-eta), y - share, -share * (1 - share)
        residual = (y - eta) / scale
        return -0.5 * residual**2 - np.log(scale) - 0.5 * np.log(2 * np.pi), residual / scale, \
            np.full_like(eta, -1 / scale**2)

    def _respondents(self, weights, eta, scale, u):
        """ℓ_i(u) and its first two derivatives in u, per respondent (u: respondents × anything)."""
        log_f, first, second = self._outcome(eta[:, :, None] + u[:, None, :], scale)
        terms = weights[:, :, None] + log_f  # respondents × z × points
        top = terms.max(axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        mass = np.exp(terms - top)
        total = mass.sum(axis=1, keepdims=True)
        posterior = mass / total
        value = (top + np.log(total))[:, 0, :]
        slope = np.sum(posterior * first, axis=1)
        curvature = np.sum(posterior * (first**2 + second), axis=1) - slope**2
        complete = -np.sum(posterior * second, axis=1)
        return value, slope, curvature, complete

    def modes(self, params: np.ndarray, tau: float, start: np.ndarray | None = None):
        """Each group's mode û_j of h_j, the curvature there and the complete-data information (positive)."""
        weights, eta, scale = self._fixed(params)
        return group_modes(lambda modes: self._derivatives(weights, eta, scale, modes, tau), self.count, start)

    def _derivatives(self, weights, eta, scale, modes, tau):
        _, slope, curvature, complete = self._respondents(weights, eta, scale, modes[self.groups][:, None])
        gradient = np.bincount(self.groups, weights=slope[:, 0], minlength=self.count) - modes / tau**2
        observed = -np.bincount(self.groups, weights=curvature[:, 0], minlength=self.count) + 1 / tau**2
        fisher = np.bincount(self.groups, weights=complete[:, 0], minlength=self.count) + 1 / tau**2
        return gradient, observed, fisher

    def loglik(self, params: np.ndarray, tau: float, nodes: int = 15) -> float:
        """The marginal log-likelihood by adaptive Gauss–Hermite quadrature (``nodes`` = 1: the Laplace
        approximation)."""
        return self._quadrature(params, tau, nodes)[0]

    def loglik_gradient(self, params: np.ndarray, tau: float, nodes: int = 15) -> tuple[float, np.ndarray]:
        """The log-likelihood and its gradient in (parameters, log τ), the nodes held where this point puts them (as
        `GroupedReports.loglik_gradient`: what this leaves out is the derivative of the quadrature's error)."""
        total, node_weights, points, weights, eta, scale = self._quadrature(params, tau, nodes, keep=True)
        log_f, first, _ = self._outcome(eta[:, :, None] + points[self.groups][:, None, :], scale)
        terms = weights[:, :, None] + log_f
        posterior = np.exp(terms - np.logaddexp(terms[:, 0], terms[:, 1])[:, None, :])  # respondents × z × nodes
        at = node_weights[self.groups]  # respondents × nodes: each node's share of its group's integral
        by_z = np.einsum("izk,ik->iz", posterior, at)  # P(z | everything), averaged over u
        slope = np.einsum("izk,izk,ik->iz", posterior, first, at)
        model = self.model
        d_beta = model.exog_no.T @ slope[:, 0] + model.exog_yes.T @ slope[:, 1]
        d_gamma = self.latent_exog.T @ (by_z[:, 1] - expit(self.latent_exog @ model._split(params)[1]))
        parts = [d_beta, d_gamma]
        if scale is not None:
            residual = (self.reports[:, None, None] - eta[:, :, None] - points[self.groups][:, None, :]) / scale
            parts.append(np.array([np.einsum("izk,izk,ik->", posterior, residual**2 - 1, at)]))
        d_log_tau = float(np.sum(node_weights * points**2) / tau**2) - self.count
        return total, np.concatenate([*parts, [d_log_tau]])

    def _quadrature(self, params: np.ndarray, tau: float, nodes: int, keep: bool = False):
        modes, curvature, _ = self.modes(params, tau, self._warm_start)
        self._warm_start = modes
        weights, eta, scale = self._fixed(params)
        points = quadrature_points(modes, curvature, nodes)
        values, *_ = self._respondents(weights, eta, scale, points[self.groups])
        sums = np.stack([np.bincount(self.groups, weights=column, minlength=self.count) for column in values.T], axis=1)
        groups, node_weights = integrated(sums, points, curvature, tau, nodes)
        if not keep:
            return (float(groups.sum()),)
        return float(groups.sum()), node_weights, points, weights, eta, scale
