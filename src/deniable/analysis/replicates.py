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
    """Per response and replicate, the replicate's weight over the full weight (``multipliers``, n × R); the
    per-replicate scales and the overall scale of the variance; the method's name; the degrees of freedom."""

    multipliers: np.ndarray
    rscales: np.ndarray
    scale: float
    method: str
    df: int

    @property
    def count(self) -> int:
        return self.multipliers.shape[1]

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
    multipliers = np.where(strata[:, None] == psu_stratum[None, :], per[None, :] / (per[None, :] - 1), 1.0)
    multipliers[np.arange(len(psu)), psu] = 0.0
    rscales = (per - 1) / per
    if fraction is not None:
        rscales = rscales * (1 - fraction[psu_stratum])
    if not stratified:  # R folds jk1's (n − 1)/n and (1 − f) into the overall scale
        return Replicates(multipliers, np.ones(n_psu), float(rscales[0]), "JK1 jackknife", n_psu - 1)
    return Replicates(multipliers, rscales, 1.0, "JKn jackknife", n_psu - int(psu_stratum.max()) - 1)


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
    return Replicates(by_psu[psu], np.ones(replicates), 1 / (replicates - 1), "Rao-Wu bootstrap", replicates - 1)


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
    return Replicates(columns / weights[:, None], np.ones(count), chosen, f"{method} replicate weights", max(rank - 1, 1))
