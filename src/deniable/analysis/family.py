"""What every result a user gets shares, as statsmodels' results do: ``to_frame()`` (pandas, with what the figures
are in ``attrs``), ``summary()`` (words to print, HTML for a notebook, CSV), a one-line ``repr``, the HTML a notebook
shows, and ``plot()`` where a picture helps. Every interval is at ``level`` (0.95 for a 95% interval), the one name
the package gives it."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the frames are built by the results; planning (`survey check`) never loads pandas
    import pandas as pd


class Summary(str):
    """A result in words: the text itself (print it, search it), and the same as HTML (``as_html()``, what a notebook
    shows) and its table as CSV (``as_csv()``)."""

    lines: list[str]
    table: pd.DataFrame | None

    def __new__(cls, lines: list[str], table: "pd.DataFrame | None" = None) -> Summary:
        shown = [] if table is None else ["", table.to_string(float_format=_four_places)]
        text = super().__new__(cls, "\n".join([*lines, *shown]))
        text.lines, text.table = list(lines), table
        return text

    def as_text(self) -> str:
        return str.__str__(self)

    def as_html(self) -> str:
        words = "".join(f"<p>{html.escape(line)}</p>" for line in self.lines)
        table = "" if self.table is None else self.table.to_html(float_format=_four_places)
        return f"<div class='deniable-result'>{words}{table}</div>"

    def as_csv(self) -> str:
        return "" if self.table is None else self.table.to_csv()

    def _repr_html_(self) -> str:
        return self.as_html()

    def __repr__(self) -> str:
        return self.as_text()  # at a prompt, the summary reads as printed


def _four_places(value: float) -> str:
    return f"{value:.4f}"


class Result:
    """The family's shared part. A member gives ``to_frame()``, the words of its summary (``_summary_lines``) and its
    one-line ``__repr__``; its summary's table is its frame unless it says otherwise (``_summary_table``)."""

    def to_frame(self) -> pd.DataFrame:
        raise NotImplementedError

    def _summary_lines(self) -> list[str]:
        raise NotImplementedError

    def _summary_table(self) -> pd.DataFrame | None:
        return self.to_frame()

    def summary(self) -> Summary:
        return Summary(self._summary_lines(), self._summary_table())

    def _repr_html_(self) -> str:
        return self.summary().as_html()


class TestResult(Result):
    """A test's result: ``describe()`` is its one-line account, and its summary that line."""

    def describe(self) -> str:
        raise NotImplementedError

    def _summary_lines(self) -> list[str]:
        described = self.describe()
        return [described[0].upper() + described[1:]]


def interval_plot(ax, labels: list[str], estimates, lows, highs, xlabel: str, title: str, bounds=None):
    """Estimates as points with their intervals as bars, one row per label (matplotlib, imported only here). Returns
    the axes; ``bounds``: the x range a figure can take (a share's [0, 1])."""
    try:
        import matplotlib.pyplot as plt  # 0.4 s, for a plot only
    except ImportError:  # pragma: no cover
        raise ImportError("plot() needs matplotlib: pip install matplotlib") from None
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(labels)))
    values = np.asarray(estimates, dtype=float)
    positions = np.arange(len(values))
    errors = np.vstack([values - np.asarray(lows, dtype=float), np.asarray(highs, dtype=float) - values])
    ax.errorbar(values, positions, xerr=errors, fmt="o", capsize=4)
    ax.set_yticks(positions, [str(label) for label in labels])
    ax.invert_yaxis()
    if bounds is not None:
        low, high = bounds
        margin = 0.02 * (high - low)
        ax.set_xlim(low - margin, high + margin)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.figure.tight_layout()  # long labels stay inside the figure
    return ax
