"""Samples that are not simple random samples: weights, strata, clusters (primary sampling units), finite
population corrections and raking to known margins, and the design-based covariance of what is estimated
from them (Taylor linearization with PSU totals within strata, as R's ``survey`` and Stata's ``svy``).

Everything a design-based estimate needs from the sample is here; `weighted.py` turns it into results. The
estimator stays the maximum-likelihood one on the simplex, fitted to the *weighted* report frequencies λ̂ (a
pseudo-likelihood), and its covariance is the sandwich J·V(λ̂)·Jᵀ: V(λ̂) the design-based covariance of the
weighted frequencies, J the derivative of the fit with respect to them (`fit_jacobian`), which is Q⁻¹ wherever the
estimate is inside the simplex, so there the standard errors are those of R's ``svymean`` on the unbiased transform.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import channels
from . import replicates as replication
from .errors import AnalysisError
from .replicates import VARIANCES, Replicates

LONELY_PSU = ("fail", "adjust")
#: Raking stops when every margin is met to this relative error; past `RAKE_ITERATIONS` it refuses.
RAKE_TOLERANCE = 1e-10
RAKE_ITERATIONS = 1000


def _check_replicate_columns(matrix: np.ndarray, names: list) -> None:
    """Replicate weights are numbers ≥ 0 for every response: a missing or negative one is refused, naming its column
    (it would turn the variance into NaN, or into a figure of no design)."""
    for column, name in enumerate(names):
        values = matrix[:, column]
        missing, negative = int(np.isnan(values).sum()), int((values < 0).sum())
        if missing or negative:
            what = f"{missing} missing" if missing else f"{negative} negative"
            raise AnalysisError(f"replicate_weights: {name!r} has {what} values (a replicate weight is a number ≥ 0 "
                                "for every response)", "replicate_weights")


@dataclass(frozen=True)
class SampleDesign:
    """How the respondents were sampled. Each of ``weights``, ``strata``, ``clusters`` and ``fpc`` is the name of a
    column of the loaded data (a public question, or a column of an export or of the invitations' frame) or an
    array / Series with one value per response (a Series is aligned by response id).

    * ``weights``: design weights (positive, finite); none: every respondent weighs 1.
    * ``strata``: the stratum of each respondent; PSU labels may repeat across strata.
    * ``clusters``: the primary sampling unit; without it each respondent is their own PSU.
    * ``fpc``: the stratum's population count of PSUs (or, when ≤ 1, the sampling fraction); without it PSUs are
      taken as drawn with replacement within strata (the convention of R's ``survey`` and Stata's ``svy``).
    * ``rake``: ``{column: {level: population total}}``, margins the weights are calibrated to by iterative
      proportional fitting before estimation; the variance then uses the calibration's residuals (``survey::rake``).
    * ``lonely_psu``: a stratum with one PSU is refused (``"fail"``), or centred at the grand mean (``"adjust"``,
      R's ``options(survey.lonely.psu = "adjust")``).
    * ``variance``: ``"linearization"`` (Taylor, the default), or replicate weights (`replicates`): ``"jk1"``,
      ``"jkn"`` (jackknives, one replicate per PSU), ``"bootstrap"`` (``replicates`` of them, drawn with ``seed``);
      or the replicate weights a data set ships, ``replicate_weights=[columns]`` of kind ``"jk1"``, ``"bootstrap"``
      or ``"brr"`` (``replicate_scale`` overrides the kind's scale). `Sample.replicate_frame` exports them.
    """

    weights: object = None
    strata: object = None
    clusters: object = None
    fpc: object = None
    rake: dict | None = None
    lonely_psu: str = "fail"
    variance: str = "linearization"
    replicates: int = 200
    seed: int = 20261126
    replicate_weights: object = None
    replicate_scale: float | None = None

    def __post_init__(self):
        if self.variance not in VARIANCES:
            raise AnalysisError(f"variance: one of {', '.join(VARIANCES)}, got {self.variance!r}", "variance")
        if self.replicate_weights is not None and self.variance == "linearization":
            raise AnalysisError("variance: say what kind the replicate weights are (\"jk1\", \"bootstrap\" or "
                                "\"brr\")", "variance")
        if isinstance(self.replicate_weights, (list, tuple)) and not self.replicate_weights:
            raise AnalysisError("replicate_weights: none given; name the replicate weight columns (or give an array "
                                "of one row per response), or leave it out to have deniable make them",
                                "replicate_weights")
        if self.variance == "brr" and self.replicate_weights is None:
            raise AnalysisError("variance: brr needs the replicate weights of its half-samples (replicate_weights=)",
                                "variance")
        if self.lonely_psu not in LONELY_PSU:
            raise AnalysisError(f"lonely_psu: must be one of {', '.join(LONELY_PSU)}, got {self.lonely_psu!r}",
                                "lonely_psu")
        if self.rake is not None and (not isinstance(self.rake, dict) or not all(
                isinstance(margin, dict) and margin for margin in self.rake.values())):
            raise AnalysisError("rake: expected {column: {level: population total, …}, …}", "rake")

    def describe(self) -> str:
        parts = []
        for name, value in (("weights", self.weights), ("strata", self.strata), ("clusters", self.clusters),
                            ("fpc", self.fpc)):
            if value is not None:
                parts.append(f"{name} {value!r}" if isinstance(value, str) else f"{name} (given)")
        if self.rake:
            parts.append(f"raked to {', '.join(map(str, self.rake))}")
        described = ", ".join(parts) or "equal weights, no strata or clusters"
        if self.variance != "linearization":
            kind = {"jk1": "JK1 jackknife", "jkn": "JKn jackknife", "bootstrap": "Rao-Wu bootstrap"}.get(
                self.variance, self.variance)
            described += (f"; variance by {kind}" if self.replicate_weights is None
                          else f"; variance by the {kind} replicate weights given")
        return described

    @classmethod
    def of(cls, survey) -> "SampleDesign | None":
        """The design a survey's spec names (``sample: {strata: region, …}``), or None: what `deniable estimate` and
        the dashboard use unless told ``--design none``."""
        roles = {role: name for role, name in (getattr(survey, "sample", None) or {}).items() if role != "frame"}
        return cls(**roles) if roles else None

    def column_names(self) -> list:
        """The columns of the data this design names."""
        given = self.replicate_weights if isinstance(self.replicate_weights, (list, tuple)) else ()
        return list(dict.fromkeys(v for v in (self.weights, self.strata, self.clusters, self.fpc, *(self.rake or {}),
                                              *given) if isinstance(v, str)))

    def resolve(self, columns: pd.DataFrame) -> "Sample":
        """The design's arrays for the responses of ``columns`` (one row per response, indexed by response id, holding
        at least the columns the design names: `LoadedSurvey.design_frame`), in its row order."""
        index = columns.index
        n = len(index)

        def values(name, spec):
            if spec is None:
                return None
            if isinstance(spec, str):
                if spec not in columns:
                    raise AnalysisError(f"{name}: no column {spec!r} in the data (columns: "
                                        f"{', '.join(map(str, columns.columns))})", name)
                series = columns[spec]
            elif isinstance(spec, pd.Series):
                series = spec.reindex(index)
                if series.isna().any() and not spec.isna().any():
                    raise AnalysisError(f"{name}: the Series has no value for {int(series.isna().sum())} of the "
                                        f"{n} responses (it is aligned by response id)", name)
            else:
                array = np.asarray(spec)
                if array.ndim != 1 or len(array) != n:
                    raise AnalysisError(f"{name}: expected one value per response ({n}), got shape {array.shape}", name)
                series = pd.Series(array, index=index)
            missing = series.isna() | (series.astype(str) == "")
            if missing.any():
                column = f" (column {spec!r})" if isinstance(spec, str) and spec != name else ""
                raise AnalysisError(f"{name}: {int(missing.sum())} of {n} responses have no {name} value{column}", name)
            return series

        weights = values("weights", self.weights)
        if weights is None:
            w = np.ones(n)
        else:
            try:
                w = pd.to_numeric(weights).to_numpy(dtype=float)
            except (ValueError, TypeError):
                raise AnalysisError("weights: not numbers", "weights") from None
            bad = ~np.isfinite(w) | (w <= 0)
            if bad.any():
                raise AnalysisError(f"weights: must be positive and finite; {int(bad.sum())} of {n} are not "
                                    f"(e.g. {w[bad][0]!r})", "weights")
        strata_values = values("strata", self.strata)
        strata = np.zeros(n, dtype=np.int64) if strata_values is None else pd.factorize(strata_values.astype(str))[0]
        cluster_values = values("clusters", self.clusters)
        if cluster_values is None:
            psu = np.arange(n)
        else:  # PSU labels may repeat across strata: a PSU is (stratum, label), numbered as they first appear
            labels = pd.factorize(cluster_values.astype(str))[0]
            psu = pd.factorize(strata.astype(np.int64) * (int(labels.max()) + 1) + labels)[0]
        fraction = None
        fpc_values = values("fpc", self.fpc)
        if fpc_values is not None:
            try:
                population = pd.to_numeric(fpc_values).to_numpy(dtype=float)
            except (ValueError, TypeError):
                raise AnalysisError("fpc: not numbers", "fpc") from None
            fraction = _sampling_fractions(strata, psu, population)
        sample = Sample(index, w, strata, psu, fraction, self.lonely_psu, self.describe())
        sample.replicates = self._replicates(sample, values)
        if self.rake:
            sample = sample.raked({name: values(name, name) for name in self.rake}, self.rake)
        return sample


    def _replicates(self, sample: "Sample", values) -> Replicates | None:
        if self.variance == "linearization":
            return None
        if self.replicate_weights is not None:
            if isinstance(self.replicate_weights, (list, tuple)) and all(isinstance(c, str) for c in self.replicate_weights):
                columns = []
                for name in self.replicate_weights:
                    raw = pd.Series(values("replicate_weights", name))
                    numbers = pd.to_numeric(raw, errors="coerce")
                    empty = raw.isna() | (raw.astype(str).str.strip() == "")  # missing: said by the check below
                    if (numbers.isna() & ~empty).any():
                        raise AnalysisError(f"replicate_weights: column {name!r} is not numbers", "replicate_weights")
                    columns.append(numbers.to_numpy(dtype=float))
                matrix, names = np.column_stack(columns), list(self.replicate_weights)
            else:
                matrix = np.asarray(self.replicate_weights, dtype=float)
                if matrix.ndim != 2 or matrix.shape[0] != len(sample.weights) or matrix.shape[1] == 0:
                    raise AnalysisError(f"replicate_weights: expected column names or an array of one row per "
                                        f"response ({len(sample.weights)}) and a column per replicate, got shape "
                                        f"{matrix.shape}", "replicate_weights")
                names = [f"column {i}" for i in range(matrix.shape[1])]
            _check_replicate_columns(matrix, names)
            return replication.supplied(sample.weights, matrix, self.variance, self.replicate_scale)
        if self.lonely_psu != "fail" and (sample.psu_per_stratum == 1).any():
            raise AnalysisError("variance: a stratum with one PSU has no replicate; collapse it with a neighbour",
                                "variance")
        if self.variance == "bootstrap":
            return replication.subbootstrap(sample.strata, sample.psu, self.replicates, self.seed)
        return replication.jackknife(sample.strata, sample.psu, sample.fraction, stratified=self.variance == "jkn")


def _sampling_fractions(strata, psu, population) -> np.ndarray:
    """Each stratum's sampling fraction of PSUs, from ``fpc`` (a population count of PSUs, or a fraction ≤ 1)."""
    fractions = np.zeros(strata.max() + 1)
    for h in range(len(fractions)):
        given = np.unique(population[strata == h])
        if len(given) != 1:
            raise AnalysisError(f"fpc: stratum {h + 1} has several values ({', '.join(map(str, given[:3]))})", "fpc")
        sampled = len(np.unique(psu[strata == h]))
        value = float(given[0])
        if value <= 0:
            raise AnalysisError(f"fpc: must be positive, got {value}", "fpc")
        fraction = value if value <= 1 else sampled / value
        if fraction > 1:
            raise AnalysisError(f"fpc: stratum {h + 1} has {sampled} PSUs in the sample but {value:g} in the population",
                                "fpc")
        fractions[h] = fraction
    return fractions


@dataclass
class Sample:
    """A design resolved against the data: per response its weight, stratum code and PSU code (unique across
    strata), the strata's sampling fractions (None: with replacement), and for a raked sample the calibration's
    margin indicators (``calibration``), whose residuals carry the variance."""

    index: pd.Index
    weights: np.ndarray
    strata: np.ndarray
    psu: np.ndarray
    fraction: np.ndarray | None
    lonely_psu: str
    description: str
    calibration: np.ndarray | None = None
    replicates: Replicates | None = None  # replicate weights (`replicates`): the variance from their spread
    #: Each response's wave, where a panel's responses are pooled over waves that nothing links (`over_waves`).
    waves: np.ndarray | None = None

    def __post_init__(self):
        psu_stratum = np.zeros(self.psu.max() + 1 if len(self.psu) else 0, dtype=np.int64)
        psu_stratum[self.psu] = self.strata
        self.psu_stratum = psu_stratum
        self.n_psu = len(psu_stratum)
        self.n_strata = int(self.strata.max()) + 1 if len(self.strata) else 0
        self.psu_per_stratum = np.bincount(psu_stratum, minlength=self.n_strata)
        lonely = np.flatnonzero(self.psu_per_stratum == 1)
        if len(lonely) and self.lonely_psu == "fail":
            raise AnalysisError(f"strata: {len(lonely)} stratum has one PSU only (a variance needs two); collapse it "
                                "with a neighbour, or pass SampleDesign(lonely_psu=\"adjust\") to centre it at the grand "
                                "mean (R's survey.lonely.psu = \"adjust\")", "strata")

    @property
    def df(self) -> int:
        """The design's degrees of freedom: PSUs less strata (replicate weights: their rank less one)."""
        if self.replicates is not None:
            return self.replicates.df
        return max(self.n_psu - self.n_strata, 1)

    def replicate_frame(self) -> pd.DataFrame:
        """The replicate weights (each replicate's full weights), one row per response by id: to save beside an
        export, or to give R's ``svrepdesign`` or Stata's ``svyset … jkrweight()``. Empty without replicates."""
        if self.replicates is None:
            return pd.DataFrame(index=self.index)
        weights = self.weights[:, None] * self.replicates.multipliers
        return pd.DataFrame(weights, index=self.index,
                            columns=[f"replicate_{r + 1}" for r in range(self.replicates.count)])

    def raked(self, columns: dict, margins: dict) -> "Sample":
        """The weights calibrated to ``margins`` by iterative proportional fitting; refuses a margin whose levels do
        not match the data's, or that the fitting cannot meet."""
        indicators, targets, names = [], [], []
        for name, margin in margins.items():
            levels = columns[name].astype(str)
            given = {str(level): float(total) for level, total in margin.items()}
            present = set(levels.unique())
            if present - set(given):
                raise AnalysisError(f"rake: margin {name!r} has no total for {sorted(present - set(given))}", "rake")
            if set(given) - present:
                raise AnalysisError(f"rake: margin {name!r} gives totals for {sorted(set(given) - present)}, which no "
                                    "respondent has", "rake")
            if any(not math.isfinite(t) or t <= 0 for t in given.values()):
                raise AnalysisError(f"rake: margin {name!r} has a total that is not a positive number", "rake")
            for level, total in given.items():
                indicators.append((levels == level).to_numpy(dtype=float))
                targets.append(total)
                names.append(f"{name}={level}")
        x = np.column_stack(indicators)
        target_totals = np.array(targets)
        start, groups = 0, []
        for margin in margins.values():
            groups.append(slice(start, start + len(margin)))
            start += len(margin)
        w = _rake(self.weights, x, target_totals, groups, names)
        if self.replicates is None:
            return Sample(self.index, w, self.strata, self.psu, self.fraction, self.lonely_psu,
                          self.description, calibration=x)
        # Each replicate is raked to the same margins (as R's rake of a replicate design): its spread then holds
        # the calibration, and no residual linearization is needed.
        return Sample(self.index, w, self.strata, self.psu, self.fraction, self.lonely_psu, self.description,
                      replicates=_raked_replicates(self.replicates, self.weights, w, x, target_totals, groups, names))

    # --- the design-based covariance ------------------------------------------------------------------------

    def over_waves(self, waves) -> "Sample":
        """This sample, its covariances bounded over a panel's ``waves`` (each response's label): for a design whose
        PSUs do not hold a person's waves together (no clusters: each response its own PSU), under which one person's
        memoized reports in several waves would count as independent. See `covariance`. A response without a wave (a
        version asked before the survey was repeated) is in a group of its own, as another wave."""
        labels = pd.Series(np.asarray(waves, dtype=object), dtype=object)
        return dataclasses.replace(self, waves=labels.where(labels.notna(), None).to_numpy(dtype=object))

    def covariance(self, scores: np.ndarray, diagonal: bool = False) -> np.ndarray:
        """The design-based covariance of Σᵢ scoresᵢ (rows: responses, each already weighted), with PSU totals within
        strata: Σ_h (1 − f_h) n_h/(n_h − 1) Σ_j (z_hj − z̄_h)(z_hj − z̄_h)ᵀ (``diagonal``: its diagonal alone).

        Over a panel's waves (`over_waves`) the covariance of Σ_w T_w, T_w the wave's total, bounded whatever the
        correlation between the waves: Σ_w C_w/p_w for any p_w > 0 with Σ p_w = 1 (Cauchy-Schwarz), C_w the design
        covariance of the wave's scores alone and p_w ∝ √tr C_w, which makes a single functional's bound the tightest
        one, (Σ_w SD_w)², and leaves a wave's own domain exact."""
        scores = np.asarray(scores, dtype=float)
        if self.waves is None:
            return self._covariance(scores, diagonal)
        parts = [self._covariance(np.where((self.waves == wave)[:, None], scores, 0.0), diagonal)
                 for wave in dict.fromkeys(self.waves)]
        sizes = np.sqrt([max(float(part.sum() if diagonal else np.trace(part)), 0.0) for part in parts])
        if sizes.sum() <= 0:
            return np.sum(parts, axis=0)
        return np.sum([part * (sizes.sum() / size) for part, size in zip(parts, sizes) if size > 0], axis=0)

    def _covariance(self, scores: np.ndarray, diagonal: bool) -> np.ndarray:
        if self.replicates is not None:  # the replicate totals of the scores: Σᵢ (w_rᵢ/wᵢ)·scoresᵢ
            return self.replicates.covariance(self.replicates.totals(scores), diagonal)
        if self.calibration is not None:
            scores = self._calibration_residuals(scores)
        totals = np.zeros((self.n_psu, scores.shape[1]))
        np.add.at(totals, self.psu, scores)
        return self._between_psu(totals, diagonal)

    def _calibration_residuals(self, scores: np.ndarray) -> np.ndarray:
        """Weighted scores less their regression on the raking margins' indicators (the linearization of a
        calibrated estimator: only what the margins do not fix varies)."""
        x, w = self.calibration, self.weights
        assert x is not None  # called for a calibrated sample only
        unweighted = scores / w[:, None]
        gram = x.T @ (w[:, None] * x)
        coefficients = np.linalg.lstsq(gram, x.T @ scores, rcond=None)[0]
        return w[:, None] * (unweighted - x @ coefficients)

    def _between_psu(self, totals: np.ndarray, diagonal: bool = False) -> np.ndarray:
        per = self.psu_per_stratum[self.psu_stratum].astype(float)
        stratum_sums = np.zeros((self.n_strata, totals.shape[1]))
        np.add.at(stratum_sums, self.psu_stratum, totals)
        means = stratum_sums[self.psu_stratum] / per[:, None]
        lonely = per == 1
        if lonely.any():  # "adjust": a lone PSU varies about the grand mean of the PSU totals
            means[lonely] = totals.mean(axis=0)
        scale = np.where(lonely, 1.0, per / np.maximum(per - 1, 1))
        if self.fraction is not None:
            scale = scale * (1 - self.fraction[self.psu_stratum])
        centred = totals - means
        if diagonal:
            return np.einsum("ij,ij,i->j", centred, centred, scale)
        return (centred * scale[:, None]).T @ centred

    def frequencies(self, positions: np.ndarray, reports: int, domain: np.ndarray | None = None):
        """The weighted report frequencies λ̂ of the responses in ``domain`` (positions ≥ 0: the report's index;
        -1: no report), their design-based covariance, the number of responses counted and their weight.
        Responses outside the domain keep their PSUs (domain estimation: a subgroup's SE, not a subset's)."""
        lam, spread, n, total = self.report_spread(positions, reports, domain)
        return lam, spread.matrix(), n, total

    def report_spread(self, positions: np.ndarray, reports: int, domain: np.ndarray | None = None):
        """`frequencies` with their covariance as a `ReportSpread`: read through functionals, never R × R."""
        counted = positions >= 0
        if domain is not None:
            counted &= domain
        w = np.where(counted, self.weights, 0.0)
        total = float(w.sum())
        if total <= 0:
            raise AnalysisError("no responses with a report in this group")
        lam = np.bincount(positions[counted], weights=w[counted], minlength=reports) / total
        return lam, ReportSpread(self, positions, counted, w, lam, total), int(counted.sum()), total


class ReportSpread:
    """The design-based covariance C of weighted report frequencies λ̂ (`Sample.report_spread`), read through
    functionals of λ̂ (a fit's Jacobian, an unbiased estimate's left inverse, a mean's weights): Cov(Gλ̂) = GCGᵀ from
    each response's influence on Gλ̂, wᵢ(G·e_rᵢ − Gλ̂)/W, summed within PSUs, O(n·m) for m functionals. C itself is
    R × R (a 0..10,000 number's 30,001 reports: 7.2 GB), built from a PSUs × R table (a 0..1000 number's at 10⁵ PSUs:
    2.4 GB), so `matrix` is for short report alphabets. With replicate weights, each replicate's own frequencies."""

    #: Functionals read at a time for `variances` (a block's influences are n × this).
    BLOCK = 256

    def __init__(self, sample: Sample, positions: np.ndarray, counted: np.ndarray, w: np.ndarray, lam: np.ndarray,
                 total: float):
        self.sample, self.positions, self.counted, self.w, self.lam, self.total = (sample, positions, counted, w, lam,
                                                                                   total)

    def covariance(self, functionals: np.ndarray, diagonal: bool = False) -> np.ndarray:
        """Cov(Gλ̂) for the rows G of ``functionals`` (m × R): m × m, or its diagonal."""
        along = np.asarray(functionals, dtype=float).T  # R × m
        if self.sample.replicates is not None and self.sample.waves is None:  # each replicate's exact ratio
            return self.sample.replicates.covariance(self._replicate_frequencies @ along, diagonal)
        rows = np.flatnonzero(self.counted)
        influences = np.zeros((len(self.positions), along.shape[1]))
        influences[rows] = self.w[rows, None] * (along[self.positions[rows]] - self.lam @ along) / self.total
        return self.sample.covariance(influences, diagonal)

    def variances(self, functionals, count: int) -> np.ndarray:
        """The variance of each of ``count`` functionals, ``functionals(indices)`` giving their rows a block at a
        time: memory O(n·`BLOCK`) however many."""
        blocks = [np.arange(start, min(start + self.BLOCK, count)) for start in range(0, count, self.BLOCK)]
        return np.concatenate([self.covariance(functionals(block), diagonal=True) for block in blocks] or [np.zeros(0)])

    def report_variances(self) -> np.ndarray:
        """Each report frequency's variance: C's diagonal. Without replicates or calibration, a block of reports' PSU
        totals are the tally of the responses with those reports less each PSU's weight times their shares, as
        `matrix` builds them: O(n + PSUs·R), not the n·R of every response's influence on every report."""
        reports = len(self.lam)
        if self.sample.replicates is not None or self.sample.calibration is not None or self.sample.waves is not None:
            return self.variances(lambda block: np.eye(len(block), reports, block[0]), reports)
        sample, counted = self.sample, self.counted
        psu_weight = np.bincount(sample.psu, weights=self.w, minlength=sample.n_psu)
        variances = []
        for start in range(0, reports, self.BLOCK):
            stop = min(start + self.BLOCK, reports)
            inside = counted & (self.positions >= start) & (self.positions < stop)
            tally = np.zeros((sample.n_psu, stop - start))
            np.add.at(tally, (sample.psu[inside], self.positions[inside] - start), self.w[inside])
            totals = (tally - psu_weight[:, None] * self.lam[None, start:stop]) / self.total
            variances.append(sample._between_psu(totals, diagonal=True))
        return np.concatenate(variances)

    @functools.cached_property
    def _replicate_frequencies(self) -> np.ndarray:
        """Each replicate's report frequencies (replicates × R), exactly: a ratio of its weighted totals."""
        rows = np.flatnonzero(self.counted)
        assert self.sample.replicates is not None  # a replicate design's frequencies only
        totals = self.sample.replicates.tallied(rows, self.positions[rows], self.w[rows], len(self.lam))  # R × reports
        sizes = totals.sum(axis=1, keepdims=True)
        return np.divide(totals, sizes, out=np.tile(self.lam[None, :], (len(sizes), 1)), where=sizes > 0)

    def matrix(self) -> np.ndarray:
        """C written out (R × R), as the estimates of short report alphabets read it."""
        sample, positions, counted, w, lam, total = (self.sample, self.positions, self.counted, self.w, self.lam,
                                                     self.total)
        reports = len(lam)
        if sample.replicates is not None and sample.waves is None:
            return sample.replicates.covariance(self._replicate_frequencies)
        # The influence of each response on λ̂: wᵢ·(e_rᵢ − λ̂)/W inside the domain, 0 outside. Built per PSU without an
        # n × R matrix: Σᵢ∈j wᵢ e_rᵢ is a sparse tally.
        if sample.calibration is None and sample.waves is None:
            psu_report = np.zeros((sample.n_psu, reports))
            np.add.at(psu_report, (sample.psu[counted], positions[counted]), w[counted])
            psu_weight = np.bincount(sample.psu, weights=w, minlength=sample.n_psu)
            return sample._between_psu((psu_report - psu_weight[:, None] * lam[None, :]) / total)
        scores = np.zeros((len(positions), reports))
        scores[np.flatnonzero(counted), positions[counted]] = w[counted]
        scores -= w[:, None] * lam[None, :]
        return sample.covariance(scores / total)


def _raked_replicates(replicates: Replicates, weights: np.ndarray, raked: np.ndarray, x: np.ndarray,
                      targets: np.ndarray, groups: list, names: list) -> Replicates:
    """``replicates`` each raked to the margins (``x``'s indicator columns, ``targets``), over the weights ``raked``
    the full sample was raked to. Replicates that reweight whole PSUs are raked on the totals of the raking cells (the
    responses alike on every margin, whose factor raking shares): a PSU × cell tally, never the n × R weights (JKn of
    10⁶ responses in 2,000 PSUs: 2,000 rakes of a few cells). Weights given per response are raked response by
    response."""
    if replicates.rows is None:
        rows = np.column_stack([_rake(weights * replicates.multipliers[:, r], x, targets, groups, names)
                                for r in range(replicates.count)])
        multipliers = np.divide(rows, raked[:, None], out=np.zeros_like(rows), where=raked[:, None] > 0)
        return dataclasses.replace(replicates, factors=multipliers, rows=None, cells=None, cell_factors=None)
    code = np.zeros(len(weights), dtype=np.int64)  # each response's levels as one number (mixed radix): its cell
    for group in groups:
        code = code * (group.stop - group.start) + np.argmax(x[:, group], axis=1)
    _, first, cells = np.unique(code, return_index=True, return_inverse=True)  # 1-D: not a sort of x's rows
    cells, cell_levels = cells.ravel(), x[first]
    everyone = np.arange(len(weights))
    totals = replicates.tallied(everyone, cells, weights, len(cell_levels))  # R × cells
    full = np.bincount(cells, weights=raked, minlength=len(cell_levels))
    start = np.bincount(cells, weights=weights, minlength=len(cell_levels))
    full_factor = np.divide(full, start, out=np.ones_like(full), where=start > 0)  # the full sample's, per cell
    factors = np.empty((len(cell_levels), replicates.count))
    for r, cell_totals in enumerate(totals):
        reached = _rake(cell_totals, cell_levels.astype(float), targets, groups, names)
        factors[:, r] = np.divide(reached, cell_totals * full_factor, out=np.zeros_like(reached),
                                  where=cell_totals * full_factor > 0)
    return dataclasses.replace(replicates, cells=cells, cell_factors=factors)


def _rake(weights: np.ndarray, x: np.ndarray, targets: np.ndarray, groups: list, names: list) -> np.ndarray:
    """Iterative proportional fitting of ``weights`` to the margins' ``targets`` (indicator columns ``x``, one slice
    of them per margin); refuses, naming the margin furthest off, when it does not converge."""
    w = weights.copy()
    for _ in range(RAKE_ITERATIONS):
        for group in groups:
            totals = w @ x[:, group]
            factors = np.divide(targets[group], totals, out=np.zeros_like(totals), where=totals > 0)
            w = w * (x[:, group] @ factors)
        reached = w @ x
        error = np.abs(reached - targets) / targets
        if error.max() <= RAKE_TOLERANCE:
            return w
    worst = names[int(np.argmax(error))]
    raise AnalysisError(f"rake: did not converge in {RAKE_ITERATIONS} rounds; margin {worst.split('=')[0]!r} "
                        f"is still {error.max():.2g} off (level {worst.split('=', 1)[1]!r}): the margins may "
                        "contradict each other", "rake")


def fit_jacobian(q: channels.Channel, pi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """dπ̂/dλ̂ (answers × reports) of the maximum-likelihood fit on the simplex at ``pi`` to frequencies ``lam``: on the
    face where the fit lies (its positive answers F), the derivative of Σ_r λ_r Q_rj/(Qπ)_r = μ (j ∈ F), Σ_F π = 1.
    Inside the simplex with Q square and invertible it is Q⁻¹; answers at zero stay there (rows of zeros)."""
    free, rows = free_jacobian(q, pi, lam)
    jacobian = np.zeros((q.shape[1], q.shape[0]))
    jacobian[free] = rows
    return jacobian


def free_jacobian(q, pi: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`fit_jacobian`'s rows that are not zero: (the fit's positive answers F, their rows, F × reports). A number's
    structure (`channels.FoldedGeometric`) is read for F's columns only: a long grid's fit sits on a few answers."""
    q = channels.as_channel(q)
    free = np.flatnonzero(pi > 0)
    rates = channels.apply(q, pi)
    positive = rates > 0
    inverse_rates = np.where(positive, 1 / np.where(positive, rates, 1), 0.0)
    qf = channels.columns(q, free)
    hessian = qf.T @ ((lam * inverse_rates**2)[:, None] * qf)
    size = len(free)
    system = np.zeros((size + 1, size + 1))
    system[:size, :size] = hessian
    system[:size, size] = system[size, :size] = 1.0
    right = np.zeros((size + 1, q.shape[0]))
    right[:size] = qf.T * inverse_rates[None, :]
    return free, np.linalg.lstsq(system, right, rcond=None)[0][:size]


def design_effect(lam: np.ndarray, variances: np.ndarray, n: int) -> float:
    """The mean design effect of the report frequencies (Rao and Scott's first-order δ̄): the design's covariance C
    against the multinomial one M = (diag λ − λλᵀ)/n of a simple random sample of the same n, averaged over the
    informative directions: tr(M⁺C)/(s − 1) over the s reports seen. M⁺ = n·P·diag(1/λ)·P (P the projection off 1,
    M's null space), and C·1 = 0 (the frequencies sum to 1 in every sample), so tr(M⁺C) = n·Σ_r C_rr/λ_r: C's diagonal
    (``variances``) alone, where the pseudo-inverse of an R × R matrix took a 0..1000 number's 3,001 reports 27 GFlop.
    1 for a simple random sample (up to n/(n − 1))."""
    support = lam > 0
    if support.sum() < 2 or n < 2:
        return 1.0
    return max(n * float(np.sum(variances[support] / lam[support])) / (support.sum() - 1), 1e-6)
