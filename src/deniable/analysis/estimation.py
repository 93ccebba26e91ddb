"""`estimate()`: the published estimate of a question, from its reports, or from loaded data (with a sample's design,
pooled over a panel's waves, beside a split ballot's direct arm), finished with what surrounds it: the control
question's check, the assignment test, whom the question was asked of, the text in a language. The estimate from
counts itself is `from_counts.estimate_counts`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from deniable.client import Question
from deniable.client.compliance import GroupedMechanism
from deniable.client.mechanisms import Mechanism
from deniable.client.reports import WAVES

from . import channels, distributions, likelihood, splitballot
from .assignment import assignment_test, over_waves
from .counting import count_reports
from .errors import AnalysisError
from .from_counts import estimate_counts
from .pooled import pooled_over_waves
from .precision import scores
from .results import EstimateResult
from .survey_data import no_randomized_reports, nothing_to_estimate
from .weighted import design_estimate


def estimate(question_or_mechanism, reports=None, level: float = 0.95, method: str | None = None,
             simultaneous: bool = False, language: str | None = None, design=None, values: bool = False) -> EstimateResult:
    """Estimates for one question: maximum likelihood on the parameter space, with intervals.

    ``estimate(question_or_mechanism, reports)`` with a list, numpy array or pandas Series of report
    values, or ``estimate(loaded_survey, "question_id")`` for data from `load`. ``level`` is each
    interval's confidence unless ``simultaneous`` asks for all of a question's intervals to hold together
    (Bonferroni). ``method``: see `EstimateResult.conf_int`. ``language`` adds a ``label`` column (each
    answer's label in that language; the index keeps the stable option names) and the question's text.

    A question that skip logic shows to some respondents only is estimated among them: the result
    says whom (``population``, in `summary` and in ``to_frame().attrs``).

    ``design``: a `SampleDesign` (weights, strata, clusters, fpc, raking) of loaded data: the weighted
    pseudo-likelihood's maximum with design-based standard errors (`weighted.design_estimate`). Without one the
    result says it assumes a simple random sample.

    A number with more than `ranges.WIDE_GRID` values is published as its mean, median and quartiles and its shares
    over bins (the question's ``bins``, else about ten round ones); ``values=True`` asks for a row per value instead
    (`EstimateResult.value_rows` gives a few of them without it).
    """
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise AnalysisError(f"level must be between 0 and 1, got {level!r}")
    if hasattr(question_or_mechanism, "question_counts"):  # a LoadedSurvey
        loaded, question_id = question_or_mechanism, reports
        question = loaded.question(question_id)
        panel = loaded.pools_waves and design is None  # a design bounds a panel through its sample (`panel_sample`)
        empty = nothing_to_estimate(loaded, question_id)
        if empty is not None:
            raise AnalysisError(f"{question_id}: {empty}")
        if design is not None:
            result = design_estimate(loaded, question_id, design, level, method, simultaneous, values=values)
            split = result.split_ballot
        else:
            # A panel's fit is tested wave by wave (`pooled_over_waves`): the pooled counts' own test is not read.
            result = estimate_counts(question.mechanism, loaded.question_counts(question_id), level, method, question_id,
                                     simultaneous, scores=scores(question), bins=question.bins, values=values)
            if panel:
                result = pooled_over_waves(loaded, question_id, result, level, method, simultaneous, values=values)
            split = splitballot.comparison(
                result, loaded.direct_counts(question_id), level,
                [loaded.direct_counts(question_id, WAVES, wave) for wave in loaded.waves] if panel else None,
            ) if loaded.has_split_ballot(question_id) else None
        return _finished(result, question, language, split, _assignment(loaded, question_id, question),
                         [loaded.question_counts(question_id, WAVES, wave) for wave in loaded.waves]
                         if loaded.pools_waves else None,
                         population=loaded.population(question_id),
                         versions=[v.label for v in loaded.versions_for(question_id)])
    if isinstance(question_or_mechanism, Question):
        mechanism, question_id = question_or_mechanism.mechanism, question_or_mechanism.id
    elif isinstance(question_or_mechanism, Mechanism):
        mechanism, question_id = question_or_mechanism, None
    else:
        raise TypeError("estimate() takes a Question, a Mechanism or a loaded survey")
    if reports is None:
        raise AnalysisError("reports: required (a list, numpy array or pandas Series of report values)")
    if design is not None:
        raise AnalysisError("design: needs loaded data (estimate(load(...), question, design=...)), whose columns it "
                            "names", "design")
    split = getattr(question_or_mechanism, "split_ballot", None)
    if split is not None:  # the design's estimate from the randomized arm; the direct arm beside it
        counts, direct = split.split_counts(count_reports(split, reports))
        if sum(counts) == 0 and sum(direct) > 0:
            raise AnalysisError(f"{question_id or 'question'}: {no_randomized_reports(int(sum(direct)))}")
    else:
        counts, direct = count_reports(mechanism, reports), None
    asked = question_or_mechanism if isinstance(question_or_mechanism, Question) else None
    result = estimate_counts(mechanism, counts, level, method, question_id, simultaneous,
                             scores=None if asked is None else scores(asked), bins=None if asked is None else asked.bins,
                             values=values)
    split = None if direct is None else splitballot.comparison(result, direct, level)
    if not isinstance(question_or_mechanism, Question):
        return result if split is None else dataclasses.replace(result, split_ballot=split)
    return _finished(result, question_or_mechanism, language, split)


def _finished(result: EstimateResult, question: Question, language: str | None, split_ballot=None, assignment=None,
              wave_counts: list | None = None, **facts) -> EstimateResult:
    """The result as published, built once from the estimate and what surrounds it: the split ballot's comparison,
    the assignment test, the control question's check (each failure leading the notes), whom the question was asked
    of and which versions were counted (``facts``), the text and labels in ``language``. ``wave_counts``: a panel's
    counts wave by wave, which the control's test reads (`_control`)."""
    control, control_note = _control(result, question, wave_counts)
    lead = [control_note] if control_note else []
    if assignment is not None and assignment.flagged:
        lead.append(assignment.describe())
    table = result.table
    if language is not None and question.type in ("choice", "ordinal", "multi_select"):
        table = table.copy()
        table.insert(0, "label", [question.option_label(value, language) for value in table.index])
    return dataclasses.replace(result, split_ballot=split_ballot, assignment=assignment, control=control,
                               remarks=(*lead, *result.remarks), text=question.text_in(language), table=table, **facts)


def _assignment(loaded, question_id: str, question: Question):
    """The public markers' counts tested against the design's draw (`assignment`); None where there are none, or where
    pooled versions drew a split ballot's arms with different shares. A panel's wave by wave (`assignment.over_waves`:
    a panelist keeps their marker in every wave)."""
    if loaded.pools_waves:
        return over_waves([_marker_test(loaded, question_id, question, (WAVES, wave)) for wave in loaded.waves])
    return _marker_test(loaded, question_id, question, (None, None))


def _marker_test(loaded, question_id: str, question: Question, among: tuple):
    """`_assignment` of the respondents with ``among`` = (public question or `WAVES`, its level); (None, None): all."""
    mechanism = question.mechanism
    splits = {None if (split := v.survey.questions[question_id].split_ballot) is None else split.direct
              for v in loaded.versions_for(question_id)}
    if loaded.has_split_ballot(question_id):
        drawn = next(iter(splits))
        if len(splits) != 1 or drawn is None:  # pooled with versions asking it otherwise: no one share the arms were drawn with
            return None
        share = float(drawn)
        return assignment_test("arm", {"direct": int(loaded.direct_counts(question_id, *among).sum()),
                                       "randomized": int(loaded.question_counts(question_id, *among).sum())},
                               {"direct": share, "randomized": 1 - share})
    if isinstance(mechanism, GroupedMechanism):
        counts = loaded.question_counts(question_id, *among)
        by_group = {group: int(sum(c for r, c in zip(mechanism.reports, counts) if r["group"] == group))
                    for group in mechanism.groups}
        return assignment_test("group", by_group, {group: 1 / len(mechanism.groups) for group in mechanism.groups})
    return None


def _control(result: EstimateResult, question: Question, wave_counts: list | None = None) -> tuple[dict | None, str | None]:
    """A known-share control (``control: {share: 0}``): did the design recover the known "yes" share? Its interval and
    a likelihood-ratio test of the share (p), and the note that says so; (None, None) for other questions. A panel's
    test is each wave's own (``wave_counts``), the smallest p Bonferroni-corrected: its pooled counts are overdispersed
    by one person's memoized waves, as its interval (bounded over the waves) already allows for."""
    if getattr(question, "control", None) is None:
        return None, None
    share = float(question.control)
    low, high = (float(result.table.at["yes", column]) for column in ("ci_low", "ci_high"))
    q = channels.channel_matrix(result.mechanism)

    def tested(counts) -> float:
        peak = likelihood.loglikelihood(q, counts, likelihood.maximise(q, counts)[0])
        statistic = max(2 * (peak - likelihood.profile_loglikelihood(q, counts, 0, share)), 0.0)
        return float(distributions.chi2_sf(statistic, 1))

    waves = [counts for counts in wave_counts or [] if np.sum(counts) > 0]
    if len(waves) > 1:
        p_value = distributions.bonferroni(tested(counts) for counts in waves)
        test = f"likelihood-ratio p = {p_value:.3g}, each wave's own, the smallest of {len(waves)}, Bonferroni"
    else:
        p_value = tested(result.counts)
        test = f"likelihood-ratio p = {p_value:.3g}"
    recovered = bool(low - 1e-9 <= share <= high + 1e-9)
    where = f"the {result.level:.0%} interval [{low:.3g}, {high:.3g}] ({test})"
    note = (f"control question: its known share {share:g} is inside {where}: the design recovered it" if recovered else
            f"CONTROL FAILED: the known share {share:g} is outside {where}: respondents may not have "
            "followed the instructions, and the other estimates deserve the same doubt")
    return {"share": share, "recovered": recovered, "p_value": p_value}, note
