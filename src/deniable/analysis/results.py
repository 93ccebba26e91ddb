"""The result of `estimate()`: one result type for every question shape, with its summary.

The estimate of record (column ``estimate``, property `EstimateResult.estimate`, every surface) is the
maximum-likelihood estimate on the parameter space, certified by its KKT conditions; the unbiased
moment estimate stays beside it as ``unbiased``. Intervals always contain the estimate.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pandas as pd

from deniable.client.laplace import LaplaceMechanism
from deniable.client.mechanisms import Mechanism

from . import bootstrap, calibration, channels, likelihood, ranges
from . import estimators as est
from .errors import AnalysisError
from .family import Result, interval_plot
from .splitballot import comparison_lines

if TYPE_CHECKING:  # fit imports the estimators that build these results: the name is for type checkers only
    from .fit import FitTest

#: Columns of every estimate table, in order.
COLUMNS = ["estimate", "se", "ci_low", "ci_high", "unbiased", "unbiased_se"]
#: Interval methods for questions with more than two answers (and numeric grids and means).
CATEGORICAL_METHODS = ("likelihood", "wald")
DEFAULT_CATEGORICAL_METHOD = "likelihood"
#: Where each answer's report count is binomial (k-ary randomized response, public choices): exact
#: Clopper–Pearson per answer by default, or the profile likelihood on the simplex, or Wald.
MARGINAL_METHODS = ("clopper-pearson", "likelihood", "wald")
#: A numeric grid longer than this gets Wald intervals on its rows (hundreds of profile intervals take
#: seconds); its mean always gets the profile-likelihood interval.
PROFILE_GRID_LIMIT = 101


def deferred(function: Callable, *arguments) -> Callable:
    """``function(*arguments)``, computed when first called and only then (`EstimateResult.fit_source`): every
    result rebuilt from one estimate by `dataclasses.replace` shares its one run."""
    return functools.cache(functools.partial(function, *arguments))


@dataclass(frozen=True)
class MeanEstimate(Result):
    """The mean of a numeric question: the maximum-likelihood mean, its standard error and interval, and the
    unbiased moment mean beside it."""

    estimate: float
    se: float
    ci: est.ConfidenceInterval
    level: float
    method: str = "likelihood"
    unbiased: float = math.nan
    unbiased_se: float = math.nan

    def __repr__(self):
        return (f"MeanEstimate({self.estimate:.4g} ± {self.se:.3g}, {self.level:.0%} CI [{self.ci.low:.4g}, "
                f"{self.ci.high:.4g}] {self.method}; unbiased {self.unbiased:.4g})")

    def to_frame(self) -> pd.DataFrame:
        frame = pd.DataFrame([[self.estimate, self.se, self.ci.low, self.ci.high, self.unbiased, self.unbiased_se]],
                             columns=COLUMNS, index=pd.Index(["mean"], name="figure"))
        frame.attrs.update(level=self.level, method=self.method)
        return frame

    def _summary_lines(self) -> list[str]:
        return [f"Mean: {self.estimate:.4g} (SE {self.se:.3g}), {self.level:.0%} CI [{self.ci.low:.4g}, {self.ci.high:.4g}] "
                f"{self.method}; unbiased {self.unbiased:.4g} (SE {self.unbiased_se:.3g})"]

    def plot(self, ax=None):
        """The mean with its interval (matplotlib). Returns the axes."""
        return interval_plot(ax, ["mean"], [self.estimate], [self.ci.low], [self.ci.high],
                             f"estimated mean ({self.level:.0%} interval)", "mean")


@dataclass(frozen=True)
class EstimateResult(Result):
    """Estimates for one question. Users receive it from `estimate`; they do not build it.

    Immutable, in statsmodels' manner: built once from its parts (the estimate's, then with what surrounds it, by
    `dataclasses.replace`), its derived figures read from them; ``notes`` is a tuple. What costs more than the
    estimate and is not always read is computed when first read: the fit test (`fit`, and so `notes`), the
    covariance matrix (`covariance`), a wide number's per-value rows (`value_rows`).

    ``table`` (see `to_frame`) is indexed by answer (by option for multi-select, by grid value for
    numbers) with columns ``estimate`` (maximum likelihood on the parameter space), ``se`` (its standard
    error from the Fisher information at the estimate), ``ci_low``/``ci_high`` (an interval that contains
    the estimate), ``unbiased`` (the moment estimate, may fall outside [0, 1]) and ``unbiased_se``.
    ``certificate`` proves the estimate maximises the likelihood (see `likelihood.Certificate`).
    """

    question_id: str | None
    design: str
    mechanism: Mechanism = field(repr=False)
    counts: np.ndarray = field(repr=False)
    level: float
    method: str
    table: pd.DataFrame = field(repr=False)
    certificate: likelihood.Certificate = field(repr=False)
    #: The estimate's covariance (answers × answers), or how to write it out (`covariance` reads it): a matrix, a
    #: function, or a reading of it with ``matrix()`` and ``variance(functional)`` (`estimators.LinearSpread`,
    #: `bootstrap.Bootstrap`), which a functional's variance reads without the matrix.
    covariance_source: object | None = field(repr=False, default=None, compare=False)
    mean: MeanEstimate | None = None
    simultaneous: bool = False
    #: What the builders of the estimate said of it (`notes` leads them with a failed fit test).
    remarks: Sequence[str] = ()
    #: Whom the question was asked of when skip logic shows it to some respondents only, e.g.
    #: "respondents with worked = 'yes'" (None: everyone). The estimates describe that group.
    population: str | None = None
    #: The question's text in the language asked for (its default language otherwise).
    text: str | None = None
    #: What ``mean`` averages: a number's grid values, or an ordinal scale's positions 1..k (None: no mean).
    scores: np.ndarray | None = field(repr=False, default=None)
    #: The stored versions whose reports were counted ("2 abc123def456"), pooled when more than one
    #: (their randomization of this question is identical); None for reports given directly.
    versions: list | None = None
    #: How to estimate these counts again at another level or method (set by `estimate`, which builds
    #: every result): `conf_int` asks it rather than import the estimators the results sit beneath.
    refit: Callable | None = field(repr=False, default=None, compare=False)
    #: For the designs that measure compliance: the likelihood-ratio test that everyone complied
    #: (`compliance.ComplianceTest`: no cheaters, or every carrier truthful); None for other designs.
    compliance_test: object | None = None
    #: For the designs that measure compliance: the latent classes' shares θ̂, in `mechanism.latent_classes` order.
    class_shares: np.ndarray | None = field(repr=False, default=None)
    #: For a known-share control question: {share, recovered, p_value}; None for other questions.
    control: dict | None = None
    #: For a split-ballot question: rows direct, randomized, difference (estimate, se, ci_low, ci_high, n) and the
    #: difference's one-sided p_value (`splitballot.comparison`); None for other questions. The rest of the result
    #: is the randomized arm's.
    split_ballot: pd.DataFrame | None = field(repr=False, default=None)
    #: The fit test (`fit`), or a function of no arguments that computes it: a long grid's test is seconds of Monte
    #: Carlo, which a result read for its intervals alone, or rebuilt at an effective n, should not pay.
    fit_source: object | None = field(repr=False, default=None, compare=False)
    #: Whether the public markers (a split ballot's arm; a cheating-detection or lie-detector group) were drawn with
    #: the design's probabilities (`assignment.AssignmentTest`); None where there are none.
    assignment: object | None = None
    #: The sample the estimate assumes: None for a simple random sample, else the design (`sample_design.SampleDesign`)
    #: in words; with it, the mean design effect of the reports, the effective n (n / deff) and the design's degrees
    #: of freedom (PSUs less strata).
    sample: str | None = None
    design_effect: float | None = None
    effective_n: float | None = None
    design_df: int | None = None
    #: A wide number's median and quartiles (`ranges.QuantileSearch`): rows 0.25, 0.5, 0.75 with estimate, ci_low and
    #: ci_high at ``level``; None where the table holds every value's share.
    quantiles: pd.DataFrame | None = None
    #: Each answer's estimated share where the table is not a row per answer (a wide number's bins); None: the table's.
    shares: np.ndarray | None = field(repr=False, default=None, compare=False)
    #: A wide number's per-value rows for the grid indices given (`value_rows` reads it): each interval computed when
    #: a row is asked for.
    rows_of: Callable | None = field(repr=False, default=None, compare=False)
    #: A wide number's bins: each row's label and the grid indices it sums.
    bin_members: dict | None = field(repr=False, default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "remarks", tuple(self.remarks))  # a builder's list, frozen with the rest

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @functools.cached_property
    def fit(self) -> FitTest | None:
        """Whether the reports could come from honest randomization of any population (`fit.FitTest`: G² against the
        saturated model, its p-value and how it was computed), tested when first read; None where nothing was tested.
        A p below `fit.FLAG_P` is named first among the `notes`."""
        source = self.fit_source
        return source() if callable(source) else source  # type: ignore[return-value]

    @property
    def notes(self) -> tuple[str, ...]:
        """What a reader of the figures must be told: a failed fit test first (so reading the notes tests the fit),
        then the `remarks` of the estimate's builders."""
        tested = self.fit
        return ((tested.describe(),) if tested is not None and tested.flagged else ()) + tuple(self.remarks)

    @functools.cached_property
    def covariance(self) -> np.ndarray | None:
        """The estimate's covariance matrix, written out when first read: for k-ary randomized response every
        standard error is a closed form in O(k), and this k × k matrix is the only O(k²) part of the estimate."""
        return est.written_out(self.covariance_source)

    def _variance(self, functional: np.ndarray) -> float:
        """``functional``ᵀ covariance ``functional``, through the covariance's reading where it has one (a long grid's
        matrix is never written out for it)."""
        source = self.covariance_source
        if hasattr(source, "variance"):
            return source.variance(functional)
        return math.nan if self.covariance is None else float(functional @ self.covariance @ functional)

    @property
    def answer_shares(self) -> np.ndarray:
        """The estimated share of each answer (each grid value of a number), in the mechanism's order, whatever the
        table's rows are."""
        if self.shares is not None:
            return np.asarray(self.shares, dtype=float)
        return self.table["estimate"].to_numpy(dtype=float)

    def value_rows(self, values=None) -> pd.DataFrame:
        """A number's per-value rows (the columns of the table) for ``values`` (grid values; None: every one). A wide
        number publishes bins and quartiles; its per-value rows are worked out here, only for the values asked for
        (each an interval's worth of work). Single values of a wide grid are seldom identified at a survey's ε and n:
        read their intervals."""
        if not isinstance(self.mechanism, LaplaceMechanism):
            raise ValueError("value_rows(): only number questions have per-value rows")
        grid = np.array(self.mechanism.answers, dtype=float)
        wanted = grid if values is None else np.atleast_1d(np.asarray(values, dtype=float))
        indices = np.searchsorted(grid, wanted)
        missing = [v for v, i in zip(wanted, indices) if i >= len(grid) or not math.isclose(grid[i], v, abs_tol=1e-9)]
        if missing:
            raise ValueError(f"value_rows(): {missing[0]:g} is not on the grid {grid[0]:g}..{grid[-1]:g} "
                             f"step {float(self.mechanism.step):g}")
        if self.rows_of is None:
            return self.table.iloc[indices]
        return self.rows_of(indices)

    @property
    def estimate(self) -> pd.Series:
        return self.table["estimate"]

    @property
    def se(self) -> pd.Series:
        return self.table["se"]

    @property
    def unbiased(self) -> pd.Series:
        return self.table["unbiased"]

    @property
    def converged(self) -> bool:
        """True when the certificate meets its tolerance: the estimate is the maximum of the likelihood."""
        return self.certificate.converged

    @property
    def optimality_gap(self) -> float:
        """Upper bound on how far the estimate's log-likelihood can be below the maximum."""
        return self.certificate.optimality_gap

    def _refitted(self) -> Callable:
        """How this estimate is made again at another level or by another method."""
        if self.refit is None:
            raise AnalysisError("this result keeps no way to refit it (it was put together from others): estimate "
                                "again with the level or method wanted", "level")
        return self.refit

    def conf_int(self, level: float | None = None, method: str | None = None,
                 simultaneous: bool | None = None) -> pd.DataFrame:
        """Intervals at another level, by another method, or simultaneous (Bonferroni) over the answers.
        Methods: binary designs and multi-select ``clopper-pearson`` (default), ``likelihood``, ``wilson``,
        ``wald``; other designs ``likelihood`` (default) and ``wald``."""
        if level is None and method is None and simultaneous is None:
            return self.table[["ci_low", "ci_high"]].copy()
        again = self._refitted()(level or self.level, method or self.method,
                           self.simultaneous if simultaneous is None else simultaneous)
        return again.table[["ci_low", "ci_high"]]

    def binned(self, bins: int = 5) -> pd.DataFrame:
        """A number's distribution in at most ``bins`` ranges of adjacent grid values (equal in count): each
        range's share with its SE (from ``covariance``) and its profile-likelihood interval at ``level``, the
        interval of the sum of those values' shares. Where one value's share is uninformative, a range of them
        may not be. Indexed by the range ("0–5"); numbers only."""
        if not isinstance(self.mechanism, LaplaceMechanism):
            raise ValueError("binned(): only number questions have a grid of values to bin")
        if not (isinstance(bins, int) and bins >= 1):
            raise ValueError(f"binned(): bins must be a whole number ≥ 1, got {bins!r}")
        values = np.array(self.mechanism.answers, dtype=float)
        pi = self.answer_shares
        q = channels.channel_matrix(self.mechanism)

        calibrated = None
        if bootstrap.needs_bootstrap(self.mechanism) and not calibration.is_interior(q, pi, self.n):
            calibrated = calibration.at_estimate(q, self.counts, pi)  # the estimate's own surveys (seeded by counts)
        return ranges.range_table(q, self.counts, pi, ranges.equal_count_groups(values, bins), self._variance,
                                  self.level, calibrated)

    def to_frame(self) -> pd.DataFrame:
        frame = self.table.copy()
        frame.attrs.update({"question": self.question_id, "text": self.text, "population": self.population,
                            "versions": self.versions,
                            "design": self.design, "n": self.n, "level": self.level,
                            "method": self.method, "simultaneous": self.simultaneous, "converged": self.converged,
                            "optimality_gap": self.optimality_gap, "sample": self.sample or "simple random sample",
                            "design_effect": self.design_effect, "effective_n": self.effective_n,
                            "design_df": self.design_df})
        return frame

    def _summary_table(self) -> pd.DataFrame:
        return self.table

    def _summary_lines(self) -> list[str]:
        r = self
        c = r.certificate
        lines = [f"Question: {r.question_id or '-'}   design: {r.design}   ε = {r.mechanism.epsilon:.4g}"]
        if r.text:
            lines.append(f"Text: {r.text}")
        if r.mean is not None:  # numbers and scales lead with their mean: per-value shares are often too noisy
            m = r.mean
            scale = "" if r.scores is None else f", on {r.scores[0]:g}–{r.scores[-1]:g}"
            lines.append(f"Mean: {m.estimate:.4g} (SE {m.se:.3g}), {m.level:.0%} CI [{m.ci.low:.4g}, {m.ci.high:.4g}] "
                         f"{m.method}{scale}; unbiased {m.unbiased:.4g} (SE {m.unbiased_se:.3g})")
        if r.quantiles is not None:
            lines.append(quantile_line(r.quantiles, r.level))
        if r.population:
            lines.append(f"Asked of: {r.population}; the estimates describe them (n = {r.n})")
        if r.versions and len(r.versions) > 1:
            lines.append(f"Pooled over versions {', '.join(r.versions)} (the same randomization of this question in each)")
        elif r.versions:
            lines.append(f"Version: {r.versions[0]}")
        if r.sample is None:
            lines.append("Sample: simple random sample (no sample design given)")
        else:
            lines.append(f"Sample: design-based ({r.sample}); design effect {r.design_effect:.3g}, effective n "
                         f"{r.effective_n:,.0f}, {r.design_df:,} degrees of freedom")
        lines += [f"Reports: n = {r.n}   intervals: {r.level:.0%} {r.method}{' (simultaneous, Bonferroni)' if r.simultaneous else ''}",
                 f"Estimate: maximum likelihood, {'certified' if c.converged else 'NOT CERTIFIED'} "
                 f"(KKT residual {c.kkt_residual:.1e}, log-likelihood within {c.optimality_gap:.1e} of the maximum)"]
        if r.fit is not None and not r.fit.flagged:  # a failed fit leads the notes instead
            lines.append(r.fit.describe()[0].upper() + r.fit.describe()[1:])
        lines += [f"Note: {note}" for note in r.notes]
        if r.split_ballot is not None:
            lines += comparison_lines(r.split_ballot, r.design)
        return lines

    def plot(self, ax=None):
        """Estimates with interval bars (matplotlib). Returns the axes."""
        table = self.table
        names = table["label"] if "label" in table else table.index  # labels where estimate(language=...) gave them
        return interval_plot(ax, list(names), table["estimate"], table["ci_low"], table["ci_high"],
                             f"estimated share ({self.level:.0%} {'simultaneous ' if self.simultaneous else ''}intervals)",
                             f"{self.question_id or self.design} (n = {self.n})" + ("" if self.converged else
                                                                                    " — NOT CERTIFIED"), bounds=(0, 1))

    def __repr__(self) -> str:
        head = f"<EstimateResult {self.question_id or ''} {self.design} n={self.n} {self.level:.0%} {self.method}"
        return head + ("" if self.mean is None else f" mean={self.mean.estimate:.4g}") + \
            ("" if self.converged else " NOT CERTIFIED") + ">"


def quantile_line(quantiles: pd.DataFrame, level: float) -> str:
    """"Median: 12 [10, 15]; quartiles 5 [3, 7] and 30 [25, 36] (95% CI)": a wide number's quantiles in words."""
    def figure(p):
        row = quantiles.loc[p]
        return f"{row['estimate']:g} [{row['ci_low']:g}, {row['ci_high']:g}]"

    return f"Median: {figure(0.5)}; quartiles {figure(0.25)} and {figure(0.75)} ({level:.0%} CI)"
