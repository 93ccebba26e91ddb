"""Were the public markers drawn as the design draws them? A split ballot's arm and a cheating-detection or
lie-detector group are drawn on the device with known probabilities (a quarter direct; each group alike). A
respondent who reloads the page until shown the arm or group they like shifts those shares, and with them the
estimates (simulated: 6,000 honest respondents who reload an unwanted arm or group made the split ballot claim, at
p = 4e-45, that the design elicits more honesty, and cheating detection report 28% cheaters where there were none;
an arm share of 0.184 for 0.25, p = 1e-33, was never flagged). The counts of each marker are tested against the
design's probabilities on every estimate; a p-value below `fit.FLAG_P` leads the result's notes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import distributions
from .family import TestResult
from .fit import FLAG_P


@dataclass(frozen=True)
class AssignmentTest(TestResult):
    """The markers' counts against the design's probabilities: an exact binomial test for two, else Pearson's χ²."""

    what: str  # "arm" or "group"
    counts: dict
    expected: dict  # probabilities
    pvalue: float
    #: A panel's waves, each tested on its own (`over_waves`); 1: one test of every count.
    waves: int = 1

    @property
    def flagged(self) -> bool:
        return self.pvalue < FLAG_P

    def to_frame(self):
        import pandas as pd  # a frame asked for

        total = sum(self.counts.values())
        frame = pd.DataFrame([[count, count / total if total else math.nan, self.expected[name]]
                              for name, count in self.counts.items()], columns=["count", "share", "design_share"],
                             index=pd.Index(list(self.counts), name=self.what))
        frame.attrs.update(p_value=self.pvalue, waves=self.waves, flagged=self.flagged)
        return frame

    def __repr__(self) -> str:
        flagged = " FLAGGED" if self.flagged else ""
        return f"<AssignmentTest {self.what}s n={sum(self.counts.values()):,} p={self.pvalue:.3g}{flagged}>"

    def describe(self) -> str:
        total = sum(self.counts.values())
        shares = ", ".join(f"{name} {count / total:.3f} (design {self.expected[name]:.3f})"
                           for name, count in self.counts.items())
        head = f"ASSIGNMENT FAILED: the {self.what}s were not drawn as the design draws them" if self.flagged else \
            f"{self.what}s as the design draws them"
        advice = ("; respondents may have reloaded until shown the one they wanted (or a client draws them wrongly): "
                  "the estimates assume the design's draw") if self.flagged else ""
        tested = "" if self.waves == 1 else f" (each wave's own test, the smallest p of {self.waves}, Bonferroni)"
        return f"{head}: {shares}, n = {total:,}, p = {self.pvalue:.3g}{tested}{advice}"


def over_waves(tests: list) -> AssignmentTest | None:
    """One test of a panel's markers from each wave's own (`assignment_test` per wave): the counts pooled, the smallest
    p Bonferroni-corrected over the waves. A panelist keeps their arm or group in every wave (`Survey.arm_for`), so the
    counts pooled over W waves count each person W times, and their test against the design's draw was overdispersed
    W-fold: honest panels were flagged (three waves: p below `FLAG_P` in 122 of 2,000 simulated panels, not 2)."""
    tests = [test for test in tests if test is not None]
    if len(tests) <= 1:
        return tests[0] if tests else None
    first = tests[0]
    counts = {name: sum(test.counts[name] for test in tests) for name in first.counts}
    return AssignmentTest(first.what, counts, first.expected, distributions.bonferroni(t.pvalue for t in tests),
                          len(tests))


def assignment_test(what: str, counts: dict, probabilities: dict) -> AssignmentTest | None:
    """None when there is nothing to test (fewer than two markers, or no respondent)."""
    names = list(probabilities)
    observed = np.array([counts.get(name, 0) for name in names], dtype=float)
    if len(names) < 2 or observed.sum() == 0:
        return None
    expected = np.array([float(probabilities[name]) for name in names])
    if len(names) == 2:
        pvalue = _binomial_two_sided(int(observed[0]), int(observed.sum()), float(expected[0]))
    else:
        fitted = observed.sum() * expected
        pvalue = float(distributions.chi2_sf(((observed - fitted) ** 2 / fitted).sum(), len(names) - 1))
    return AssignmentTest(what, {n: int(c) for n, c in zip(names, observed)}, dict(zip(names, expected)), pvalue)


def _binomial_two_sided(k: int, n: int, p: float) -> float:
    """The exact two-sided binomial test's p (as `scipy.stats.binomtest` defines it): the probability of every count
    no more likely than the one observed, with its relative tolerance of 1e-7 for ties."""
    probabilities = distributions.binom_pmf(np.arange(n + 1), n, p)
    return float(min(1.0, probabilities[probabilities <= probabilities[k] * (1 + 1e-7)].sum()))

