"""`estimate()` and its result object: one estimator per question shape, one result type for all."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from deniable.client import Question
from deniable.client.exact import canonical_json
from deniable.client.mechanisms import LaplaceMechanism, Mechanism, UnaryMechanism

from . import estimators as est


_key = canonical_json  # counts are keyed by the same text the server stores

def count_reports(mechanism: Mechanism, reports) -> np.ndarray:
    """Counts over the mechanism's report alphabet; ValueError names the first invalid report."""
    index = {_key(r): i for i, r in enumerate(mechanism.reports)}
    counts = np.zeros(len(index), dtype=np.int64)
    if isinstance(reports, pd.Series):
        reports = reports.dropna().tolist()
    for position, report in enumerate(reports):
        if report is None:
            continue
        try:
            counts[index[_key(mechanism.validate_report(report))]] += 1
        except (ValueError, KeyError):
            raise ValueError(f"reports[{position}]: {report!r} is not a report this mechanism can produce") from None
    return counts


@dataclass
class MeanEstimate:
    """The mean of a numeric question: value, standard error and interval."""

    estimate: float
    se: float
    ci: est.ConfidenceInterval
    level: float

    def __repr__(self):
        return f"MeanEstimate({self.estimate:.4g} ± {self.se:.3g}, {self.level:.0%} CI [{self.ci.low:.4g}, {self.ci.high:.4g}])"


@dataclass
class EstimateResult:
    """Estimates for one question. Users receive it from `estimate`; they do not build it.

    ``table`` (see `to_frame`) is indexed by answer (by option for multi-select, by grid value for
    numbers) with columns ``estimate`` (unbiased, may fall outside [0, 1]), ``se``, ``ci_low``,
    ``ci_high``, ``constrained`` (maximum likelihood on the simplex) and ``clipped``.
    """

    question_id: str | None
    design: str
    mechanism: Mechanism = field(repr=False)
    counts: np.ndarray = field(repr=False)
    level: float
    method: str
    table: pd.DataFrame = field(repr=False)
    covariance: np.ndarray | None = field(repr=False, default=None)
    mean: MeanEstimate | None = None
    simultaneous: bool = False
    notes: list = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def estimate(self) -> pd.Series:
        return self.table["estimate"]

    @property
    def se(self) -> pd.Series:
        return self.table["se"]

    def conf_int(self, level: float | None = None, method: str | None = None) -> pd.DataFrame:
        """Intervals at another level or by another method (binary designs: one of
        ``likelihood``, ``clopper-pearson``, ``wilson``, ``wald``)."""
        if level is None and method is None:
            return self.table[["ci_low", "ci_high"]].copy()
        again = _estimate(self.mechanism, self.counts, level or self.level, method or self.method, self.question_id)
        return again.table[["ci_low", "ci_high"]]

    def to_frame(self) -> pd.DataFrame:
        frame = self.table.copy()
        frame.attrs.update({"question": self.question_id, "design": self.design, "n": self.n, "level": self.level,
                            "method": self.method, "simultaneous": self.simultaneous})
        return frame

    def summary(self) -> "Summary":
        return Summary(self)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def plot(self, ax=None, constrained: bool = False):
        """Estimates with interval bars (matplotlib, imported only here). Returns the axes."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:  # pragma: no cover
            raise ImportError("plot() needs matplotlib: pip install matplotlib") from None
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(self.table)))
        table = self.table
        values = table["constrained" if constrained else "estimate"].to_numpy()
        positions = np.arange(len(table))
        errors = np.vstack([np.clip(values - table["ci_low"], 0, None), np.clip(table["ci_high"] - values, 0, None)])
        ax.errorbar(values, positions, xerr=errors, fmt="o", capsize=4)
        ax.set_yticks(positions, [str(i) for i in table.index])
        ax.invert_yaxis()
        ax.axvline(0, color="grey", linewidth=0.5)
        ax.set_xlabel(f"estimated share ({self.level:.0%} {'simultaneous ' if self.simultaneous else ''}intervals)")
        ax.set_title(f"{self.question_id or self.design} (n = {self.n})")
        return ax

    def __repr__(self) -> str:
        head = f"<EstimateResult {self.question_id or ''} {self.design} n={self.n} {self.level:.0%} {self.method}"
        return head + ("" if self.mean is None else f" mean={self.mean.estimate:.4g}") + ">"


class Summary:
    """A result as text, HTML or CSV (statsmodels style)."""

    def __init__(self, result: EstimateResult):
        self.result = result

    def _header(self) -> list[str]:
        r = self.result
        lines = [f"Question: {r.question_id or '-'}   design: {r.design}   ε = {r.mechanism.epsilon:.4g}",
                 f"Reports: n = {r.n}   intervals: {r.level:.0%} {r.method}{' (simultaneous, Bonferroni)' if r.simultaneous else ''}"]
        if r.mean is not None:
            m = r.mean
            lines.append(f"Mean: {m.estimate:.4g} (SE {m.se:.3g}), {m.level:.0%} CI [{m.ci.low:.4g}, {m.ci.high:.4g}]")
        lines += [f"Note: {note}" for note in r.notes]
        return lines

    def as_text(self) -> str:
        table = self.result.table.to_string(float_format=lambda x: f"{x:.4f}")
        return "\n".join(self._header() + ["", table])

    def as_html(self) -> str:
        header = "".join(f"<p>{html.escape(line)}</p>" for line in self._header())
        return f"<div class='deniable-estimate'>{header}{self.result.table.to_html(float_format=lambda x: f'{x:.4f}')}</div>"

    def as_csv(self) -> str:
        return self.result.table.to_csv()

    def _repr_html_(self) -> str:
        return self.as_html()

    def __str__(self) -> str:
        return self.as_text()

    __repr__ = __str__


def estimate(question_or_mechanism, reports=None, level: float = 0.95, method: str | None = None) -> EstimateResult:
    """Debiased estimates for one question.

    ``estimate(question_or_mechanism, reports)`` with an iterable or pandas Series of report values,
    or ``estimate(loaded_survey, "question_id")`` for data from `load`.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    if hasattr(question_or_mechanism, "question_counts"):  # a LoadedSurvey
        loaded, question_id = question_or_mechanism, reports
        question = loaded.survey.questions.get(question_id)
        if question is None:
            raise ValueError(f"no question {question_id!r} in survey {loaded.survey.id!r}")
        return _estimate(question.mechanism, loaded.question_counts(question_id), level, method, question_id)
    if isinstance(question_or_mechanism, Question):
        mechanism, question_id = question_or_mechanism.mechanism, question_or_mechanism.id
    elif isinstance(question_or_mechanism, Mechanism):
        mechanism, question_id = question_or_mechanism, None
    else:
        raise TypeError("estimate() takes a Question, a Mechanism or a loaded survey")
    if reports is None:
        raise ValueError("reports: required (an iterable or pandas Series of report values)")
    return _estimate(mechanism, count_reports(mechanism, reports), level, method, question_id)


def _estimate(mechanism, counts, level, method, question_id) -> EstimateResult:
    counts = np.asarray(counts, dtype=np.int64)
    if counts.sum() == 0:
        raise ValueError(f"{question_id or 'question'}: no reports to estimate from")
    if isinstance(mechanism, UnaryMechanism):
        return _multi_select(mechanism, counts, level, method, question_id)
    if isinstance(mechanism, LaplaceMechanism):
        return _numeric(mechanism, counts, level, question_id)
    if mechanism.answers == ["yes", "no"]:
        return _binary(mechanism, counts, level, method, question_id)
    return _categorical(mechanism, counts, level, question_id)


def _binary_rows(channel, k, n, level, method):
    estimate = float(channel.prevalence(k / n))
    rate = k / n
    se = math.sqrt(channel.unit_variance(rate) / n)
    interval, clipped = est.binary_interval(channel, k, n, level, method)
    return estimate, se, interval, est.constrained_binary(channel, k, n), clipped


def _binary(mechanism, counts, level, method, question_id):
    method = method or est.DEFAULT_BINARY_METHOD
    channel = est.binary_channel(mechanism)
    k, n = int(counts[0]), int(counts.sum())  # reports are ("yes", "no")
    value, se, (low, high), constrained, clipped = _binary_rows(channel, k, n, level, method)
    table = pd.DataFrame({"estimate": [value, 1 - value], "se": [se, se], "ci_low": [low, 1 - high],
                          "ci_high": [high, 1 - low], "constrained": [constrained, 1 - constrained],
                          "clipped": [clipped, clipped]}, index=pd.Index(["yes", "no"], name="answer"))
    notes = []
    if not 0 <= value <= 1:
        notes.append(f"the unbiased estimate {value:.4f} lies outside [0, 1]: the observed 'yes' rate is outside what "
                     "the design can produce; the interval is on the constrained parameter")
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, method, table,
                          covariance=np.array([[se**2, -se**2], [-se**2, se**2]]), notes=notes)


def _categorical(mechanism, counts, level, question_id):
    q = est.channel_matrix(mechanism)
    value, covariance = est.unbiased(q, counts)
    constrained, _ = est.em(q, counts)
    se = np.sqrt(np.clip(np.diag(covariance), 0, None))
    private = mechanism.is_private
    if private:
        z = est.simultaneous_z(level, len(value))
        low, high = value - z * se, value + z * se
        method, simultaneous = "wald", True
    else:  # public: plain proportions, simultaneous exact intervals
        n = counts.sum()
        alpha = (1 - level) / len(value)
        low = np.where(counts == 0, 0.0, stats.beta.ppf(alpha / 2, counts, n - counts + 1))
        high = np.where(counts == n, 1.0, stats.beta.isf(alpha / 2, counts + 1, n - counts))
        method, simultaneous = "clopper-pearson", True
    clipped = (low < 0) | (high > 1)
    table = pd.DataFrame({"estimate": value, "se": se, "ci_low": np.clip(low, 0, 1), "ci_high": np.clip(high, 0, 1),
                          "constrained": constrained, "clipped": clipped},
                         index=pd.Index(mechanism.answers, name="answer"))
    notes = []
    if (value < 0).any() or (value > 1).any():
        notes.append("some unbiased estimates fall outside [0, 1]; see the constrained column")
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, method, table, covariance,
                          simultaneous=simultaneous, notes=notes)


def _multi_select(mechanism, counts, level, method, question_id):
    method = method or est.DEFAULT_BINARY_METHOD
    channel = est.binary_channel(mechanism)
    n = int(counts.sum())
    reports = mechanism.reports
    options = mechanism.options
    per_level = 1 - (1 - level) / len(options)  # Bonferroni over options
    rows = []
    for option in options:
        k = int(sum(c for c, r in zip(counts, reports) if option in r))
        value, se, (low, high), constrained, clipped = _binary_rows(channel, k, n, per_level, method)
        rows.append((value, se, low, high, constrained, clipped))
    table = pd.DataFrame(rows, columns=["estimate", "se", "ci_low", "ci_high", "constrained", "clipped"],
                         index=pd.Index(options, name="option"))
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, method, table, simultaneous=True,
                          notes=["each row is the share selecting that option (options are not exclusive)"])


def _numeric(mechanism, counts, level, question_id):
    q = est.channel_matrix(mechanism)
    grid = np.array(mechanism.answers, dtype=float)
    value, covariance = est.unbiased(q, counts)
    constrained, _ = est.em(q, counts)
    se = np.sqrt(np.clip(np.diag(covariance), 0, None))
    z = est.simultaneous_z(level, len(value))
    low, high = value - z * se, value + z * se
    mean_value = float(grid @ value)
    mean_se = float(math.sqrt(max(grid @ covariance @ grid, 0.0)))
    z1 = float(stats.norm.isf((1 - level) / 2))
    mean = MeanEstimate(mean_value, mean_se, est.ConfidenceInterval(mean_value - z1 * mean_se, mean_value + z1 * mean_se), level)
    table = pd.DataFrame({"estimate": value, "se": se, "ci_low": np.clip(low, 0, 1), "ci_high": np.clip(high, 0, 1),
                          "constrained": constrained, "clipped": (low < 0) | (high > 1)},
                         index=pd.Index(mechanism.answers, name="value"))
    return EstimateResult(question_id, mechanism.design, mechanism, counts, level, "wald", table, covariance,
                          mean=mean, simultaneous=True,
                          notes=["rows are the estimated distribution on the grid; the mean uses the unbiased estimates"])
