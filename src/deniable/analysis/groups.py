"""Estimates within the levels of a public question, and the difference between two groups."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from deniable.client.laplace import LaplaceMechanism
from deniable.client.reports import WAVES

from . import distributions
from . import estimators as est
from .counting import key
from .errors import AnalysisError
from .family import Result, interval_plot
from .from_counts import estimate_counts
from .pooled import pooled_over_waves, wave_counts_by
from .precision import scores
from .results import EstimateResult
from .splitballot import comparison
from .survey_data import nothing_to_estimate
from .weighted import design_subgroups, domain_difference_se


def subgroups(loaded, question_id: str, by: str, level: float = 0.95, method: str | None = None,
              simultaneous: bool = False, design=None) -> dict:
    """{level of ``by``: EstimateResult of ``question_id`` among respondents with that level}. A level whose
    respondents gave the question nothing to estimate from (`nothing_to_estimate`: an optional question, a split
    ballot's direct arm only) is left out, as a level nobody has is.

    ``design``: a `SampleDesign`: each group is a domain of the whole sample, estimated with its design-based
    standard error (every PSU kept, the domain's reports alone counted), not as a sample of its own."""
    if design is not None:
        return _said_column(loaded, by, design_subgroups(loaded, question_id, by, design, level, method, simultaneous))
    question = loaded.question(question_id)
    panel = by != WAVES and loaded.pools_waves
    results = {value: estimate_counts(question.mechanism, loaded.question_counts(question_id, by, value), level, method,
                                      question_id, simultaneous, scores=scores(question), bins=question.bins)
               for value in loaded.levels(by) if nothing_to_estimate(loaded, question_id, by, value) is None}
    per_level, direct_waves = wave_counts_by(loaded, question_id, by) if panel else ({}, {})
    if panel:
        # A panel's group pools its people's waves, as the whole survey's estimate does: bounded the same way.
        results = {value: pooled_over_waves(loaded, question_id, result, level, method, simultaneous,
                                            per_level.get(key(value), {}))
                   for value, result in results.items()}
    counted = {v.spec_hash for v in loaded.versions_grouped_by(by)}
    versions = [v.label for v in loaded.versions_for(question_id) if v.spec_hash in counted]
    split = loaded.has_split_ballot(question_id)
    return _said_column(loaded, by, {value: dataclasses.replace(
                result, versions=versions,
                split_ballot=comparison(result, loaded.direct_counts(question_id, by, value), level,
                                        list(direct_waves.get(key(value), {}).values()) or None) if split else None)
            for value, result in results.items()})


def _said_column(loaded, by: str, results: dict) -> dict:
    """Groups by a column of the data (`LoadedSurvey.is_column`) say so beside each group's figures."""
    if not loaded.is_column(by):
        return results
    note = (f"the groups are the values of {by!r}, a column of the data (the sampling frame's rows the invitations "
            "carried, or an export's own column), not a question")
    return {value: dataclasses.replace(result, remarks=(*result.remarks, note)) for value, result in results.items()}


def subgroup_frame(results: dict) -> pd.DataFrame:
    """Stack subgroup results into one frame indexed by (group, answer), with n per group."""
    parts = []
    for value, result in results.items():
        frame = result.to_frame().assign(n=result.n)
        frame.index = pd.MultiIndex.from_product([[value], frame.index], names=["group", frame.index.name])
        parts.append(frame)
    return pd.concat(parts)


@dataclass
class Comparison(Result):
    """The difference between two groups, a − b: of one answer's share, or of the mean (``answer="mean"``)."""

    question_id: str
    answer: object
    groups: tuple
    difference: float
    se: float
    ci: est.ConfidenceInterval
    level: float
    statistic: float
    pvalue: float
    results: tuple
    note: str | None = None
    #: The degrees of freedom of a design-based comparison's t test; None: a z test (the normal).
    df: int | None = None

    @property
    def test(self) -> str:
        """The statistic as it is read: "z = 1.470", or "t = 1.470 on 42 df" for a design-based comparison."""
        return f"z = {self.statistic:.3f}" if self.df is None else f"t = {self.statistic:.3f} on {self.df} df"

    def __repr__(self):
        a, b = self.groups
        what = " mean" if self.answer == "mean" else f"={self.answer!r}"
        return (f"Comparison({self.question_id}{what}: {a!r} − {b!r} = {self.difference:.4f} "
                f"(SE {self.se:.4f}), {self.level:.0%} CI [{self.ci.low:.4f}, {self.ci.high:.4f}], "
                f"{self.test}, p = {self.pvalue:.4g})")

    @property
    def _figure(self) -> str:
        return "mean" if self.answer == "mean" else f"share of {self.answer!r}"

    def to_frame(self) -> pd.DataFrame:
        """The two groups' figures and their difference (its test on the difference's row)."""
        a, b = self.groups
        rows = [self._group_row(result) for result in self.results] + [
            [self.difference, self.se, self.ci.low, self.ci.high, self.statistic, self.pvalue]]
        frame = pd.DataFrame(rows, columns=["estimate", "se", "ci_low", "ci_high", "statistic", "p_value"],
                             index=pd.Index([str(a), str(b), f"{a} − {b}"], name=self.question_id))
        frame.attrs.update(question=self.question_id, answer=self.answer, level=self.level, df=self.df, note=self.note)
        return frame

    def _group_row(self, result: EstimateResult) -> list:
        if self.answer == "mean":
            mean = result.mean
            return [mean.estimate, mean.se, mean.ci.low, mean.ci.high, math.nan, math.nan] if mean is not None else \
                [math.nan] * 6
        row = result.table.loc[self.answer] if self.answer in result.table.index else None
        return [math.nan] * 6 if row is None else [row["estimate"], row["se"], row["ci_low"], row["ci_high"], math.nan,
                                                   math.nan]

    def _summary_lines(self) -> list[str]:
        a, b = self.groups
        lines = [f"Question: {self.question_id}   compared: the {self._figure}, {a!r} − {b!r}",
                 f"Difference: {self.difference:.4f} (SE {self.se:.4f}), {self.level:.0%} CI [{self.ci.low:.4f}, "
                 f"{self.ci.high:.4f}], {self.test}, p = {self.pvalue:.4g}"]
        return lines + ([f"Note: {self.note}"] if self.note else [])

    def plot(self, ax=None):
        """Each group's figure and the difference, with their intervals (matplotlib). Returns the axes."""
        frame = self.to_frame()
        return interval_plot(ax, list(frame.index), frame["estimate"], frame["ci_low"], frame["ci_high"],
                             f"the {self._figure} ({self.level:.0%} intervals)",
                             f"{self.question_id}: {' − '.join(map(repr, self.groups))}")


def default_answer(result: EstimateResult):
    """What a comparison compares when not told: a number's mean, else the share of "yes", else the first answer's."""
    if isinstance(result.mechanism, LaplaceMechanism):
        return "mean"
    return "yes" if "yes" in result.table.index else result.table.index[0]


def compare(loaded, question_id: str, by: str, a, b, answer=None, level: float = 0.95, design=None) -> Comparison:
    """Two-sided Wald test of equal shares of ``answer`` in groups ``a`` and ``b`` of the public question
    ``by``: the difference of the two groups' estimates (the same figures `subgroups` shows), with standard
    error from the sum of their variances, since the groups are independent samples.

    A number question compares means (the default ``answer`` for it is ``"mean"``); an ordinal scale
    compares its mean position with ``answer="mean"``, else the share of "yes" or the first answer. The
    interval is clipped to what a difference can be: [−1, 1] for shares, ±(max − min) for means.

    ``design``: a `SampleDesign`; the groups are domains of one sample, whose estimates share PSUs: the difference's
    standard error is their joint linearization (`weighted.domain_difference_se`), the test a t on the design's
    degrees of freedom."""
    results = subgroups(loaded, question_id, by, level, design=design)
    for group in (a, b):
        if group not in results:
            why = nothing_to_estimate(loaded, question_id, by, group) if group in loaded.levels(by) else None
            name = "wave" if by == WAVES else by
            raise AnalysisError(f"{name}={group!r}: {why or 'no responses in this group'} (groups: {list(results)})")
    first, second = results[a], results[b]
    if answer is None:
        answer = default_answer(first)
    if answer == "mean":
        if first.mean is None:
            raise AnalysisError(f"{question_id}: answer='mean' needs a number or an ordinal question")
        difference = first.mean.estimate - second.mean.estimate
        se = math.sqrt(first.mean.se ** 2 + second.mean.se ** 2)
        bound = float(first.scores[-1] - first.scores[0])
    else:
        if answer not in first.table.index:
            raise AnalysisError(f"answer {answer!r} is not one of {list(first.table.index)}" +
                             (" (or 'mean')" if first.mean is not None else ""))
        difference = float(first.table.at[answer, "estimate"] - second.table.at[answer, "estimate"])
        se = math.sqrt(first.table.at[answer, "se"] ** 2 + second.table.at[answer, "se"] ** 2)
        bound = 1.0
    df, note = None, None
    if design is not None:
        if answer == "mean":
            functional = first.scores
        elif first.bin_members is not None:  # a wide number's bin: the sum of its values' shares
            functional = np.zeros(len(first.answer_shares))
            functional[first.bin_members[answer]] = 1.0
        else:
            functional = (first.table.index == answer).astype(float)
        se, df = domain_difference_se(loaded, question_id, by, a, b, design, np.asarray(functional, dtype=float))
        note = (f"design-based: the groups are domains of one sample ({first.sample}); the standard error is their "
                f"joint linearization, the test a t on {df} degrees of freedom")
    z = distributions.t_isf((1 - level) / 2, df)  # the normal's where df is None
    statistic = difference / se if se > 0 else math.copysign(math.inf, difference) if difference else 0.0
    pvalue = float(2 * distributions.t_sf(abs(statistic), df))
    interval = est.ConfidenceInterval(max(difference - z * se, -bound), min(difference + z * se, bound))
    return Comparison(question_id, answer, (a, b), float(difference), se, interval, level, float(statistic), pvalue,
                      (first, second), note, df)


__all__ = ["Comparison", "EstimateResult", "compare", "default_answer", "subgroup_frame", "subgroups"]
