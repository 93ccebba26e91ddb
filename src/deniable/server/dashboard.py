"""The dashboard's view-model, without Flask: the figures and chart geometry of a survey's estimates page, built from a
loaded survey (`deniable.analysis.load`) and read by the templates. `admin` routes the page and renders it; what is
drawn, and the numbers drawn, are decided here and unit-tested as data."""

from __future__ import annotations

import collections
import threading

from deniable.analysis import deadline
from deniable.analysis.deadline import OutOfTime
from deniable.analysis.errors import AnalysisError
from deniable.analysis.every_question import NoEstimate, each_estimate
from deniable.analysis.groups import default_answer
from deniable.analysis.plans import UNINFORMATIVE_MARGIN
from deniable.analysis.ranges import NAMES
from deniable.analysis.splitballot import ASSUMPTION
from deniable.client.errors import DeniableError
from deniable.client.laplace import LaplaceMechanism


class Charts(list):
    """The charts of an estimates page in question order, and the ids of the questions whose estimate was not worked
    out within the page's time (``pending``: their charts say so)."""

    def __init__(self, charts=(), pending=()):
        super().__init__(charts)
        self.pending = list(pending)


#: CPU seconds one view of the estimates page spends on estimates and plans not worked out before, and of them on the
#: estimates: the rest are left to the background (`server.background`) and the page says so. A number on a 0..1000
#: grid takes about 2 s to estimate the first time, minutes to plan.
PAGE_SECONDS, ESTIMATE_SECONDS = 1.0, 0.6
#: Charts remembered in this process, by what their estimate is a function of (`LoadedSurvey.fingerprint`): the next
#: view of the page, and the page after a response that does not answer a question, reuse them.
CHARTS_KEPT = 512
_charts: collections.OrderedDict = collections.OrderedDict()
_charts_lock = threading.Lock()


def estimate_charts(data, design, time_limit: float | None = None) -> Charts:
    """One chart per question of a loaded survey, in the spec's order: its estimate's bars and whiskers, mean, fit,
    notes, split ballot and waves, or why it has none (``error``), estimated under the sample ``design``.

    A chart is remembered by its estimate's fingerprint, so a second view computes nothing. With a ``time_limit``
    (seconds of this thread's CPU, checked inside the estimates too) the questions not reached in time have a
    chart with ``pending`` set, and are listed in the result's ``pending``."""
    charts = Charts()
    with deadline.time_limit(time_limit):
        for qid in data.survey.questions:
            key = _fingerprint(data, qid, design)
            with _charts_lock:
                chart = _charts.get(key) if key is not None else None
                if chart is not None:
                    _charts.move_to_end(key)
            if chart is None:
                try:
                    chart = _chart(data, qid, design)
                except OutOfTime:
                    charts.pending.append(qid)
                    chart = {**_empty_chart(data, qid), "population": data.population(qid), "pending": True}
                    charts.append(chart)
                    continue
                if key is not None:
                    with _charts_lock:
                        _charts[key] = chart
                        while len(_charts) > CHARTS_KEPT:
                            _charts.popitem(last=False)
            charts.append(chart)
    return charts


def _fingerprint(data, qid, design):
    try:
        return data.fingerprint(qid, design)
    except DeniableError:  # pooled versions that randomize it differently: its chart says why, at no cost
        return None


def _empty_chart(data, qid) -> dict:
    """A question's chart before its estimate: what the page shows of any question."""
    question = data.survey.questions[qid]
    return {"id": qid, "text": question.text, "design": question.mechanism.design, "epsilon": question.epsilon,
            "rows": [], "mean": None, "error": None, "versions": None}


def _chart(data, qid, design) -> dict:
    ((_, result),) = each_estimate(data, [qid], design)
    question = data.survey.questions[qid]
    chart = _empty_chart(data, qid)
    if isinstance(result, NoEstimate) and result.pooled:
        chart.update(population=None, error=f"Not pooled: {result}")
        return chart
    chart["population"] = data.population(qid)
    chart["versions"] = [v.label for v in data.versions_for(qid)]
    if isinstance(result, NoEstimate):
        chart["error"] = "no responses yet" if data.n == 0 else str(result)
        return chart
    chart.update(n=result.n, method=result.method, simultaneous=result.simultaneous, notes=result.notes,
                 certified=result.converged, certificate=result.certificate,
                 design_effect=result.design_effect)  # realised, shown beside the plan's
    described = result.fit.describe()
    chart["fit"] = {"flagged": result.fit.flagged,
                    "text": described.removeprefix("FIT FAILED: ") if result.fit.flagged
                    else described[0].upper() + described[1:]}
    chart["notes"] = [note for note in result.notes if note != described]  # said once, above
    if result.mean is not None:
        chart["mean"] = result.mean
    if result.quantiles is not None:  # a wide number: its bins as a histogram, the mean and quartiles marked
        chart.update(histogram=histogram(result), rows=bars(result.table), quantiles=quantile_rows(result.quantiles))
    elif isinstance(question.mechanism, LaplaceMechanism) and len(result.table) > PER_VALUE_BARS:
        chart["curve"] = distribution(result.table)
    else:
        chart["rows"] = bars(result.table, question)
    widest = float(((result.table["ci_high"] - result.table["ci_low"]) / 2).max())
    if result.quantiles is None and isinstance(question.mechanism, LaplaceMechanism) and widest > UNINFORMATIVE_MARGIN:
        # Per-value bars would be noise (`survey check` says so before fielding): lead with the mean and
        # ranges of values, the per-value bars one click away.
        chart.update(bins=bars(result.binned()), widest=widest)
    if result.split_ballot is not None:
        chart["split_ballot"] = {"rows": result.split_ballot.reset_index().to_dict("records"),
                                 "assumption": ASSUMPTION}
    if data.repeated and data.waves:
        chart["waves"] = wave_rows(data, qid)
    return chart


def asked_shares(data, charts) -> dict:
    """The share of respondents each question skip logic asks of some only was asked so far (for planning it at
    that share)."""
    observed = {}
    for chart in charts:
        qid = chart["id"]
        if chart["population"] and data.survey.questions[qid].is_private:
            respondents = sum(v.n for v in data.versions_for(qid))  # of the versions that ask it
            reached = float(data.question_counts(qid).sum()) / respondents if respondents else 0.0
            if 0 < reached <= 1:
                observed[qid] = reached
    return observed


#: Chart geometry (SVG user units): each row is its label line above a bar spanning the plot's width,
#: so a phone's narrow screen shrinks the bars, not the text.
PLOT_LEFT, PLOT_WIDTH, ROW_HEIGHT = 6, 328, 44


#: Beyond this many values a number's per-value figures are drawn as one curve in its band, not a bar each: 1,001 bars
#: made a 619 KB page (23 KB as a curve), 10,001 would make 6 MB, and every chart is kept in `_charts`. Each value's
#: figures are in the page's CSV. The curve has at most `CURVE_COLUMNS` columns, each the envelope of its values.
PER_VALUE_BARS = 101
CURVE_COLUMNS, CURVE_HEIGHT = 328, 120


def distribution(table) -> dict:
    """A number's estimated distribution over its values as SVG paths in the bar charts' width: the estimate's line and
    its intervals' band, each column of the plot the envelope of the values it covers (the largest estimate and upper
    end, the smallest lower end), on a share axis up to the largest upper end."""
    estimates, lows, highs = (table[column].astype(float).tolist() for column in ("estimate", "ci_low", "ci_high"))
    count = len(estimates)
    columns = min(CURVE_COLUMNS, count)
    top = max(max(highs), 1e-12)
    base, extra = divmod(count, columns)  # the first ``extra`` columns take one value more (as numpy's array_split)
    bounds = [column * base + min(column, extra) for column in range(columns + 1)]

    def point(column: int, share: float) -> str:
        x = PLOT_LEFT + PLOT_WIDTH * (column + 0.5) / columns
        return f"{x:.1f},{CURVE_HEIGHT * (1 - min(max(share, 0.0), top) / top):.1f}"

    line, upper, lower = [], [], []
    for column in range(columns):
        start, stop = bounds[column], bounds[column + 1]
        line.append(point(column, max(estimates[start:stop])))
        upper.append(point(column, max(highs[start:stop])))
        lower.append(point(column, min(lows[start:stop])))
    values = list(table.index)
    return {"line": "M" + " L".join(line), "band": "M" + " L".join(upper + lower[::-1]) + " Z", "top": top,
            "height": CURVE_HEIGHT, "count": count, "first": str(values[0]), "last": str(values[-1])}


#: The histogram's plot height (SVG user units), in the bar charts' width.
HISTOGRAM_HEIGHT = 150


def histogram(result) -> dict:
    """A wide number's bins drawn on its value axis: each bin as wide as its values (the last value's step included),
    as tall as its share per unit of value (bins of unequal width compare as densities), with its interval as a
    whisker; the mean (solid) and the median (dashed) marked on the axis, the quartiles as a band under it. The height
    runs to the tallest interval's top."""
    mechanism = result.mechanism
    values = [float(v) for v in mechanism.answers]
    step = float(mechanism.step)
    low, high = values[0], values[-1] + step
    top = 1e-300
    spans = []
    for label, row in result.table.iterrows():
        members = result.bin_members[label]
        start, stop = values[members[0]], values[members[-1]] + step
        spans.append((label, row, start, stop))
        top = max(top, float(row["ci_high"]) / (stop - start))

    def x(value: float) -> float:
        return PLOT_LEFT + PLOT_WIDTH * (value - low) / (high - low)

    def y(density: float) -> float:
        return HISTOGRAM_HEIGHT * (1 - min(density, top) / top)

    bars_drawn = []
    for label, row, start, stop in spans:
        width = stop - start
        bars_drawn.append({"label": str(label), "x": x(start), "width": max(x(stop) - x(start) - 1, 0.5),
                           "middle": (x(start) + x(stop)) / 2, "y": y(row["estimate"] / width),
                           "height": HISTOGRAM_HEIGHT - y(row["estimate"] / width),
                           "y_low": y(row["ci_low"] / width), "y_high": y(row["ci_high"] / width),
                           "estimate": float(row["estimate"]), "low": float(row["ci_low"]),
                           "high": float(row["ci_high"])})
    quantiles = result.quantiles
    median, lower, upper = (float(quantiles.at[p, "estimate"]) for p in (0.5, 0.25, 0.75))
    return {"bars": bars_drawn, "height": HISTOGRAM_HEIGHT, "first": f"{values[0]:g}", "last": f"{values[-1]:g}",
            "mean": x(result.mean.estimate + step / 2), "median": x(median + step / 2),
            "quartiles": (x(lower + step / 2), x(upper + step / 2))}


def quantile_rows(quantiles) -> list[dict]:
    """The median and quartiles as the page lists them."""
    return [{"label": NAMES.get(p, f"{p:.0%} quantile").capitalize(), "estimate": float(row["estimate"]),
             "low": float(row["ci_low"]), "high": float(row["ci_high"])} for p, row in quantiles.iterrows()]


def wave_rows(data, question_id: str) -> dict:
    """One question wave by wave (the share of "yes", of the first answer, or the mean) and the change
    between the last two waves: the figures `LoadedSurvey.by_wave` and `compare_waves` give."""
    try:
        results = data.by_wave(question_id)
    except AnalysisError as error:
        return {"error": str(error)}
    if not results:  # its reports came from versions asked before the survey was repeated
        return {"error": "no reports in any wave"}
    answer = default_answer(next(iter(results.values())))  # what compare_waves compares below
    rows = []
    for wave, result in results.items():
        if answer == "mean":
            estimate, low, high = result.mean.estimate, result.mean.ci.low, result.mean.ci.high
        else:
            row = result.table.loc[answer]
            estimate, low, high = row["estimate"], row["ci_low"], row["ci_high"]
        rows.append({"wave": wave, "n": result.n, "estimate": float(estimate), "low": float(low), "high": float(high)})
    change = None
    if len(results) >= 2:
        before, after = list(results)[-2:]
        compared = data.compare_waves(question_id, before, after, answer)
        change = {"from": before, "to": after, "difference": compared.difference, "low": compared.ci.low,
                  "high": compared.ci.high, "p": compared.pvalue, "note": compared.note}
    return {"answer": answer, "rows": rows, "change": change}


#: The responses-per-day chart: one bar per day with responses (daily counts only: no time is kept).
DAY_BAR, DAY_HEIGHT, DAY_MIN_BARS = 12, 80, 30


def group_choices(survey) -> list[str]:
    """What the estimates can be grouped by: the public questions (whose reports are the true answers), then the
    columns of the sampling frame the invitations carry (`LoadedSurvey.is_column`)."""
    public = [qid for qid, question in survey.questions.items() if not question.is_private]
    return public + [column for column in survey.sample.get("frame", []) if column not in public]


def day_bars(days: list[tuple[str, int]]) -> dict | None:
    if not days:
        return None
    most = max(n for _, n in days)
    bars = [{"day": day, "n": n, "x": i * DAY_BAR, "height": max(1.0, DAY_HEIGHT * n / most)} for i, (day, n) in enumerate(days)]
    # At least a month wide, and drawn at a fixed height: one day alone was one bar 5,000 px tall on a wide screen
    # (the viewBox 14 wide, scaled to the page's width).
    return {"bars": bars, "width": max(len(days), DAY_MIN_BARS) * DAY_BAR, "most": most, "height": DAY_HEIGHT}


def bars(table, question=None) -> list[dict]:
    """One bar per row, labelled as respondents read the answer (an option's label, not its stable code)."""
    def label(answer) -> str:
        if isinstance(answer, (list, tuple)):
            return ", ".join(label(a) for a in answer)
        if question is not None and question.options and answer in question.options:
            return question.option_label(answer)
        return str(answer)

    rows = []
    for position, (answer, row) in enumerate(table.dropna(subset=["estimate"]).iterrows()):
        clamp = lambda v: min(max(float(v), 0.0), 1.0)  # noqa: E731 - the axis is [0, 1]
        rows.append({
            "label": label(answer),
            "y": position * ROW_HEIGHT, "estimate": float(row["estimate"]),
            "unbiased": float(row["unbiased"]) if "unbiased" in row else None,
            "low": float(row["ci_low"]), "high": float(row["ci_high"]),
            "bar": PLOT_WIDTH * clamp(row["estimate"]),
            "x_low": PLOT_LEFT + PLOT_WIDTH * clamp(row["ci_low"]),
            "x_high": PLOT_LEFT + PLOT_WIDTH * clamp(row["ci_high"]),
        })
    return rows
