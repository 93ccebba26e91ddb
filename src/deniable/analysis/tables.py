"""Every question's estimates as one long table: what `deniable estimate --format csv|json` prints and
what the dashboard offers for download, so the two show the same numbers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable

import pandas as pd

from deniable.client.csv_cells import CsvLines
from deniable.client.reports import WAVES

from . import ranges
from .every_question import NoEstimate, each_question, estimate_with_design
from .family import Result, interval_plot
from .groups import subgroup_frame, subgroups
from .survey_data import SurveyData, nothing_to_estimate
from .waves import compare_waves


@dataclass
class EstimateTable(Result):
    """``frame``: one row per question and answer (per group with ``by``); ``texts``: each question's
    summary as text; ``refused``: why a question could not be pooled (the others still are); ``empty``: the questions
    with nothing to estimate yet, each with why (`survey_data.nothing_to_estimate`)."""

    frame: pd.DataFrame
    texts: list = field(default_factory=list)
    refused: list = field(default_factory=list)
    empty: list = field(default_factory=list)
    level: float = 0.95

    def to_frame(self) -> pd.DataFrame:
        frame = self.frame.copy()
        frame.attrs.update(level=self.level, refused=list(self.refused), empty=list(self.empty))
        return frame

    def _summary_lines(self) -> list[str]:
        questions = self.frame["question"].nunique() if "question" in self.frame else 0
        lines = [f"Estimates of {questions} question{'s' if questions != 1 else ''} ({self.level:.0%} intervals), "
                 f"{len(self.frame)} rows"]
        lines += [f"Not pooled: {reason}" for reason in self.refused]
        return lines + [f"Nothing to estimate yet: {reason}" for reason in self.empty]

    def _summary_table(self) -> pd.DataFrame | None:
        shown = [column for column in ("question", "group", "wave", "answer", "estimate", "se", "ci_low", "ci_high", "n")
                 if column in self.frame]
        return self.frame[shown]

    def __repr__(self) -> str:
        questions = self.frame["question"].nunique() if "question" in self.frame else 0
        return f"<EstimateTable {questions} questions, {len(self.frame)} rows, {self.level:.0%}>"

    def plot(self, ax=None):
        """Every row's estimate with its interval, labelled question: answer (matplotlib). Returns the axes."""
        labels = [": ".join(str(row[column]) for column in ("question", "group", "wave", "answer") if column in self.frame)
                  for _, row in self.frame.iterrows()]
        return interval_plot(ax, labels, self.frame["estimate"], self.frame["ci_low"], self.frame["ci_high"],
                             f"estimate ({self.level:.0%} intervals)", "estimates")

    def records(self) -> list[dict]:
        """Rows as JSON-ready dicts (NaN → None; list-valued answers as JSON text)."""
        table = self.frame.astype(object).where(self.frame.notna(), None)
        return table.to_dict(orient="records")

    def to_json(self) -> str:
        # json.dumps writes floats that round-trip exactly
        return json.dumps(self.records(), ensure_ascii=False, indent=1, default=lambda value: value.item())

    def to_csv(self) -> str:
        """The table as CSV; a cell a spreadsheet would run as a formula is kept as text (an apostrophe first)."""
        table = self.frame.astype(object).where(self.frame.notna(), None)
        lines = CsvLines()
        return "".join([lines.line(table.columns), *(lines.line([_csv_cell(cell) for cell in row])
                                                     for row in table.itertuples(index=False))])


def _csv_cell(cell):
    """What pandas' to_csv wrote for a cell: floats as repr (round-trip exact), None as empty."""
    if cell is None:
        return ""
    if isinstance(cell, float):
        return repr(cell)
    if isinstance(cell, (list, dict, tuple)):
        return str(cell)
    return cell


def _wave_change(data: SurveyData, question_id: str, level: float, waves: list, design=None) -> str:
    """The change between the last two of ``waves`` (those with something to estimate), in words
    (`waves.compare_waves`)."""
    before, after = waves[-2:]
    change = compare_waves(data, question_id, before, after, level=level, design=design)
    what = "mean" if change.answer == "mean" else f"share of {change.answer!r}"
    return (f"change {before} → {after} in the {what}: {change.difference:+.4f} (SE {change.se:.4f}), {level:.0%} CI "
            f"[{change.ci.low:.4f}, {change.ci.high:.4f}], p = {change.pvalue:.4g}; {change.note}")


def estimate_table(data: SurveyData, questions=None, by: str | None = None, level: float = 0.95,
                   simultaneous: bool = False, language: str | None = None, design=None,
                   values: bool = False) -> EstimateTable:
    """Estimates of ``questions`` (default: all with reports) as one long table. Unless asked for by name (when
    the error is raised), a question is left out, with the reason, where pooled data changed its randomization
    between versions (``refused``) or it has nothing to estimate from yet (``empty``: an optional question nobody
    answered, a split ballot's randomized arm early in fieldwork): the others are still estimated. ``design``: a
    `SampleDesign` for every estimate (groups of ``by``, waves too, as domains). A wide number's rows are its bins,
    with its median and quartiles in columns beside the mean's; ``values``: a row per value instead."""
    wanted: Iterable[tuple[str, NoEstimate | None]]
    if questions:  # asked for by name: estimated, or the error raised
        wanted = ((qid, None) for qid in questions)
    else:
        wanted = ((qid, missing) for qid, missing in each_question(data) if qid != by)
    frames: list = []
    texts: list = []
    refused: list = []
    empty: list = []
    for qid, missing in wanted:
        if missing is not None:
            if missing.pooled:
                refused.append(missing.reason)
            else:
                empty.append(f"{qid}: {missing.reason}")
            continue
        if by:
            what = "wave" if by == WAVES else by
            results = subgroups(data, qid, by, level, simultaneous=simultaneous, design=design)
            empty += [f"{qid} among {what} = {value}: {nothing_to_estimate(data, qid, by, value)}"
                      for value in data.levels(by) if value not in results]
            if not results:
                continue
            frame = subgroup_frame(results).reset_index()
            if by == WAVES:
                frame = frame.rename(columns={"group": "wave"})
            text = f"== {qid} by {what} ({level:.0%} intervals)\n{frame.to_string(index=False, float_format=_fmt)}"
            if by == WAVES and len(results) >= 2:
                text += "\n" + _wave_change(data, qid, level, list(results), design)
            if data.is_column(by):
                text += f"\nNote: {next(iter(results.values())).notes[-1]}"
            texts.append(text)
        else:
            options = {"values": True} if values and data.question(qid).type == "number" else {}
            result = estimate_with_design(data, qid, design, level=level, simultaneous=simultaneous, language=language,
                                          **options)
            frame = result.to_frame().reset_index().rename(columns={result.table.index.name: "answer"})
            texts.append(result.summary().as_text())
            if result.mean is not None:
                mean = result.mean
                frame["mean"], frame["mean_se"] = mean.estimate, mean.se
                frame["mean_ci_low"], frame["mean_ci_high"] = mean.ci.low, mean.ci.high
                frame["mean_unbiased"] = mean.unbiased
            if result.quantiles is not None:
                for p, name in QUANTILE_COLUMNS.items():
                    row = result.quantiles.loc[p]
                    frame[name], frame[f"{name}_ci_low"], frame[f"{name}_ci_high"] = row["estimate"], row["ci_low"], \
                        row["ci_high"]
            if result.split_ballot is not None:  # on the "yes" row: the direct arm and the difference
                split = result.split_ballot
                on_yes = frame["answer"] == "yes"
                for column, (arm, field_) in SPLIT_COLUMNS.items():
                    frame.loc[on_yes, column] = split.at[arm, field_]
            frame["fit_p"] = None if result.fit is None else result.fit.pvalue  # goodness of fit against any honestly randomized population
            frame["converged"] = result.converged
            frame["population"] = result.population
            frame.insert(1, "n", result.n)
            frame.insert(2, "method", result.method)
        frame.insert(0, "question", qid)
        frame["versions"] = ";".join(v.label for v in data.versions_for(qid))
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["question"])
    for column in ("answer", "group"):
        if column in table:
            table[column] = table[column].map(lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v)
    return EstimateTable(table, texts, refused, empty, level)


#: A wide number's quantiles in the long table: columns median, median_ci_low, median_ci_high, and the quartiles'.
QUANTILE_COLUMNS = {p: ranges.NAMES[p].replace(" ", "_") for p in (0.5, 0.25, 0.75)}
#: The split-ballot figures the long table carries on a split-ballot question's "yes" row.
SPLIT_COLUMNS = {"direct": ("direct", "estimate"), "direct_se": ("direct", "se"), "direct_ci_low": ("direct", "ci_low"),
                 "direct_ci_high": ("direct", "ci_high"), "direct_n": ("direct", "n"),
                 "difference": ("difference", "estimate"), "difference_se": ("difference", "se"),
                 "difference_ci_low": ("difference", "ci_low"), "difference_ci_high": ("difference", "ci_high"),
                 "difference_p_value": ("difference", "p_value")}


def _fmt(x: float) -> str:
    return f"{x:.4f}"
