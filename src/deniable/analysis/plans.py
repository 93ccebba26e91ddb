"""Advice before fielding: what each private question of a survey will give at a planned sample size (`plan`), as
`deniable survey check`, `survey show` and the dashboard's "Precision by sample size" print it (`describe_plan`).

The figures are `precision`'s, per channel: closed forms first for every question, then the bootstraps of the
channels that need one, small channels first, within a time limit of the thread's CPU that holds inside a bootstrap
too; remembered per process (they are deterministic), so a second view or check computes nothing. Skip logic asking
a question of some respondents only plans it at the share it reaches (`asked_shares`).
"""

from __future__ import annotations

import collections
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from deniable.client import Question, Survey, skiplogic
from deniable.client.laplace import LaplaceMechanism
from deniable.client.mechanisms import UnaryMechanism

from . import blas, bootstrap
from .deadline import time_limit
from .errors import AnalysisError, OutOfTime
from .family import Result
from .planned_design import SIMPLE, PlannedDesign, planned_design
from .precision import (
    CHEATER_SHARE,
    mean_unit_variance,
    n_for,
    n_to_detect_cheaters,
    published_spread,
    sample_size,
    scores,
    split_ballot_plan,
    two_sided_z,
    unit_variance,
)

#: A share whose 95% margin at the planned n is wider than this is flagged as uninformative.
UNINFORMATIVE_MARGIN = 0.15


@dataclass
class QuestionPlan(Result):
    """What one private question will give at a planned sample size (uniform true answers assumed)."""

    question_id: str
    design: str
    epsilon: float
    n: int
    level: float
    #: the least precise answer's share: its standard error at n (None: a wide number's shares, not planned in time)
    se: float | None
    margin: float | None  #: … and the half-width of its interval at n
    n_for_margin: int | None  #: respondents for a ±``target`` margin on every share
    target: float
    mean_se: float | None = None  #: numbers and ordinal scales: the mean's standard error at n
    mean_margin: float | None = None
    scale: tuple | None = None  #: the range the mean lives on
    flags: list = field(default_factory=list)
    #: cheating detection: respondents for 80% power to detect 5% cheaters (`n_to_detect_cheaters`)
    n_to_detect_cheaters: int | None = None
    #: a split ballot: arms' n, SE of the difference, detectable difference (`split_ballot_plan`)
    split_ballot: dict | None = None
    #: skip logic: the share of respondents expected to be asked, and whence ("given" or "uniform public answers")
    asked_share: float = 1.0
    asked_from: str | None = None
    #: the sample design's effect on the shares' and the mean's variance (`planned_design`; 1: a simple random sample)
    design_effect: float = 1.0
    mean_design_effect: float = 1.0

    @property
    def asked_n(self) -> int:
        """The respondents expected to answer it: the planned n times the share asked (at least 1)."""
        return max(1, round(self.n * self.asked_share))

    @property
    def shares_planned(self) -> bool:
        return self.se is not None

    @property
    def shares_usable(self) -> bool:
        return self.margin is not None and self.margin <= UNINFORMATIVE_MARGIN

    def to_frame(self):
        return _plans_frame([self])

    def _summary_lines(self) -> list[str]:
        return describe_plan(Plans([self])).splitlines()

    def __repr__(self) -> str:
        shares = "shares not planned" if self.se is None else f"margin ±{self.margin:.3f}"
        mean = "" if self.mean_margin is None else f", mean ±{self.mean_margin:.3g}"
        return f"<QuestionPlan {self.question_id} {self.design} ε={self.epsilon:.3g} n={self.n:,} {shares}{mean}>"


def _plans_frame(plans: list[QuestionPlan]):
    """One row per question: the figures `describe_plan` says (pandas imported here: planning itself loads none)."""
    import pandas as pd  # a frame asked for: `survey check` and the dashboard's plans stay without pandas

    columns = ["design", "epsilon", "n", "se", "margin", "n_for_margin", "mean_se", "mean_margin", "asked_share",
               "design_effect", "n_to_detect_cheaters"]
    frame = pd.DataFrame([[getattr(p, column) for column in columns] for p in plans], columns=columns,
                         index=pd.Index([p.question_id for p in plans], name="question"))
    if plans:
        frame.attrs.update(level=plans[0].level, target=plans[0].target)
    return frame


class Plans(Result, list):
    """The `QuestionPlan` of each question, in question order, and the ids of questions left unplanned by a time limit."""

    def __init__(self, plans=(), unplanned=(), design: PlannedDesign = SIMPLE):
        super().__init__(plans)
        self.unplanned = list(unplanned)
        #: The design effect every figure is planned with, and whence (`planned_design`).
        self.design = design

    @property
    def shares_unplanned(self) -> list[str]:
        """Questions planned without their shares one by one: a wide number's mean, its shares' bootstrap out of time."""
        return [p.question_id for p in self if not p.shares_planned]

    @property
    def complete(self) -> bool:
        return not self.unplanned and not self.shares_unplanned

    def to_frame(self):
        return _plans_frame(list(self))

    def _summary_lines(self) -> list[str]:
        return describe_plan(self).splitlines()

    def _summary_table(self):
        return None  # the lines are the table, as `deniable survey check` prints it

    def __repr__(self) -> str:
        n = f" n={self[0].n:,}" if self else ""
        unplanned = f", {len(self.unplanned)} left unplanned" if self.unplanned else ""
        return f"<Plans {len(self)} questions{n}{unplanned}>"


#: What `deniable survey check` spends on planning before it leaves the rest unplanned (and says so; the dashboard
#: plans within what its page may spend, `server.dashboard.PAGE_SECONDS`, and finishes the rest in the background):
#: checked inside bootstraps too, where a 0..1000 number's shares take minutes and a 0..100's about 2 s of CPU.
PLANNING_SECONDS = 1.0

#: A number with more values than this is planned in two parts: its mean in closed form (the inverse information at
#: the assumed answers: within the bootstrap's Monte Carlo error of the published mean's spread on such grids,
#: 0.95–1.21 of it over 0..24 to 0..100, ε 0.5–2, n 300–10,000, and conservative where it differs; a 0..1000 grid's
#: in 0.3 s), first, with every closed form; its shares one by one by bootstrap, in the time left (minutes for
#: 0..1000). Up to it, and for ordinal scales (where the closed form overstates the mean's spread 1.2–4.5×), the
#: bootstrap gives every figure, the mean's too.
CLOSED_FORM_MEAN_ABOVE = bootstrap.BATCH_ANSWERS


def plan(survey: Survey, n: int = 1000, level: float = 0.95, target: float = 0.05,
         time_limit: float | None = None, asked: dict | None = None, design: PlannedDesign | None = None) -> Plans:
    """Per private question: the standard error and margin of each share expected with ``n`` respondents,
    the n for a ±``target`` margin, the mean's precision for numbers and scales, and flags for designs
    whose per-answer estimates will be uninformative at that n. Skip logic asking a question of some
    respondents only makes its n smaller: the advice is for the respondents who see it.

    ``time_limit`` (seconds of this thread's CPU): questions whose channel is not worked out when it has passed (checked inside a
    bootstrap too) are listed in ``.unplanned`` instead. Channels worked out before are remembered in this
    process (the figures are deterministic), so a second call costs no bootstrap.

    ``asked``: question id → the share of respondents expected to be asked it, for questions skip logic
    asks of some only; without it, the share is worked out from the skip logic assuming every public
    answer equally likely (`asked_shares`). Precision is planned at n × that share, and the n for ±target
    is of all respondents.

    ``design``: the design effect to plan with (`planned_design`); without it, the spec's ``sample:`` as far as the
    spec alone tells (`planned_design` without a frame: a design it cannot size is said, not planned). Every figure's
    variance is a simple random sample's times its own design effect (`_under_design`), and the n for ±target deff
    times a simple random sample's."""
    if not isinstance(n, int) or n < 1:
        raise AnalysisError(f"n must be a whole number of respondents ≥ 1, got {n!r}")
    design = design if design is not None else planned_design(survey, n)
    shares = asked_shares(survey, asked)
    z = two_sided_z(level)
    plans = Plans(design=design)
    known = {}  # questions asked through the same channel (a battery of items at one ε) cost once
    start = time.thread_time()  # the plan's own CPU time (`deadline.py`)

    def key_of(question):
        reached = max(1, round(n * shares.get(question.id, (1.0, None))[0]))  # the respondents skip logic lets answer it
        return (_channel_identity(question), reached, target, level)

    def remaining():
        return None if time_limit is None else time_limit - (time.thread_time() - start)

    # Every closed form first (cheap), then the bootstraps; each pass the small channels first (the cost grows with
    # the answers): one wide grid that runs out the time leaves the rest planned, not the other way round.
    by_size = sorted(survey.private_questions, key=lambda q: key_of(q)[0][1])
    with blas.one_thread():
        for question in by_size:
            key = key_of(question)
            if key not in known:
                try:
                    known[key] = _remembered_precision(key, "closed form", question, remaining())
                except OutOfTime:
                    known[key] = None
        for question in by_size:
            key = key_of(question)
            if known[key] is not None and known[key][2] is None:  # a bootstrap channel whose shares are still to plan
                try:
                    bootstrapped = _remembered_precision(key, "bootstrap", question, remaining())
                except OutOfTime:
                    continue
                known[key] = _combined(known[key], bootstrapped)
    for question in survey.private_questions:
        share, source = shares.get(question.id, (1.0, None))
        key = key_of(question)
        reached = key[1]
        if known[key] is None or known[key] == _NOTHING_YET:
            plans.unplanned.append(question.id)
            continue
        worst, bootstrapped_se, needed, mean_se = known[key]
        # A split ballot's design sees only the randomized arm: the precision of its estimate is at that n.
        randomized = reached if question.split_ballot is None else max(
            1, reached - round(reached * float(question.split_ballot.direct)))
        if needed is not None:
            if question.split_ballot is not None:
                needed = int(math.ceil(needed / (1 - float(question.split_ballot.direct))))
            needed = int(math.ceil(needed / share))  # of all respondents: only this share of them answer it
        se = bootstrapped_se if worst is None else math.sqrt(worst / randomized)
        entry = QuestionPlan(question.id, question.mechanism.design, question.epsilon, n, level, se,
                             None if se is None else z * se, needed, target, asked_share=share, asked_from=source)
        if question.mechanism.design == "cheating_detection":
            entry.n_to_detect_cheaters = n_to_detect_cheaters(question)
            if question.split_ballot is not None:
                entry.n_to_detect_cheaters = int(math.ceil(entry.n_to_detect_cheaters / (1 - float(question.split_ballot.direct))))
        entry.split_ballot = split_ballot_plan(question, reached, level)
        values = scores(question)
        if mean_se is not None and values is not None:  # a mean's SE is planned for questions with scores only
            entry.mean_se = mean_se
            entry.mean_margin = z * entry.mean_se
            entry.scale = (float(values[0]), float(values[-1]))
        if design.effect != 1.0 or design.given:
            _under_design(entry, question, randomized, design)
        if entry.shares_planned and not entry.shares_usable:
            what = ("each value's share" if isinstance(question.mechanism, LaplaceMechanism)
                    else "each option's share" if question.type != "yes_no" else "the share")
            advice = ("only the mean is usable" if entry.mean_se is not None
                      else "raise ε, use fewer options, or plan for more respondents")
            asked_of = "" if share == 1 else f" (asked of {max(1, round(n * share)):,})"
            entry.flags.append(f"{what} will be uninformative at n = {n:,}{asked_of} ({_points(entry.margin)}); {advice}")
        plans.append(entry)
    return plans


def _under_design(entry: QuestionPlan, question, randomized: int, design: PlannedDesign) -> None:
    """``entry``, a simple random sample's plan, as the sample ``design`` will give it: each figure's variance times
    its design effect, whose clustering part is diluted by κ, the figure's direct-to-randomized variance ratio at the
    uniform answers the plan assumes (`PlannedDesign.for_figure`)."""
    if entry.se is not None and entry.margin is not None:
        answers = 2 if question.type in ("yes_no", "multi_select") else len(question.mechanism.answers)
        share = 1 / answers
        effect = design.for_figure(share * (1 - share) / (randomized * entry.se**2) if entry.se > 0 else 1.0)
        entry.design_effect = effect
        entry.se *= math.sqrt(effect)
        entry.margin *= math.sqrt(effect)
        if entry.n_for_margin is not None:
            entry.n_for_margin = int(math.ceil(entry.n_for_margin * effect - 1e-9))
    if entry.mean_se is not None and entry.mean_margin is not None:
        values = np.asarray(scores(question), dtype=float)
        direct = float(np.var(values))  # the scores' variance at uniform answers
        effect = design.for_figure(direct / (randomized * entry.mean_se**2) if entry.mean_se > 0 else 1.0)
        entry.mean_design_effect = effect
        entry.mean_se *= math.sqrt(effect)
        entry.mean_margin *= math.sqrt(effect)


#: Up to this many joint answers of the public questions a condition reads are enumerated; beyond, sampled.
ENUMERATED_ANSWERS = 4096
SAMPLED_ANSWERS = 4096


def asked_shares(survey: Survey, given: dict | None = None) -> dict:
    """Question id → (share of respondents expected to be asked it, whence: "given" or "uniform public
    answers"), for every private question skip logic asks of some only. ``given`` overrides the computed
    share per question; a share not in (0, 1], or a question that is not conditional, is refused."""
    given = dict(given or {})
    conditional = {q.id for q in survey.private_questions if survey.condition(q.id) is not None}
    for qid, share in given.items():
        if qid not in survey.questions:
            raise AnalysisError(f"asked: no question {qid!r} in this survey")
        if qid not in conditional:
            raise AnalysisError(f"asked: {qid!r} is asked of every respondent (no skip logic decides it)")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise AnalysisError(f"asked: the share asked {qid!r} must be a number in (0, 1], got {share!r}")
    computed = _uniform_shares(survey, sorted(conditional - set(given)))
    return {**{qid: (float(share), "given") for qid, share in given.items()},
            **{qid: (share, "uniform public answers") for qid, share in computed.items()}}


def _uniform_shares(survey: Survey, question_ids: list) -> dict:
    """The share of respondents shown each question when every public answer is equally likely (multi-select:
    each option ticked with probability ½), by `Survey.shown`: exactly where the joint answers of the questions
    the conditions read are few, else over a seeded sample of them."""
    if not question_ids:
        return {}
    read: list = []
    for qid in question_ids:
        read += [r for r in skiplogic.references(survey.condition(qid)) if r not in read]
    pending = list(read)
    while pending:  # a question read by a condition may itself be shown only sometimes
        wanted = pending.pop()
        condition = survey.condition(wanted) if any(i.id == wanted for i in survey.items) else None
        for r in [] if condition is None else skiplogic.references(condition):
            if r not in read:
                read.append(r)
                pending.append(r)
    read = [r for r in read if r in survey.questions]
    questions = [survey.questions[r] for r in read]
    sizes = [2 ** len(q.options) if q.type == "multi_select" else len(q.mechanism.answers) for q in questions]
    if math.prod(sizes) <= ENUMERATED_ANSWERS:
        combinations = list(itertools.product(*map(_possible_answers, questions)))
    else:
        rng = np.random.default_rng(20261124)
        combinations = [tuple(_drawn_answer(q, rng) for q in questions) for _ in range(SAMPLED_ANSWERS)]
    shown: collections.Counter = collections.Counter()
    for combination in combinations:
        shown.update(set(survey.shown(dict(zip(read, combination)))) & set(question_ids))
    return {qid: shown[qid] / len(combinations) for qid in question_ids}


def _possible_answers(question: Question) -> list:
    if question.type == "multi_select":
        options = question.options
        return [list(subset) for size in range(len(options) + 1) for subset in itertools.combinations(options, size)]
    return list(question.mechanism.answers)


def _drawn_answer(question: Question, rng):
    if question.type == "multi_select":
        return [option for option in question.options if rng.random() < 0.5]
    answers = question.mechanism.answers
    return answers[rng.integers(len(answers))]


#: A channel's planning figures by `_channel_identity`, n, target and level: deterministic (seeded bootstraps), so a
#: second dashboard view or `survey check` reuses them; the 512 latest are kept.
_PRECISION: collections.OrderedDict = collections.OrderedDict()
_PRECISION_KEPT = 512


def _remembered_precision(key: tuple, stage: str, question: Question, seconds: float | None):
    """`_closed_form` or `_bootstrapped` (``stage``) of ``key`` (identity, n, target, level), remembered, or worked out
    within ``seconds``."""
    remembered = (key, stage)
    if remembered in _PRECISION:
        _PRECISION.move_to_end(remembered)
        return _PRECISION[remembered]
    if seconds is not None and seconds <= 0:
        raise OutOfTime("out of time")
    with time_limit(seconds):
        figures = (_closed_form if stage == "closed form" else _bootstrapped)(question, *key[1:])
    _PRECISION[remembered] = figures
    if len(_PRECISION) > _PRECISION_KEPT:  # one added at a time: the oldest goes
        _PRECISION.popitem(last=False)
    return figures


#: What a channel's figures are before anything is known of them: (worst unit variance, the worst share's
#: bootstrapped SE at n, n for ±target, the mean's SE at n), each None.
_NOTHING_YET = (None, None, None, None)


def _closed_form(question: Question, n: int, target: float, level: float) -> tuple:
    """A channel's figures in closed form: all of them where the published estimate's shares are asymptotically
    normal (the inverse information over n: `unit_variance`), a wide number's mean (`CLOSED_FORM_MEAN_ABOVE`), else
    `_NOTHING_YET`. The figures `plan` reports are the published estimate's precision."""
    if not bootstrap.needs_bootstrap(question.mechanism):
        mean_variance = mean_unit_variance(question)
        worst = float(np.max(unit_variance(question)))
        return worst, None, n_for(worst, target, level), None if mean_variance is None else math.sqrt(mean_variance / n)
    closed_mean = mean_unit_variance(question) if _mean_in_closed_form(question) else None
    if closed_mean is not None:
        return None, None, None, math.sqrt(closed_mean / n)
    return _NOTHING_YET


def _bootstrapped(question: Question, n: int, target: float, level: float) -> tuple:
    """A bootstrap channel's figures (`bootstrap.needs_bootstrap`): the worst share's SE at n and the n for ±target by
    parametric bootstrap, and the mean's SE from the same surveys (None where it has a closed form)."""
    values = scores(question)
    bootstrapped = published_spread(question, n)
    assert bootstrapped is not None  # a bootstrap channel's
    se = float(np.sqrt(np.max(bootstrapped.variances())))
    mean_se = None if values is None or _mean_in_closed_form(question) else math.sqrt(
        max(bootstrapped.variance(values), 0.0))
    return None, se, sample_size(question, target, level), mean_se


def _mean_in_closed_form(question: Question) -> bool:
    """A bootstrap channel whose mean is planned in closed form: a number wider than `CLOSED_FORM_MEAN_ABOVE`."""
    return isinstance(question.mechanism, LaplaceMechanism) and len(question.mechanism.answers) > CLOSED_FORM_MEAN_ABOVE


def _combined(closed: tuple, bootstrapped: tuple) -> tuple:
    """Each figure from whichever stage gave it."""
    return tuple(b if c is None else c for c, b in zip(closed, bootstrapped))


def _channel_identity(question: Question):
    """What a question's planning numbers depend on: the channel's shape and numbers, and (for a mean)
    the values the answers stand for. Labels do not matter."""
    mechanism = question.mechanism
    key = mechanism._channel_key()
    if isinstance(key, list):
        key = tuple(map(tuple, key))
    size = len(mechanism.options) if isinstance(mechanism, UnaryMechanism) else len(mechanism.answers)
    values = scores(question)
    return (type(mechanism), size, key, None if values is None else values.tobytes())


def _points(margin: float | None) -> str:
    """A share's margin in percentage points ("±6.2 points"), or that it spans every possible share (None: not planned)."""
    if margin is None:
        return "not planned"
    return f"±{margin * 100:.1f} points" if margin < 1 else "wider than 0–100%"


def _not_planned(unplanned: list, what: str = "Not planned") -> str:
    return (f"{what} within the time limit: {', '.join(unplanned)} (deniable survey check --plan-seconds 600 "
            "plans them, or deniable.analysis.plan in Python)")


def describe_plan(plans: list[QuestionPlan]) -> str:
    """`plan` as the lines `deniable survey check` prints."""
    unplanned = getattr(plans, "unplanned", [])
    if not plans:
        return "No private questions: nothing to plan." if not unplanned else _not_planned(unplanned)
    first = plans[0]
    lines = [f"Planning at n = {first.n:,} respondents ({first.level:.0%} intervals, uniform true answers assumed):"]
    design = getattr(plans, "design", SIMPLE)
    if design is not SIMPLE:
        lines.append(f"  Sample design: {design.words}")
    for p in plans:
        line = (f"  {p.question_id:<20} SE {p.se:.3f}, {_points(p.margin)} per share; "
                f"n for ±{p.target * 100:g} points: {p.n_for_margin:,}" if p.shares_planned else
                f"  {p.question_id:<20} each value's share not planned in time")
        if p.asked_share < 1:
            whence = "as given" if p.asked_from == "given" else "if every public answer is equally likely; --asked"
            line += f"; asked of {p.asked_share:.0%} ({p.asked_n:,} of {p.n:,}, {whence})"
        if p.mean_se is not None and p.scale is not None:
            low, high = p.scale
            line += f"; mean ±{p.mean_margin:.3g} on {low:g}–{high:g}"
        if p.design_effect != 1 or p.mean_design_effect != 1:
            line += f"; design effect {p.design_effect:.2f}" + (
                f" (mean {p.mean_design_effect:.2f})" if p.mean_se is not None and p.mean_design_effect != p.design_effect
                else "")
        if p.n_to_detect_cheaters is not None:
            line += f"; n to detect {CHEATER_SHARE:.0%} cheaters (80% power): {p.n_to_detect_cheaters:,}"
        lines.append(line)
        if p.split_ballot is not None:
            s = p.split_ballot
            lines.append(f"    split ballot: {s['direct_n']:,} asked directly, {s['randomized_n']:,} through the design; "
                         f"SE of the difference {s['difference_se']:.3f}, so a design {_points(s['detectable'])[1:]} "
                         f"above direct answers is detected with 80% power (one-sided 5%)")
        lines += [f"    FLAG: {flag}" for flag in p.flags]
    shares_unplanned = [p.question_id for p in plans if not p.shares_planned]
    if shares_unplanned:
        lines.append(f"  {_not_planned(shares_unplanned, 'Shares value by value not planned')}")
    if unplanned:
        lines.append(f"  {_not_planned(unplanned)}")
    return "\n".join(lines)
