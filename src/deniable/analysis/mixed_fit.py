"""The maximum-likelihood fit of a multilevel model of a randomized yes/no answer (`mixed` is its front door), and
what it reports (`MixedResult`).

θ = (β, log τ_1, …, log τ_F), one τ per grouping factor. One factor: adaptive Gauss–Hermite quadrature
(`mixed_likelihood`), from 15 nodes, doubled until doubling again moves the log-likelihood at the estimate by less
than 1e-4, and followed by the quadrature's own gradient. Several factors: the Laplace approximation
(`mixed_laplace`), by differences. Either way L-BFGS-B finds the optimum with each log τ inside
[log TAU_FLOOR, log TAU_CEILING], Newton steps polish it and certify it (the Newton decrement below 1e-6, the
information positive definite); a τ that putting at the floor costs nothing is at the boundary, 0. Each τ's interval
inverts its profile likelihood (the other parameters maximised), 0 at the lower end when 0 is inside; its test
against 0 is the likelihood ratio against ½χ²₀ + ½χ²₁ (0 is on the boundary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize
from statsmodels.tools.numdiff import approx_hess3

from . import distributions
from .family import Result, interval_plot
from .mixed_laplace import CrossedReports
from .mixed_likelihood import GroupedReports
from .mixed_predictor import PredictorReports

#: The data a fit can be of: one factor's reports, several factors', or a public outcome's with a randomized covariate.
Reports = GroupedReports | CrossedReports | PredictorReports

#: Gauss–Hermite nodes per group to start with; the fit doubles them (2·nodes + 1) until doing so moves the
#: log-likelihood at the estimate by less than QUADRATURE_TOLERANCE (a hundredth of the profile interval's cut's
#: precision: the χ²₁ cut is 3.84), up to MOST_NODES.
NODES = 15
QUADRATURE_TOLERANCE = 1e-4
MOST_NODES = 127
#: log τ is searched within [log TAU_FLOOR, log TAU_CEILING]: a τ at the floor is reported as 0 (the boundary).
TAU_FLOOR, TAU_CEILING = 1e-4, 20.0


@dataclass(frozen=True)
class MixedResult(Result):
    """A multilevel fit: ``fixed`` (estimate, se, ci_low, ci_high, z, pvalue per term); per grouping factor
    (``components``: sd, its profile-likelihood interval, its test against 0, its number of groups) the random
    intercepts' standard deviation, and each group's predicted effect (``effects[factor]``: the conditional mode of
    its intercept given the reports, its conditional SE, and n); how the fit was certified. ``group``, ``tau``,
    ``tau_ci``, ``tau_pvalue`` and ``group_effects`` are the first factor's (the only one's, mostly)."""

    formula: str
    group: str
    level: float
    fixed: pd.DataFrame = field(repr=False)
    tau: float
    tau_ci: tuple[float, float]
    tau_pvalue: float
    group_effects: pd.DataFrame = field(repr=False)
    n: int
    loglik: float
    nodes: int
    newton_decrement: float
    smallest_eigenvalue: float
    notes: tuple[str, ...] = ()
    components: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    effects: dict = field(repr=False, compare=False, default_factory=dict)
    #: What predictions need (`small_areas`): the estimates (β, log τ…) and their covariance (the inverse information;
    #: 0 in the rows of a τ at 0), the reports the fit was made from, and how a table's covariates become the fixed
    #: effects' columns (patsy's design of the formula; None for a fit from arrays).
    theta: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros(0))
    theta_covariance: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros((0, 0)))
    data: Reports | None = field(repr=False, compare=False, default=None)
    design_info: object | None = field(repr=False, compare=False, default=None)
    #: The respondents' covariates and groups, with a ``weight`` column (the spec's design weights, named by
    #: ``sample_weights``, or 1 each): the sample's own population table (`small_areas(fit, "sample")`).
    sample: pd.DataFrame | None = field(repr=False, compare=False, default=None)
    sample_weights: str | None = field(repr=False, compare=False, default=None)
    #: What the model is of: a randomized answer (`mixed_likelihood`, `mixed_laplace`), or a public outcome with a
    #: randomized covariate (`mixed_predictor`).
    model: str = "logistic regression of a randomized answer"

    @property
    def icc(self) -> float:
        """The latent intraclass correlation of the first factor: τ²/(Σ τ_f² + π²/3), the share of the latent
        variance its groups hold."""
        total = float(np.sum(self.components["sd"].to_numpy() ** 2)) if len(self.components) else self.tau**2
        return self.tau**2 / (total + math.pi**2 / 3)

    @property
    def converged(self) -> bool:
        """The certificate: the information positive definite, and the Newton decrement (what one more Newton step
        could add to the log-likelihood) below 1e-6."""
        return self.smallest_eigenvalue > 0 and self.newton_decrement < 1e-6

    @property
    def method(self) -> str:
        return (f"adaptive Gauss–Hermite quadrature, {self.nodes} nodes" if self.nodes > 1 else
                "the Laplace approximation (lme4's nAGQ = 1)")

    def to_frame(self) -> pd.DataFrame:
        rows = pd.DataFrame([[c.sd, math.nan, c.ci_low, c.ci_high, math.nan, c.pvalue]
                             for c in self.components.itertuples()], columns=self.fixed.columns,
                            index=[f"sd({factor})" for factor in self.components.index])
        frame = pd.concat([self.fixed, rows])
        frame.index.name = "term"
        frame.attrs.update(level=self.level, n=self.n, groups=len(self.group_effects), loglik=self.loglik,
                           icc=self.icc, nodes=self.nodes, converged=self.converged)
        return frame

    def _summary_lines(self) -> list[str]:
        groups = "; ".join(f"{int(c.groups)} groups of {factor}" for factor, c in self.components.iterrows())
        lines = [f"Multilevel {self.model}: {self.formula}",
                 f"n = {self.n} in {groups}; {self.method}; log-likelihood {self.loglik:.4f}"]
        for factor, c in self.components.iterrows():
            lines.append(f"Random intercepts of {factor}: sd {c.sd:.4g}, {self.level:.0%} profile CI "
                         f"[{c.ci_low:.4g}, {c.ci_high:.4g}]; against sd = 0: p = {c.pvalue:.3g} (boundary: "
                         f"½χ²₀ + ½χ²₁)")
        lines += [f"Latent ICC of {self.group}: {self.icc:.3g}",
                  f"Fit: {'certified' if self.converged else 'NOT CERTIFIED'} (Newton decrement "
                  f"{self.newton_decrement:.1e}, smallest eigenvalue of the information {self.smallest_eigenvalue:.3g})",
                  *[f"Note: {note}" for note in self.notes]]
        return lines

    def plot(self, ax=None, factor: str | None = None):
        """Each group's predicted effect (of ``factor``, by default the first) with its conditional interval at
        ``level``, ordered (matplotlib). Returns the axes."""
        factor = factor or self.group
        effects = self.effects.get(factor, self.group_effects).sort_values("effect")
        z = distributions.norm_isf((1 - self.level) / 2)
        return interval_plot(ax, [str(name) for name in effects.index], effects["effect"],
                             effects["effect"] - z * effects["se"], effects["effect"] + z * effects["se"],
                             f"predicted effect of {factor} on the log-odds ({self.level:.0%} conditional intervals)",
                             f"{self.formula} (sd {self.components.at[factor, 'sd']:.3g})")

    def __repr__(self) -> str:
        sds = " ".join(f"sd({factor})={c.sd:.3g}" for factor, c in self.components.iterrows())
        return (f"<MixedResult {self.formula} n={self.n} groups={len(self.group_effects)} {sds}"
                f"{'' if self.converged else ' NOT CERTIFIED'}>")


class _Likelihood:
    """ℓ(θ) of either kind of data, θ = (β, log τ_1, …): its value, and its gradient (the quadrature's own for one
    factor with nodes to average over; central differences for the Laplace approximation, whose curvature term moves
    with the point at first order)."""

    def __init__(self, data: Reports, nodes: int):
        self.data, self.nodes = data, nodes
        self.k = data.parameter_count

    def __call__(self, theta: np.ndarray) -> float:
        beta, taus = theta[:self.k], np.exp(theta[self.k:])
        if isinstance(self.data, CrossedReports):
            return self.data.loglik(beta, taus)
        return self.data.loglik(beta, float(taus[0]), self.nodes)

    def with_gradient(self, theta: np.ndarray, indices: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """ℓ(θ) and its gradient (by differences: in ``indices`` only, the others left 0)."""
        if isinstance(self.data, (GroupedReports, PredictorReports)) and self.nodes > 1:
            return self.data.loglik_gradient(theta[:self.k], math.exp(theta[self.k]), self.nodes)
        return self(theta), _central_gradient(self, theta, indices=indices)


def fit_mixed(data: Reports, terms: list[str], group_names, *, formula: str = "",
              group: str | list[str] = "group", level: float = 0.95, nodes: int = NODES, adapt: bool = True,
              start: np.ndarray | None = None) -> MixedResult:
    """The maximum-likelihood fit of (β, τ…) and what it reports. ``GroupedReports``: one factor, ``group_names``
    its groups' names, ``group`` its name; ``CrossedReports``: several, ``group_names`` a list per factor and
    ``group`` their names (the Laplace approximation: ``nodes`` and ``adapt`` are not used). ``adapt``: nodes added
    until the log-likelihood is settled (else held at ``nodes``)."""
    crossed = isinstance(data, CrossedReports)
    factors = list(group) if crossed else [group if isinstance(group, str) else group[0]]
    names = [list(level_names) for level_names in group_names] if crossed else [list(group_names)]
    if crossed:
        nodes, adapt = 1, False
    k, count = data.parameter_count, len(factors)
    theta = np.concatenate([np.zeros(k) if start is None else start, np.full(count, math.log(0.5))])
    bounds = [(None, None)] * k + [(math.log(TAU_FLOOR), math.log(TAU_CEILING))] * count
    while True:
        likelihood = _Likelihood(data, nodes)

        def negative_and_gradient(point):
            value, gradient = likelihood.with_gradient(point)
            return -value, -gradient

        found = optimize.minimize(negative_and_gradient, theta, jac=True, method="L-BFGS-B", bounds=bounds,
                                  options={"maxiter": 500, "ftol": 1e-13, "gtol": 1e-8})
        theta = found.x
        moved = 0.0 if crossed else _Likelihood(data, 2 * nodes + 1)(theta) + float(found.fun)
        if not adapt or abs(moved) < QUADRATURE_TOLERANCE or 2 * nodes + 1 > MOST_NODES:
            break
        nodes = 2 * nodes + 1  # refit from here with the finer rule
    notes = []
    at_floor = [False] * count
    for f in range(count):
        # τ near 0 is the boundary whether or not the optimiser reached the floor: the log-likelihood is flat in log τ
        # there (it moves with τ²), so a stop at τ = 2e-5 or 6e-5 left the information singular in log τ. Where
        # putting τ at the floor costs nothing, it is there.
        floored = theta.copy()
        floored[k + f] = math.log(TAU_FLOOR)
        at_floor[f] = theta[k + f] <= math.log(TAU_FLOOR) + 1e-6 or (
            math.exp(theta[k + f]) < 0.01 and likelihood(floored) >= likelihood(theta) - 1e-7)
        if at_floor[f]:
            theta = floored
    free = np.array([*range(k), *(k + f for f in range(count) if not at_floor[f])])
    theta, hessian, decrement = _polished(lambda t: -likelihood(t), theta, free)
    eigenvalues = np.linalg.eigvalsh(hessian)
    covariance = np.zeros((k + count, k + count))
    covariance[np.ix_(free, free)] = np.linalg.pinv(hessian)
    loglik = likelihood(theta)
    taus = np.where(at_floor, 0.0, np.exp(theta[k:]))
    if abs(moved) >= QUADRATURE_TOLERANCE:
        notes.append(f"{2 * nodes + 1} quadrature nodes still move the log-likelihood by {moved:.2e} (more than "
                     f"{QUADRATURE_TOLERANCE:g}): the estimate's integrals are approximate at that order")
    for f, factor in enumerate(factors):
        if at_floor[f]:
            notes.append(f"the random intercepts' sd of {factor} is at 0 (the boundary): its groups differ no more "
                         "than chance" + ("; the fixed effects are those of the model without them" if count == 1
                                          else ""))
        elif taus[f] >= TAU_CEILING / 2:
            notes.append(f"the random intercepts' sd of {factor} ran toward its ceiling ({TAU_CEILING:g} on the "
                         "log-odds scale): these reports do not bound how much its groups differ (too few reports "
                         "per group, or a group's all one way), and the estimates mean little; fit fewer covariates, "
                         "or groups with more respondents")
    z = distributions.norm_isf((1 - level) / 2)
    se = np.sqrt(np.clip(np.diag(covariance)[:k], 0, None))
    beta = theta[:k]
    fixed = pd.DataFrame({"estimate": beta, "se": se, "ci_low": beta - z * se, "ci_high": beta + z * se,
                          "z": beta / np.where(se > 0, se, np.nan)}, index=pd.Index(terms, name="term"))
    fixed["pvalue"] = 2 * distributions.norm_sf(np.abs(fixed["z"].to_numpy()))
    rows = []
    for f in range(count):
        profile = _Profile(likelihood, theta, free, k + f)
        statistic = max(2 * (loglik - profile(TAU_FLOOR)), 0.0)
        pvalue = 0.5 * float(distributions.chi2_sf(statistic, 1)) if statistic > 0 else 1.0
        low, high = profile.interval(loglik, float(taus[f]), level)
        rows.append((float(taus[f]), low, high, pvalue, data.counts[f]))
    components = pd.DataFrame(rows, columns=["sd", "ci_low", "ci_high", "pvalue", "groups"],
                              index=pd.Index(factors, name="factor"))
    effects = {}
    predicted = data.effects(beta, np.maximum(taus, TAU_FLOOR))
    for f, (factor, (modes, ses)) in enumerate(zip(factors, predicted)):
        sizes = data.factor_sizes[f]
        effects[factor] = pd.DataFrame({"effect": modes, "se": ses, "n": sizes},
                                       index=pd.Index(names[f], name=factor))
        if (sizes == 1).any():
            notes.append(f"{int((sizes == 1).sum())} groups of {factor} have one respondent: each predicted effect is "
                         "shrunk toward 0 by its few reports (read its SE)")
    first = components.iloc[0]
    return MixedResult(formula, factors[0], level, fixed, float(first.sd), (float(first.ci_low), float(first.ci_high)),
                       float(first.pvalue), effects[factors[0]], int(len(data.reports)), loglik, nodes, decrement,
                       float(eigenvalues.min()), tuple(notes), components=components, effects=effects, theta=theta,
                       theta_covariance=covariance, data=data)


def _polished(negative, theta: np.ndarray, free: np.ndarray, steps: int = 3) -> tuple[np.ndarray, np.ndarray, float]:
    """Newton steps on the free parameters from the quasi-Newton optimum (halved while they do not improve it), so
    that the certificate is the Newton decrement's: (θ, the Hessian of −ℓ there, g·H⁻¹·g). The decrement is what
    one more step could still add to the log-likelihood, a measure that does not depend on the covariates' scales
    (a coefficient per year of age has a gradient a hundred times one per decade's)."""
    def decrement(point):
        gradient = _central_gradient(negative, point)[free]
        hessian = approx_hess3(point, negative)[np.ix_(free, free)]
        return gradient, hessian, float(gradient @ np.linalg.lstsq(hessian, gradient, rcond=None)[0])

    gradient, hessian, left = decrement(theta)
    for _ in range(steps):
        if left < 1e-12 or np.linalg.eigvalsh(hessian).min() <= 0:
            break
        step = np.zeros_like(theta)
        step[free] = -np.linalg.solve(hessian, gradient)
        current = negative(theta)
        for _ in range(20):
            if negative(theta + step) <= current:
                theta = theta + step
                break
            step /= 2
        else:
            break
        gradient, hessian, left = decrement(theta)
    return theta, hessian, left


def _central_gradient(function, theta: np.ndarray, step: float = 1e-5, indices=None) -> np.ndarray:
    gradient = np.zeros_like(theta)
    for i in range(len(theta)) if indices is None else indices:
        up, down = theta.copy(), theta.copy()
        up[i] += step
        down[i] -= step
        gradient[i] = (function(up) - function(down)) / (2 * step)
    return gradient


class _Profile:
    """ℓ_p(τ_f): the log-likelihood maximised over the other free parameters with τ_f held, each point started from
    the maximiser of the nearest τ_f already profiled (the maximiser moves little with τ); a gradient of 1e-5 leaves
    the maximum within 1e-9 of itself, far inside the interval's cut."""

    def __init__(self, likelihood: _Likelihood, theta: np.ndarray, free: np.ndarray, index: int):
        self.likelihood, self.theta, self.index = likelihood, theta, index
        self.others = np.array([i for i in free if i != index])
        self.maximisers: dict = {float(theta[index]): theta[self.others]}
        k = likelihood.k
        self.bounds = [(None, None) if i < k else (math.log(TAU_FLOOR), math.log(TAU_CEILING)) for i in self.others]

    def __call__(self, tau: float) -> float:
        log_tau = math.log(tau)
        point = self.theta.copy()
        point[self.index] = log_tau

        def negative(values):
            point[self.others] = values
            value, gradient = self.likelihood.with_gradient(point, self.others)
            return -value, -gradient[self.others]

        start = self.maximisers[min(self.maximisers, key=lambda known: abs(known - log_tau))]
        bounded = any(i >= self.likelihood.k for i in self.others)
        found = optimize.minimize(negative, start, jac=True, method="L-BFGS-B" if bounded else "BFGS",
                                  bounds=self.bounds if bounded else None,
                                  options={"gtol": 1e-5})
        self.maximisers[log_tau] = found.x
        return -float(found.fun)

    def interval(self, loglik: float, tau: float, level: float) -> tuple[float, float]:
        """τ_f's profile-likelihood interval: where 2(ℓ̂ − ℓ_p(τ)) reaches χ²₁'s quantile; 0 at the lower end when
        τ = 0 is inside, infinite at the upper end when τ = `TAU_CEILING` is (a few randomized reports per group
        bound τ from below only). Each end is bracketed within a factor e of the estimate first, then searched to
        0.2% of itself: every point costs a fit of the other parameters."""
        cut = float(distributions.chi2_ppf(level, 1))
        known: dict = {}

        def excess(log_tau):
            if log_tau not in known:
                known[log_tau] = 2 * (loglik - self(math.exp(log_tau))) - cut
            return known[log_tau]

        floor, ceiling = math.log(TAU_FLOOR), math.log(TAU_CEILING)
        centre = min(max(math.log(max(tau, TAU_FLOOR)), floor), ceiling)
        low = 0.0
        if tau > 0:
            near = max(centre - 1.0, floor)
            bracket = (near, centre) if excess(near) > 0 else (floor, near) if excess(floor) > 0 else None
            if bracket is not None:
                low = math.exp(optimize.brentq(excess, *bracket, xtol=2e-3))
        near = min(centre + 1.0, ceiling)
        bracket = (centre, near) if excess(near) > 0 else (near, ceiling) if excess(ceiling) > 0 else None
        high = math.inf if bracket is None else math.exp(optimize.brentq(excess, *bracket, xtol=2e-3))
        return low, high
