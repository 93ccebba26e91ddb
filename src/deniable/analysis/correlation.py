"""The correlation between two answers when either or both are randomized (RRreg's ``RRcor``):
``correlation(data, "dodged", "cheated")``.

* Two yes/no or ordinal questions (randomized or public): their joint table of true answers is the maximum of the
  likelihood through the product of their channels (P(r_a, r_b | a, b) = Q_a[r_a, a]·Q_b[r_b, b]: each respondent's
  two randomizations are independent), certified like every share; the correlation is Pearson's between the answers'
  scores (yes 1, no 0; an ordinal scale's positions 0, 1, …) under that table (for two yes/no questions, φ).
* A randomized yes/no or ordinal question with a public number: by moments, each report replaced by its unbiased
  transform, whose product with a public number is unbiased for the true answer's (the randomization is independent
  of everything else); the true answer's variance comes from its shares.

The standard error is the delta method's through the design-based covariance of the report frequencies (or the
moments): a simple random sample's, or a `SampleDesign`'s. The interval is built on Fisher's z = atanh(r), so it
stays inside (−1, 1) and holds the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from deniable.client.compliance import GroupedMechanism

from . import channels, distributions
from .counting import report_positions
from .errors import AnalysisError
from .family import Result, interval_plot
from .likelihood import certified_maximum
from .sample_design import SampleDesign, fit_jacobian
from .weighted import PANEL_BOUND, panel_sample

SCORED = ("yes_no", "ordinal")


@dataclass(frozen=True)
class Correlation(Result):
    """Pearson's correlation of two true answers, with its SE and interval (`correlation`)."""

    first: str
    second: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    level: float
    n: int
    method: str
    sample: str
    #: The joint table of true answers (rows: the first question's answers), for the joint route; None by moments.
    table: pd.DataFrame | None = None
    certificate: object = None

    def to_frame(self) -> pd.DataFrame:
        frame = pd.DataFrame({"estimate": [self.estimate], "se": [self.se], "ci_low": [self.ci_low],
                              "ci_high": [self.ci_high], "n": [self.n]},
                             index=pd.Index([f"corr({self.first}, {self.second})"], name="correlation"))
        frame.attrs.update(level=self.level, method=self.method, sample=self.sample)
        return frame

    def _summary_lines(self) -> list[str]:
        return [f"Correlation of the true answers to {self.first!r} and {self.second!r}: {self.estimate:.3f} "
                f"(SE {self.se:.3f}), {self.level:.0%} interval [{self.ci_low:.3f}, {self.ci_high:.3f}]; "
                f"n = {self.n}. Method: {self.method}. Sample: {self.sample}."]

    def _summary_table(self) -> pd.DataFrame | None:
        return self.table  # the joint table of true answers, where the joint route gave one

    def __str__(self) -> str:
        return self._summary_lines()[0]

    def __repr__(self) -> str:
        return (f"Correlation({self.first!r}, {self.second!r}: {self.estimate:.3f} (SE {self.se:.3f}), "
                f"{self.level:.0%} CI [{self.ci_low:.3f}, {self.ci_high:.3f}], n = {self.n})")

    def plot(self, ax=None):
        """The correlation with its interval, on [−1, 1] (matplotlib). Returns the axes."""
        return interval_plot(ax, [f"{self.first} ~ {self.second}"], [self.estimate], [self.ci_low], [self.ci_high],
                             f"correlation of the true answers ({self.level:.0%} interval)", f"n = {self.n}",
                             bounds=(-1, 1))


def correlation(data, first: str, second: str, *, level: float = 0.95, design: SampleDesign | None = None) -> Correlation:
    """Pearson's correlation between the true answers to ``first`` and ``second`` (module docstring). ``design``: a
    `SampleDesign` (weights, strata, clusters) for the weighted estimate and its design-based SE."""
    if not 0 < level < 1:
        raise AnalysisError(f"level: between 0 and 1, got {level!r}", "level")
    if first == second:
        raise AnalysisError("correlation of a question with itself: name two questions", "second")
    questions = [data.question(first), data.question(second)]
    for question in questions:
        if isinstance(question.mechanism, GroupedMechanism):
            raise AnalysisError(f"{question.id}: a compliance design's latent classes have no score to correlate",
                                question.id)
        if question.split_ballot is not None:
            raise AnalysisError(f"{question.id}: a split ballot's two arms are two measurements; correlate another "
                                "question", question.id)
        if question.type not in (*SCORED, "number"):
            raise AnalysisError(f"{question.id}: a {question.type} question has no order to correlate (yes/no, ordinal "
                                "or number questions)", question.id)
    given = design is not None
    sampled = design if design is not None else SampleDesign()
    frame = data.design_frame(first, [second, *sampled.column_names()])
    sample = panel_sample(data, sampled, first, frame, sampled.resolve(frame))
    # (what the result says the sample was, the degrees of freedom of its interval: none for a simple random sample)
    described = (sample.description, sample.df) if given else ("simple random sample", None)
    if sample.waves is not None:
        described = (f"{described[0]}; {PANEL_BOUND}", described[1])
    numbers = [q for q in questions if q.type == "number"]
    if not numbers:
        return _joint(questions, frame, sample, level, described)
    if len(numbers) == 2 or numbers[0].is_private:
        raise AnalysisError("correlation: a number question enters only when public, beside a yes/no or ordinal "
                            "question (two public numbers: pandas' corr())", numbers[0].id)
    return _moments(questions, frame, sample, level, described)


def _scores(question) -> np.ndarray:
    answers = question.mechanism.answers
    if question.type == "yes_no":
        return np.array([1.0 if answer == "yes" else 0.0 for answer in answers])
    return np.arange(len(answers), dtype=float)


def _pearson(pi: np.ndarray, score_a: np.ndarray, score_b: np.ndarray) -> float:
    table = pi.reshape(len(score_a), len(score_b))
    row, column = table.sum(axis=1), table.sum(axis=0)
    mean_a, mean_b = row @ score_a, column @ score_b
    var_a, var_b = row @ score_a**2 - mean_a**2, column @ score_b**2 - mean_b**2
    if not (var_a > 1e-12 and var_b > 1e-12):
        return np.nan
    return float((score_a @ table @ score_b - mean_a * mean_b) / np.sqrt(var_a * var_b))


def _gradient(function, point: np.ndarray, step: float = 1e-6) -> np.ndarray:
    gradient = np.zeros(len(point))
    for i in range(len(point)):
        up, down = point.copy(), point.copy()
        up[i] += step
        down[i] -= step
        gradient[i] = (function(up) - function(down)) / (2 * step)
    return gradient


def _joint(questions, frame, sample, level, described: tuple) -> Correlation:
    a, b = questions
    q = np.kron(channels.written_out(channels.channel_matrix(a.mechanism), f"correlation of {a.id!r}"),
                channels.written_out(channels.channel_matrix(b.mechanism), f"correlation of {b.id!r}"))
    position_a = report_positions(a.mechanism, frame[a.id].tolist())
    position_b = report_positions(b.mechanism, frame[b.id].tolist())
    reports_b = len(b.mechanism.reports)
    joint = np.where((position_a >= 0) & (position_b >= 0), position_a * reports_b + position_b, -1)
    lam, covariance, n, _ = sample.frequencies(joint, q.shape[0])
    if n < 2:
        raise AnalysisError(f"correlation: {n} responses answer both {a.id!r} and {b.id!r}; at least 2 are needed")
    pi, certificate = certified_maximum(q, lam * n)
    score_a, score_b = _scores(a), _scores(b)
    estimate = _pearson(pi, score_a, score_b)
    if not np.isfinite(estimate):
        raise AnalysisError(f"correlation: the true answers to {a.id!r} or to {b.id!r} are estimated not to vary (one "
                            "answer has every respondent); a correlation needs both to vary")
    jacobian = fit_jacobian(q, pi, lam)
    gradient = _gradient(lambda p: _pearson(p, score_a, score_b), pi) @ jacobian
    se = float(np.sqrt(max(gradient @ covariance @ gradient, 0.0)))
    low, high = _fisher_interval(estimate, se, level, described[1])
    table = pd.DataFrame(pi.reshape(len(score_a), len(score_b)), index=pd.Index(a.mechanism.answers, name=a.id),
                         columns=pd.Index(b.mechanism.answers, name=b.id))
    return Correlation(a.id, b.id, estimate, se, low, high, level, n,
                       "the joint table of true answers by maximum likelihood through both channels, delta-method SE",
                       described[0], table, certificate)


def _moments(questions, frame, sample, level, described: tuple) -> Correlation:
    scored, number = (questions if questions[1].type == "number" else questions[::-1])
    mechanism = scored.mechanism
    q = channels.channel_matrix(mechanism)
    positions = report_positions(mechanism, frame[scored.id].tolist())
    values = pd.to_numeric(frame[number.id]).to_numpy(dtype=float)
    keep = (positions >= 0) & np.isfinite(values)
    n = int(keep.sum())
    if n < 3:
        raise AnalysisError(f"correlation: {n} responses answer both {scored.id!r} and {number.id!r}; at least 3 are "
                            "needed")
    # Each report's unbiased transform of the true answer's score and of its square (E over the channel = the truth's).
    inverse = channels.left_inverse(channels.written_out(q, f"correlation with {number.id!r}"))
    scores = _scores(scored)
    transform = np.where(keep, (scores @ inverse)[np.maximum(positions, 0)], 0.0)
    transform_square = np.where(keep, (scores**2 @ inverse)[np.maximum(positions, 0)], 0.0)
    x = np.where(keep, values, 0.0)
    weights = np.where(keep, sample.weights, 0.0)
    total = weights.sum()
    moments = np.column_stack([transform, x, transform * x, transform_square, x**2])
    m = weights @ moments / total

    def pearson(m):
        var_z, var_x = m[3] - m[0] ** 2, m[4] - m[1] ** 2
        return (m[2] - m[0] * m[1]) / np.sqrt(var_z * var_x) if var_z > 1e-12 and var_x > 1e-12 else np.nan

    estimate = float(pearson(m))
    if not np.isfinite(estimate):
        raise AnalysisError(f"correlation: the true answers to {scored.id!r} or the values of {number.id!r} do not "
                            "vary in these responses")
    influence = weights[:, None] * (moments - m) / total
    covariance = sample.covariance(influence)
    gradient = _gradient(pearson, m)
    se = float(np.sqrt(max(gradient @ covariance @ gradient, 0.0)))
    estimate_shown = float(np.clip(estimate, -1.0, 1.0))
    low, high = _fisher_interval(estimate_shown, se, level, described[1])
    return Correlation(questions[0].id, questions[1].id, estimate_shown, se, low, high, level, n,
                       "moments of each report's unbiased transform, delta-method SE", described[0])


def _fisher_interval(estimate: float, se: float, level: float, df: int | None) -> tuple[float, float]:
    """The interval on z = atanh(r), mapped back: inside (−1, 1), around the estimate."""
    critical = distributions.t_isf((1 - level) / 2, df) if df is not None else distributions.norm_isf((1 - level) / 2)
    bounded = float(np.clip(estimate, -1 + 1e-12, 1 - 1e-12))
    centre, half = np.arctanh(bounded), critical * se / (1 - bounded**2)
    return float(np.tanh(centre - half)), float(np.tanh(centre + half))
