"""Small-area estimates from a multilevel fit of a randomized answer: multilevel regression and post-stratification.

    fit = mixed("cheated ~ C(agecat) + (1 | district)", data)
    small_areas(fit, population)            # population: one row per cell (district × agecat) with its count

Each area's share is the population-weighted average, over its cells, of the model's probability of a true "yes",
Σ_c N_c σ(x_cᵀβ + u_a) / Σ_c N_c, with u_a the area's random intercept: an area the sample reached has its share's
expectation over u_a's conditional distribution given its reports (by the fit's own adaptive quadrature nodes), an
area it did not reach its expectation over the model's N(0, τ²), the covariates' alone. The intervals are a parametric
bootstrap of the fit: the estimates (β, log τ) drawn from their asymptotic normal, then u_a drawn from its conditional
distribution at that draw (sampling-importance-resampling, `GroupedReports.posterior_draw`: the normal at the mode
missed the shoulder a randomized area's conditional keeps, and its intervals held the truth 0.93 of the time) or
from N(0, τ²), the area's share computed; the interval is the draws' percentiles. It is an approximation (the
asymptotic normal of the estimates), stated in the result; its coverage by area size is in docs/validation.md.

Beside each sampled area, its direct estimate: its own reports through the channel, (λ − q)/(p − q) with its binomial
SE, unbiased and noisy; ``shrinkage`` is how much of the area's intercept comes from the model rather than from its own
reports, (1/τ²) over the area's expected information (Fay–Herriot's B: 0, its reports alone; 1, the model alone, as
for an area without respondents).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy
from scipy.special import expit

from .errors import AnalysisError
from .family import Result, interval_plot
from .mixed import MixedResult
from .mixed_fit import TAU_CEILING
from .mixed_likelihood import GroupedReports, hermite
from .mixed_predictor import PredictorReports

#: Bootstrap draws of the fit, and the seed they are drawn with (the same fit gives the same intervals).
DRAWS = 1000
SEED = 20261129


@dataclass(frozen=True)
class SmallAreas(Result):
    """Each area's estimated share of true "yes" with its interval, its respondents and population, and beside it the
    direct estimate of its own reports (``table``, one row per area)."""

    table: pd.DataFrame = field(repr=False)
    area: str
    level: float
    draws: int
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        frame = self.table.copy()
        frame.attrs.update(level=self.level, area=self.area, draws=self.draws)
        return frame

    def _summary_lines(self) -> list[str]:
        table = self.table
        reached = int((table["respondents"] > 0).sum())
        return [f"Small-area estimates by {self.area}: {len(table)} areas, {reached} with respondents, "
                f"{len(table) - reached} without",
                f"Intervals: {self.level:.0%}, parametric bootstrap of the multilevel fit ({self.draws} draws: the "
                "estimates from their asymptotic normal, each area's effect from its conditional distribution)",
                *[f"Note: {note}" for note in self.notes]]

    def plot(self, ax=None):
        """Each area's estimate with its interval, ordered (matplotlib). Returns the axes."""
        table = self.table.sort_values("estimate")
        return interval_plot(ax, [str(name) for name in table.index], table["estimate"], table["ci_low"],
                             table["ci_high"], f"estimated share ({self.level:.0%} intervals)",
                             f"small areas by {self.area}", bounds=(0, 1))

    def __repr__(self) -> str:
        return f"<SmallAreas by {self.area}: {len(self.table)} areas, {self.level:.0%} intervals>"


def small_areas(fit: MixedResult, population: pd.DataFrame | str, *, by: str | None = None, count: str = "count",
                draws: int = DRAWS) -> SmallAreas:
    """Post-stratify ``fit`` over ``population``: one row per cell, the fixed effects' covariates, the area (``by``;
    by default the fit's grouping factor, whose levels are the areas the model knows) and the cell's ``count``. An
    area of the table the sample did not reach is estimated from its covariates and τ alone.

    ``population="sample"``: the sample's own cells, each respondent counted by the spec's design weight (1 without
    one), so each area's covariates are those of its respondents; areas without respondents are then not in it (a
    census table or the frame's counts bring them)."""
    if isinstance(fit.data, PredictorReports):
        raise AnalysisError("fit: small areas are shares of a randomized answer; this fit models a public outcome "
                            "with a randomized covariate", "fit")
    if fit.data is None or fit.design_info is None:
        raise AnalysisError("small_areas: needs a fit of mixed(formula, data), which keeps how covariates enter",
                            "fit")
    if not isinstance(fit.data, GroupedReports) or len(fit.components) > 1:
        raise AnalysisError(f"fit: small_areas post-stratifies a fit with one grouping factor, the areas; this one has "
                            f"{len(fit.components)} ({', '.join(fit.components.index)})", "fit")
    sampled = isinstance(population, str)
    if isinstance(population, str):
        if population != "sample" or fit.sample is None:
            raise AnalysisError(f"population: a table (one row per cell, with {count!r}) or \"sample\", got "
                                f"{population!r}", "population")
        cells = fit.sample
        keys = [fit.group, *cells.columns.drop(["weight", fit.group])]  # areas in order, then their cells
        population = (cells.groupby(keys, observed=True, sort=True, dropna=False)["weight"]
                      .sum().rename(count).reset_index())
    area = by or fit.group
    if area != fit.group:
        raise AnalysisError(f"by: {area!r} is not the fit's grouping factor {fit.group!r}; the areas are its groups",
                            "by")
    missing = [column for column in (area, count) if column not in population.columns]
    if missing:
        raise AnalysisError(f"population: no column {missing[0]!r} (one row per cell: the covariates, {area!r} and "
                            f"{count!r})", "population")
    counts = pd.to_numeric(population[count], errors="coerce")
    if counts.isna().any() or (counts < 0).any() or counts.sum() <= 0:
        raise AnalysisError(f"population: {count!r} must be a count (a number ≥ 0) in every cell, and not all 0",
                            "population")
    try:
        exog = np.asarray(patsy.build_design_matrices([fit.design_info], population, NA_action="raise")[0])
    except patsy.PatsyError as error:
        raise AnalysisError(f"population: its cells do not match the model's covariates ({error})", "population") \
            from None
    areas = population[area].astype(str).to_numpy()
    known = {name: position for position, name in enumerate(fit.group_effects.index.astype(str))}
    names = list(dict.fromkeys(areas))
    rng = np.random.default_rng(SEED)
    k = exog.shape[1]
    thetas = rng.multivariate_normal(fit.theta, fit.theta_covariance, draws, method="eigh")
    if fit.tau == 0:  # τ on its boundary at 0: the draws keep it there
        thetas[:, k] = -np.inf
    beta, tau = fit.theta[:k], fit.tau
    modes, _, information = fit.data.modes(beta, max(tau, 1e-4))
    points, masses = fit.data.posterior_nodes(beta, max(tau, 1e-4), max(fit.nodes, 31))
    # Per draw, vectorized over the cells: each area's effect (its conditional draw, or N(0, τ²) where unreached),
    # then the cells' expected "yes" summed per area.
    area_of = np.array([names.index(name) for name in areas])
    position_of = np.array([known.get(name, -1) for name in names])
    reached = position_of >= 0
    weights = counts.to_numpy(dtype=float)
    totals = np.bincount(area_of, weights=weights, minlength=len(names))
    drawn = np.empty((draws, len(names)))
    for d in range(draws):
        # a draw of log τ kept inside the fit's own search range: a poorly determined τ (a flat likelihood far out)
        # drew values whose exponential overflowed
        b, t = thetas[d, :k], math.exp(min(thetas[d, k], math.log(TAU_CEILING))) if np.isfinite(thetas[d, k]) else 0.0
        u = rng.normal(0.0, t, len(names))
        u[reached] = fit.data.posterior_draw(b, max(t, 1e-4), rng, start=modes)[position_of[reached]]
        drawn[d] = np.bincount(area_of, weights=weights * expit(exog @ b + u[area_of]), minlength=len(names)) / totals
    alpha = (1 - fit.level) / 2
    rows = []
    for j, name in enumerate(names):
        cells = areas == name
        position = known.get(name)
        synthetic = _expected_share(exog[cells], counts[cells].to_numpy(dtype=float), beta, 0.0, tau)
        estimate = synthetic
        if position is not None:  # the expectation over the area's conditional distribution, node by node
            shares = expit((exog[cells] @ beta)[:, None] + points[position][None, :])
            estimate = float(counts[cells].to_numpy(dtype=float) @ shares @ masses[position]
                             / counts[cells].sum())
        direct, direct_se, shrinkage = math.nan, math.nan, math.nan
        respondents = 0
        if position is not None:
            members = fit.data.groups == position
            respondents = int(members.sum())
            rate = float(fit.data.reports[members].mean())
            gap = fit.data.p - fit.data.q
            direct = (rate - fit.data.q) / gap
            direct_se = math.sqrt(rate * (1 - rate) / respondents) / abs(gap)
            # Fay–Herriot's B on the intercept's scale: the prior's share of the area's information. A ratio of the
            # estimates' gaps instead ran negative, or past 1, where the direct estimate was near the synthetic one.
            shrinkage = 1.0 if tau == 0 else float(1 / (tau**2 * information[position]))
        low, high = np.quantile(drawn[:, j], [alpha, 1 - alpha])
        rows.append((respondents, float(counts[cells].sum()), estimate, float(drawn[:, j].std(ddof=1)),
                     min(float(low), estimate), max(float(high), estimate), direct, direct_se, shrinkage))
    table = pd.DataFrame(rows, columns=["respondents", "population", "estimate", "se", "ci_low", "ci_high", "direct",
                                        "direct_se", "shrinkage"], index=pd.Index(names, name=area))
    notes = []
    if not fit.converged:
        notes.append("the multilevel fit is not certified (see its summary): these estimates inherit its doubt")
    if sampled:
        notes.append("population: the sample's own cells, each respondent counted by "
                     + (f"its design weight ({fit.sample_weights})" if fit.sample_weights else "1 (no design weights)")
                     + "; areas without respondents need a census table or the frame's counts")
    unreached = [name for name in names if name not in known]
    if unreached:
        notes.append(f"{len(unreached)} areas have no respondents ({', '.join(unreached[:8])}"
                     f"{' …' if len(unreached) > 8 else ''}): their estimates are their covariates' and τ's alone")
    absent = sorted(set(known) - set(names))
    if absent:
        notes.append(f"{len(absent)} areas of the fit are not in the population table and are left out")
    return SmallAreas(table, area, fit.level, draws, tuple(notes))


def _expected_share(exog: np.ndarray, counts: np.ndarray, beta: np.ndarray, centre: float, spread: float) -> float:
    """Σ_c N_c E[σ(x_cᵀβ + u)] / Σ_c N_c with u ~ N(centre, spread²), by Gauss–Hermite (61 nodes)."""
    z, w = hermite(61)
    u = centre + math.sqrt(2) * spread * z
    shares = expit((exog @ beta)[:, None] + u[None, :]) @ (w / math.sqrt(math.pi))
    return float(counts @ shares / counts.sum())
