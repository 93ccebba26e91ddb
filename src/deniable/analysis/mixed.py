"""Multilevel logistic regression of a randomized yes/no answer: fixed effects of public covariates and a random
intercept per group (a school, a village, a clinic), as RRreg's ``RRmixed`` fits through lme4's ``glmer``.

    mixed("cheated ~ age + C(sex) + (1 | school)", data)

The randomized answer's channel is in the likelihood (`mixed_likelihood`): P(report = yes) = q + (p − q)·σ(xᵀβ + u),
u ~ N(0, τ²) per group. Fitted by maximum likelihood with adaptive Gauss–Hermite quadrature, starting from 15 nodes
and adding nodes until doubling them moves the log-likelihood at the estimate by less than 1e-4 (randomized groups
of 40 or more need 31 to 63: `mixed_likelihood` says why), and certified as the other fits are: Newton steps polish
the optimum until the Newton decrement (what one more step could add to the log-likelihood) is below 1e-6, and the
information is positive definite. τ's interval inverts the
profile likelihood (its lower end is 0 when τ = 0 is inside), and its test against τ = 0 is the likelihood ratio
against the 50:50 mixture of χ²₀ and χ²₁ (τ = 0 is on the boundary).

Supported: one grouping factor, random intercepts, yes/no designs (any channel with two reports). Refused, by name: a
random slope, a second grouping factor, a design with groups of reports (cheating detection, the lie detector), and
design weights (a pseudo-likelihood with scaled weights is not implemented).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy
from scipy import optimize
from statsmodels.tools.numdiff import approx_hess3

from deniable.client.compliance import GroupedMechanism

from . import channels, distributions
from .errors import AnalysisError
from .family import Result, interval_plot
from .formulas import all_questions, formula_frame, formula_names, missing_report, randomized_arm
from .mixed_likelihood import GroupedReports
from .regression import logistic
from .sample_design import SampleDesign

#: Gauss–Hermite nodes per group to start with; the fit doubles them (2·nodes + 1) until doing so moves the
#: log-likelihood at the estimate by less than QUADRATURE_TOLERANCE (a hundredth of the profile interval's cut's
#: precision: the χ²₁ cut is 3.84), up to MOST_NODES.
NODES = 15
QUADRATURE_TOLERANCE = 1e-4
MOST_NODES = 127
#: log τ is searched within [log TAU_FLOOR, log TAU_CEILING]: a τ at the floor is reported as 0 (the boundary).
TAU_FLOOR, TAU_CEILING = 1e-4, 20.0
_RANDOM = re.compile(r"\(\s*([^()|]+?)\s*\|\s*([^()|]+?)\s*\)")


@dataclass(frozen=True)
class MixedResult(Result):
    """A multilevel fit: ``fixed`` (estimate, se, ci_low, ci_high, z, pvalue per term), the random intercepts' standard
    deviation ``tau`` with its profile-likelihood interval ``tau_ci`` and test against 0 (``tau_pvalue``), the
    latent intraclass correlation ``icc`` = τ²/(τ² + π²/3), each group's predicted effect (``group_effects``: the
    conditional mode of u given its reports, its conditional SE, and n), and how the fit was certified."""

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
    #: What predictions need (`small_areas`): the estimates (β, log τ) and their covariance (the inverse information;
    #: β's block alone when τ is at 0), the reports the fit was made from, and how a table's covariates become the
    #: fixed effects' columns (patsy's design of the formula; None for a fit from arrays).
    theta: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros(0))
    theta_covariance: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros((0, 0)))
    data: GroupedReports | None = field(repr=False, compare=False, default=None)
    design_info: object | None = field(repr=False, compare=False, default=None)
    #: The respondents' covariates and group, with a ``weight`` column (the spec's design weights, named by
    #: ``sample_weights``, or 1 each): the sample's own population table (`small_areas(fit, "sample")`).
    sample: pd.DataFrame | None = field(repr=False, compare=False, default=None)
    sample_weights: str | None = field(repr=False, compare=False, default=None)

    @property
    def icc(self) -> float:
        return self.tau**2 / (self.tau**2 + math.pi**2 / 3)

    @property
    def converged(self) -> bool:
        """The certificate: the information positive definite, and the Newton decrement (what one more Newton step
        could add to the log-likelihood) below 1e-6."""
        return self.smallest_eigenvalue > 0 and self.newton_decrement < 1e-6

    def to_frame(self) -> pd.DataFrame:
        row = pd.DataFrame([[self.tau, math.nan, self.tau_ci[0], self.tau_ci[1], math.nan, self.tau_pvalue]],
                           columns=self.fixed.columns, index=[f"sd({self.group})"])
        frame = pd.concat([self.fixed, row])
        frame.index.name = "term"
        frame.attrs.update(level=self.level, n=self.n, groups=len(self.group_effects), loglik=self.loglik,
                           icc=self.icc, nodes=self.nodes, converged=self.converged)
        return frame

    def _summary_lines(self) -> list[str]:
        low, high = self.tau_ci
        return [f"Multilevel logistic regression of a randomized answer: {self.formula}",
                f"n = {self.n} in {len(self.group_effects)} groups of {self.group}; adaptive Gauss–Hermite quadrature, "
                f"{self.nodes} nodes; log-likelihood {self.loglik:.4f}",
                f"Random intercepts: sd {self.tau:.4g}, {self.level:.0%} profile CI [{low:.4g}, {high:.4g}]; "
                f"against sd = 0: p = {self.tau_pvalue:.3g} (boundary: ½χ²₀ + ½χ²₁); latent ICC {self.icc:.3g}",
                f"Fit: {'certified' if self.converged else 'NOT CERTIFIED'} (Newton decrement "
                f"{self.newton_decrement:.1e}, smallest eigenvalue of the information {self.smallest_eigenvalue:.3g})",
                *[f"Note: {note}" for note in self.notes]]

    def plot(self, ax=None):
        """Each group's predicted effect with its conditional interval at ``level``, ordered (matplotlib). Returns the
        axes."""
        effects = self.group_effects.sort_values("effect")
        z = distributions.norm_isf((1 - self.level) / 2)
        return interval_plot(ax, [str(name) for name in effects.index], effects["effect"],
                             effects["effect"] - z * effects["se"], effects["effect"] + z * effects["se"],
                             f"predicted effect of {self.group} on the log-odds ({self.level:.0%} conditional intervals)",
                             f"{self.formula} (sd {self.tau:.3g})")

    def __repr__(self) -> str:
        return (f"<MixedResult {self.formula} n={self.n} groups={len(self.group_effects)} sd={self.tau:.3g}"
                f"{'' if self.converged else ' NOT CERTIFIED'}>")


def mixed(formula: str, data, *, level: float = 0.95, nodes: int | None = None, design=None) -> MixedResult:
    """Fit ``outcome ~ covariates + (1 | group)`` over loaded data (`load`): the outcome a randomized yes/no question,
    the covariates public questions or the data's own columns, the group a public question or a column (a frame's
    PSU, say). A group of one respondent is allowed (it informs τ little, and says so through its conditional SE).

    ``nodes``: None adds quadrature nodes until the log-likelihood is settled (the default); a number holds them
    there (1: the Laplace approximation, lme4's and RRreg's default; a note says when doubling them would move the
    log-likelihood by more than 1e-4)."""
    if design is not None:
        raise AnalysisError("design: mixed() does not take design weights (a pseudo-likelihood with scaled weights, "
                            "as Stata's melogit with pweight, is not implemented); fit it unweighted or use "
                            "logistic(..., design=...)", "design")
    if not 0 < level < 1:
        raise AnalysisError(f"level must be between 0 and 1, got {level!r}", "level")
    if nodes is not None and (not isinstance(nodes, int) or not 1 <= nodes <= MOST_NODES):
        raise AnalysisError(f"nodes: a whole number from 1 (Laplace) to {MOST_NODES}, or None, got {nodes!r}", "nodes")
    if not hasattr(data, "design_frame") or not hasattr(data, "question"):
        raise TypeError("mixed(formula, data) needs data from deniable.analysis.load()")
    outcome, fixed_terms, group = _parsed(formula)
    question = data.question(outcome)
    mechanism = question.mechanism
    if isinstance(mechanism, GroupedMechanism) or len(getattr(mechanism, "answers", [])) != 2:
        raise AnalysisError(f"{outcome}: mixed() models a yes/no answer through a channel of two reports; "
                            f"{mechanism.design} is not one", "formula")
    used = [qid for qid in formula_names(f"{fixed_terms} + {group}") if qid in set(all_questions(data))]
    randomized = [qid for qid in used if data.question(qid).is_private]
    if randomized:
        raise AnalysisError(f"formula: {', '.join(randomized)} is randomized; covariates and groups must be public",
                            "formula")
    spec_design = SampleDesign.of(data.survey) if hasattr(data, "survey") else None
    weighted = spec_design if spec_design is not None and spec_design.weights is not None else None
    frame = formula_frame(data, outcome, used, f"{fixed_terms} + {group}", design=weighted)
    if group not in frame.columns:
        raise AnalysisError(f"formula: the grouping factor {group!r} is neither a public question nor a column of "
                            "the data", "formula")
    split = question.split_ballot
    reports = frame[outcome].map(lambda r: randomized_arm(split, r) if split is not None else r)
    keep = reports.map(lambda r: not missing_report(r)) & frame[group].map(lambda g: not missing_report(g))
    frame, reports = frame[keep], reports[keep]
    try:
        exog = patsy.dmatrix(fixed_terms, frame, return_type="dataframe", NA_action="drop")
    except patsy.PatsyError as error:
        raise AnalysisError(f"formula {formula!r}: {error}", "formula") from None
    reports, labels = reports.loc[exog.index], frame.loc[exog.index, group].astype(str)
    codes, names = pd.factorize(labels, sort=True)
    channel = channels.binary_channel(mechanism)
    yes = (reports == mechanism.answers[0]).to_numpy(dtype=float)
    result = fit_mixed(GroupedReports(yes, exog.to_numpy(), codes, channel.p, channel.q), list(exog.columns),
                       list(names), formula=formula, group=group, level=level, nodes=nodes or NODES, adapt=nodes is None,
                       start=_fixed_start(question, reports, exog))
    # The sample's own covariate cells, each respondent counted by its design weight (1 without one): the population
    # `small_areas(fit, "sample")` post-stratifies over when no census table is at hand.
    covariates = [name for name in frame.columns if name not in (outcome, group)
                  and name in formula_names(fixed_terms)]
    cells = frame.loc[exog.index, [*covariates, group]].copy()
    cells["weight"] = weighted.resolve(frame.loc[exog.index]).weights if weighted is not None else 1.0
    return dataclasses.replace(result, design_info=exog.design_info, sample=cells,
                               sample_weights=None if weighted is None else str(weighted.weights)
                               if isinstance(weighted.weights, str) else "the design's weights")


def _parsed(formula: str) -> tuple[str, str, str]:
    """(outcome, fixed terms, the grouping factor) of ``y ~ x + (1 | g)``; refusals name what is not supported."""
    if formula.count("~") != 1:
        raise AnalysisError(f"formula {formula!r}: write it as 'outcome ~ covariates + (1 | group)'", "formula")
    outcome, terms = (part.strip() for part in formula.split("~"))
    random = _RANDOM.findall(terms)
    if not random:
        raise AnalysisError(f"formula {formula!r}: no random intercept; add '+ (1 | group)' (or use logistic())",
                            "formula")
    slopes = [f"({left} | {right})" for left, right in random if left.replace(" ", "") not in ("1", "1+0", "0+1")]
    if slopes:
        raise AnalysisError(f"formula: {slopes[0]} is a random slope; mixed() fits random intercepts only, "
                            "(1 | group)", "formula")
    if len(random) > 1:
        raise AnalysisError(f"formula: ({random[1][0]} | {random[1][1]}) is a second grouping factor; mixed() fits "
                            "one (several need quadrature over several dimensions, not implemented)", "formula")
    fixed = _RANDOM.sub("", terms).strip().strip("+").strip()
    fixed = re.sub(r"\+\s*\+", "+", fixed) or "1"
    return outcome, fixed, random[0][1].strip()


def _fixed_start(question, reports: pd.Series, exog: pd.DataFrame) -> np.ndarray | None:
    """The fixed-effects fit's coefficients (τ = 0), where it converges: the mixed fit's start."""
    try:
        return np.asarray(logistic(question, reports, exog, intercept=False).params, dtype=float)
    except Exception:  # noqa: BLE001 - a start only: a separated or degenerate fixed fit leaves zeros
        return None


def fit_mixed(data: GroupedReports, terms: list[str], group_names: list[str], *, formula: str = "", group: str = "group",
              level: float = 0.95, nodes: int = NODES, adapt: bool = True,
              start: np.ndarray | None = None) -> MixedResult:
    """The maximum-likelihood fit of (β, τ) and what it reports (`MixedResult`); ``adapt``: nodes added until the
    log-likelihood is settled (else held at ``nodes``)."""
    k = data.exog.shape[1]

    def negative(theta):
        return -data.loglik(theta[:k], math.exp(theta[k]), nodes)

    def negative_and_gradient(theta):
        value, gradient = _value_and_gradient(data, theta[:k], math.exp(theta[k]), nodes)
        return -value, -gradient

    theta = np.append(np.zeros(k) if start is None else start, math.log(0.5))
    bounds = [(None, None)] * k + [(math.log(TAU_FLOOR), math.log(TAU_CEILING))]
    while True:
        found = optimize.minimize(negative_and_gradient, theta, jac=True, method="L-BFGS-B",
                                  bounds=bounds, options={"maxiter": 500, "ftol": 1e-13, "gtol": 1e-8})
        theta = found.x
        finer = data.loglik(theta[:k], math.exp(theta[k]), 2 * nodes + 1)
        moved = finer + float(found.fun)
        if not adapt or abs(moved) < QUADRATURE_TOLERANCE or 2 * nodes + 1 > MOST_NODES:
            break
        nodes = 2 * nodes + 1  # refit from here with the finer rule
    # τ near 0 is the boundary whether or not the optimiser reached the floor: the log-likelihood is flat in log τ
    # there (it moves with τ²), so a stop at τ = 2e-5 or 6e-5 left the information singular in log τ. Where putting
    # τ at the floor costs nothing, it is there.
    at_floor = theta[k] <= math.log(TAU_FLOOR) + 1e-6 or (
        math.exp(theta[k]) < 0.01 and data.loglik(theta[:k], TAU_FLOOR, nodes) >= -float(found.fun) - 1e-7)
    if at_floor:
        theta[k] = math.log(TAU_FLOOR)
    notes = []
    free = np.arange(k if at_floor else k + 1)
    theta, hessian, decrement = _polished(negative, theta, free)
    if theta[k] >= math.log(TAU_CEILING / 2):
        notes.append(f"the random intercepts' sd ran toward its ceiling ({TAU_CEILING:g} on the log-odds scale): these "
                     "reports do not bound how much the groups differ (too few reports per group, or a group's all "
                     "one way), and the estimates mean little; fit fewer covariates, or groups with more respondents")
    eigenvalues = np.linalg.eigvalsh(hessian)
    covariance = np.linalg.pinv(hessian)
    loglik = -negative(theta)
    tau = 0.0 if at_floor else math.exp(theta[k])
    if abs(moved) >= QUADRATURE_TOLERANCE:
        notes.append(f"{2 * nodes + 1} quadrature nodes still move the log-likelihood by {moved:.2e} (more than "
                     f"{QUADRATURE_TOLERANCE:g}): the estimate's integrals are approximate at that order")
    if at_floor:
        notes.append("the random intercepts' sd is at 0 (the boundary): the groups differ no more than chance; the "
                     "fixed effects are those of the model without them")
    z = distributions.norm_isf((1 - level) / 2)
    se = np.sqrt(np.clip(np.diag(covariance)[:k], 0, None))
    beta = theta[:k]
    fixed = pd.DataFrame({"estimate": beta, "se": se, "ci_low": beta - z * se, "ci_high": beta + z * se,
                          "z": beta / np.where(se > 0, se, np.nan)}, index=pd.Index(terms, name="term"))
    fixed["pvalue"] = 2 * distributions.norm_sf(np.abs(fixed["z"].to_numpy()))
    without = _profile(data, nodes, beta, k, TAU_FLOOR)
    statistic = max(2 * (loglik - without), 0.0)
    tau_pvalue = 0.5 * float(distributions.chi2_sf(statistic, 1)) if statistic > 0 else 1.0
    tau_ci = _tau_interval(data, nodes, beta, k, loglik, tau, level)
    modes, curvature, _ = data.modes(beta, max(tau, TAU_FLOOR))
    effects = pd.DataFrame({"effect": modes, "se": 1 / np.sqrt(curvature), "n": data.sizes},
                           index=pd.Index(group_names, name=group))
    if (data.sizes == 1).any():
        notes.append(f"{int((data.sizes == 1).sum())} groups have one respondent: each predicted effect is shrunk "
                     "toward 0 by its few reports (read its SE)")
    return MixedResult(formula, group, level, fixed, tau, tau_ci, tau_pvalue, effects, int(len(data.reports)), loglik,
                       nodes, decrement, float(eigenvalues.min()), tuple(notes), theta=theta,
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


def _value_and_gradient(data: GroupedReports, beta: np.ndarray, tau: float, nodes: int) -> tuple[float, np.ndarray]:
    """The log-likelihood and its gradient in (β, log τ): by the quadrature's own derivative where there are nodes to
    average over, by central differences for the Laplace approximation (whose curvature term moves with the point at
    first order). The optimum is then polished and certified by differences either way (`_polished`)."""
    if nodes > 1:
        return data.loglik_gradient(beta, tau, nodes)
    theta = np.append(beta, math.log(tau))
    value = data.loglik(beta, tau, nodes)
    return value, _central_gradient(lambda t: data.loglik(t[:-1], math.exp(t[-1]), nodes), theta)


def _central_gradient(function, theta: np.ndarray, step: float = 1e-5) -> np.ndarray:
    gradient = np.empty_like(theta)
    for i in range(len(theta)):
        up, down = theta.copy(), theta.copy()
        up[i] += step
        down[i] -= step
        gradient[i] = (function(up) - function(down)) / (2 * step)
    return gradient


def _profile(data: GroupedReports, nodes: int, beta: np.ndarray, k: int, tau: float,
             maximisers: dict | None = None) -> float:
    """The log-likelihood maximised over β with τ held, from the maximiser of the nearest τ already profiled
    (``maximisers``: {log τ: β}, added to), else from β̂: the maximiser moves little with τ. A gradient of 1e-5 leaves
    the maximum within 1e-9 of itself, far inside the interval's cut."""
    def negative(b):
        value, gradient = _value_and_gradient(data, b, tau, nodes)
        return -value, -gradient[:k]

    start = beta
    if maximisers:
        start = maximisers[min(maximisers, key=lambda log_tau: abs(log_tau - math.log(tau)))]
    found = optimize.minimize(negative, start, jac=True, method="BFGS", options={"gtol": 1e-5})
    if maximisers is not None:
        maximisers[math.log(tau)] = found.x
    return -float(found.fun)


def _tau_interval(data, nodes, beta, k, loglik, tau, level) -> tuple[float, float]:
    """τ's profile-likelihood interval: where 2(ℓ̂ − ℓ_p(τ)) reaches χ²₁'s quantile; 0 at the lower end when τ = 0 is
    inside, infinite at the upper end when τ = `TAU_CEILING` is (a few randomized reports per group bound τ from
    below only). Each end is bracketed within a factor e of the estimate first, then searched to 0.2% of itself:
    every point costs a fit of β."""
    cut = float(distributions.chi2_ppf(level, 1))
    known: dict = {}
    maximisers: dict = {math.log(max(tau, TAU_FLOOR)): beta}

    def excess(log_tau):
        if log_tau not in known:
            known[log_tau] = 2 * (loglik - _profile(data, nodes, beta, k, math.exp(log_tau), maximisers)) - cut
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
