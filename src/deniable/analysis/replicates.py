"""Replicate weights: the variance of a design-based estimate from the spread of the estimate recomputed with each
replicate's weights, the alternative to linearization (R's ``as.svrepdesign`` / ``svrepdesign``, Stata's
``svy jackknife`` and ``svy bootstrap``).

* ``jk1``: delete-one-PSU jackknife of an unstratified sample; replicate r drops PSU r and weighs the others
  n/(n − 1); the variance is (1 − f)·(n − 1)/n · Σ_r (θ_r − θ̄)².
* ``jkn``: the stratified jackknife; dropping PSU j of stratum h reweights the rest of h by n_h/(n_h − 1), and that
  replicate's term is scaled by (1 − f_h)·(n_h − 1)/n_h.
* ``bootstrap``: Rao and Wu's rescaled bootstrap with n_h − 1 PSUs drawn with replacement in each stratum (R's
  ``subbootstrap``), seeded; variance Σ_r (θ_r − θ̄)²/(R − 1). Like R's, it takes no finite population correction.
* Replicate weights a data set ships (``replicate_weights=[columns]``) with the scale of their kind: ``jk1``
  (R − 1)/R, ``bootstrap`` 1/(R − 1), ``brr`` 1/R, or ``replicate_scale`` given.

θ̄ is the mean of the replicates (R's default, ``survey.replicates.mse = FALSE``). What each replicate recomputes:
the report frequencies of an estimate exactly (a ratio of weighted totals per replicate, raking redone per replicate),
then through the fit's derivative; for a regression or a correlation, the replicate totals of the estimating
equations' scores (one Newton step from the full-sample fit, the usual linearized replicate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import AnalysisError

VARIANCES = ("linearization", "jk1", "jkn", "bootstrap", "brr")
#: The scale of supplied replicate weights by their kind, for R replicates.
SUPPLIED_SCALES = {"jk1": lambda r: (r - 1) / r, "bootstrap": lambda r: 1 / (r - 1), "brr": lambda r: 1 / r}


@dataclass(frozen=True)
class Replicates:
    """Each replicate's weight over the full weight, as ``factors`` (a row per PSU, ``rows`` giving each response's:
    the jackknives and the bootstrap reweight whole PSUs, so an estimate that is a function of weighted totals needs
    only the PSUs' totals, never the n × R weights; or a row per response, ``rows`` None: weights given with the data,
    or raked per replicate); the per-replicate scales and the overall scale of the variance; the method's name; the
    degrees of freedom."""

    factors: np.ndarray
    rows: np.ndarray | None
    rscales: np.ndarray
    scale: float
    method: str
    df: int
    #: Raked per replicate (`sample_design.Sample.raked`): each response's raking cell (its levels of the margins) and each
    #: cell's factor per replicate (cells × R), by which that replicate's weights were calibrated beyond the full
    #: sample's; None unraked.
    cells: np.ndarray | None = None
    cell_factors: np.ndarray | None = None

    @property
    def count(self) -> int:
        return self.factors.shape[1]

    @property
    def multipliers(self) -> np.ndarray:
        """The factors written out per response (n × R): for an export of the replicate weights."""
        written = self.factors if self.rows is None else self.factors[self.rows]
        raked = self._raked
        return written if raked is None else written * raked[1][raked[0]]

    @property
    def _raked(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(each response's raking cell, each cell's factors), or None unraked: the two are given together."""
        if self.cells is None or self.cell_factors is None:
            return None
        return self.cells, self.cell_factors

    def totals(self, values: np.ndarray) -> np.ndarray:
        """Σᵢ m_ir·valuesᵢ for every replicate r (R × columns of ``values``, n × columns): the PSUs' (and raking
        cells') totals through the factors."""
        values = np.asarray(values, dtype=float)
        if self.rows is None:
            return self.multipliers.T @ values
        groups, size = self._groups(np.arange(len(self.rows)))
        grouped = np.zeros((size, values.shape[1]))
        np.add.at(grouped, groups, values)
        return self._through(grouped)

    def tallied(self, subset: np.ndarray, categories: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
        """Σᵢ m_ir·wᵢ·[categoryᵢ = c] over the responses ``subset`` (their ``categories`` and ``weights``), for every
        replicate r and category c < ``size`` (R × size): a PSU × category tally through the factors."""
        if self.rows is None:  # weights given per response: added by category, never a responses × categories table
            tallies = np.zeros((size, self.count))
            np.add.at(tallies, categories, self.multipliers[subset] * np.asarray(weights, dtype=float)[:, None])
            return tallies.T
        groups, count = self._groups(subset)
        table = np.bincount(groups * size + categories, weights=weights, minlength=count * size).reshape(count, size)
        return self._through(table)

    def _groups(self, subset: np.ndarray) -> tuple[np.ndarray, int]:
        """Each response's group of equal factors (its PSU, and its raking cell when raked), and how many groups."""
        assert self.rows is not None  # factors per PSU (`totals` and `tallied` take the other route)
        raked = self._raked
        if raked is None:
            return self.rows[subset], len(self.factors)
        cells = len(raked[1])
        return self.rows[subset] * cells + raked[0][subset], len(self.factors) * cells

    def _through(self, grouped: np.ndarray) -> np.ndarray:
        """Group totals (groups × columns) to replicate totals (R × columns)."""
        raked = self._raked
        if raked is None:
            return self.factors.T @ grouped
        by_cell = grouped.reshape(len(self.factors), len(raked[1]), -1)
        return np.einsum("pr,cr,pck->rk", self.factors, raked[1], by_cell, optimize=True)

    def covariance(self, estimates: np.ndarray, diagonal: bool = False) -> np.ndarray:
        """scale · Σ_r rscale_r (θ_r − θ̄)(θ_r − θ̄)ᵀ of per-replicate estimates (R × k); ``diagonal``: its diagonal."""
        centred = estimates - estimates.mean(axis=0)
        if diagonal:
            return self.scale * np.einsum("rj,rj,r->j", centred, centred, self.rscales)
        return self.scale * (centred * self.rscales[:, None]).T @ centred

    def describe(self) -> str:
        return f"variance by {self.method} ({self.count} replicates)"


def jackknife(strata: np.ndarray, psu: np.ndarray, fraction: np.ndarray | None, stratified: bool) -> Replicates:
    """``jk1`` (``stratified`` False: one stratum) or ``jkn``: one replicate per PSU."""
    n_psu = int(psu.max()) + 1
    psu_stratum = np.zeros(n_psu, dtype=np.int64)
    psu_stratum[psu] = strata
    if not stratified and len(np.unique(strata)) > 1:
        raise AnalysisError("variance: jk1 is the jackknife of an unstratified sample; with strata use \"jkn\"",
                            "variance")
    per = np.bincount(psu_stratum)[psu_stratum].astype(float)  # PSUs in each PSU's stratum
    if (per < 2).any():
        raise AnalysisError("variance: a stratum with one PSU has no jackknife replicate; collapse it with a "
                            "neighbour", "variance")
    # Replicate r drops PSU r and weighs the rest of its stratum n_h/(n_h − 1): PSU × PSU, whatever n
    factors = np.where(psu_stratum[:, None] == psu_stratum[None, :], per[None, :] / (per[None, :] - 1), 1.0)
    np.fill_diagonal(factors, 0.0)
    rscales = (per - 1) / per
    if fraction is not None:
        rscales = rscales * (1 - fraction[psu_stratum])
    if not stratified:  # R folds jk1's (n − 1)/n and (1 − f) into the overall scale
        return Replicates(factors, psu, np.ones(n_psu), float(rscales[0]), "JK1 jackknife", n_psu - 1)
    return Replicates(factors, psu, rscales, 1.0, "JKn jackknife", n_psu - int(psu_stratum.max()) - 1)


def subbootstrap(strata: np.ndarray, psu: np.ndarray, replicates: int, seed: int) -> Replicates:
    """Rao and Wu's rescaled bootstrap, n_h − 1 PSUs of n_h drawn with replacement in each stratum."""
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 2:
        raise AnalysisError(f"replicates: a whole number of at least 2, got {replicates!r}", "replicates")
    n_psu = int(psu.max()) + 1
    psu_stratum = np.zeros(n_psu, dtype=np.int64)
    psu_stratum[psu] = strata
    rng = np.random.default_rng(seed)
    by_psu = np.zeros((n_psu, replicates))
    for h in range(int(psu_stratum.max()) + 1):
        members = np.flatnonzero(psu_stratum == h)
        size = len(members)
        if size < 2:
            raise AnalysisError("variance: a stratum with one PSU cannot be bootstrapped; collapse it with a "
                                "neighbour", "variance")
        for r in range(replicates):
            drawn = np.bincount(rng.integers(0, size, size - 1), minlength=size)
            by_psu[members, r] = drawn * size / (size - 1)
    return Replicates(by_psu, psu, np.ones(replicates), 1 / (replicates - 1), "Rao-Wu bootstrap", replicates - 1)


def supplied(weights: np.ndarray, columns: np.ndarray, method: str, scale: float | None) -> Replicates:
    """Replicate weights given with the data (n × R full weights)."""
    if method not in SUPPLIED_SCALES:
        raise AnalysisError(f"variance: replicate weights given with the data are of kind "
                            f"{', '.join(SUPPLIED_SCALES)} (or give replicate_scale); got {method!r}", "variance")
    columns = np.asarray(columns, dtype=float)
    if not np.isfinite(columns).all() or (columns < 0).any():
        raise AnalysisError("replicate_weights: must be finite and not negative", "replicate_weights")
    count = columns.shape[1]
    if count < 2:
        raise AnalysisError("replicate_weights: at least two replicate columns", "replicate_weights")
    chosen = SUPPLIED_SCALES[method](count) if scale is None else float(scale)
    rank = int(np.linalg.matrix_rank(columns.T @ columns))
    return Replicates(columns / weights[:, None], None, np.ones(count), chosen, f"{method} replicate weights",
                      max(rank - 1, 1))
