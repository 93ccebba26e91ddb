"""`analysis.mixed` against R (tests/fixtures/mixed/reference.json, written by scripts/mixed_reference.py; the suite
needs no R): RRreg's ``RRmixed`` with its default Laplace approximation and with 25 quadrature nodes, lme4's
``glmer`` with the randomized-response link at 25 nodes, and ``glmer`` on the true answers (no randomization: the
identity channel)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.analysis.mixed import fit_mixed
from deniable.analysis.mixed_laplace import CrossedReports
from deniable.analysis.mixed_likelihood import GroupedReports

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "mixed" / "reference.json").read_text())
TERMS = ["(Intercept)", "cov"]


def _fit(column: str, channel: tuple, nodes: int):
    data = pd.DataFrame(FIXTURE["data"])
    codes, names = pd.factorize(data["group"], sort=True)
    exog = np.column_stack([np.ones(len(data)), data["cov"]])
    reports = GroupedReports(data[column].to_numpy(dtype=float), exog, codes, *channel)
    return fit_mixed(reports, TERMS, list(names), nodes=nodes, adapt=False), reports


@pytest.mark.parametrize("reference, column, channel, nodes, within_se, sd_within", [
    # RRmixed's default: glmer's Laplace, its curvature the expected information (PIRLS's weights)
    ("rrmixed_laplace", "resp", (0.75, 0.25), 1, 0.05, 0.05),
    # 25 nodes: the integral itself, so the fits agree to the optimisers' tolerance
    ("rrmixed_agq25", "resp", (0.75, 0.25), 25, 0.01, 0.001),
    ("glmer_rr_agq25", "resp", (0.75, 0.25), 25, 0.01, 0.001),
    ("glmer_plain_agq25", "true", (1.0, 0.0), 25, 0.01, 0.001),
])
def test_the_fit_is_rs(reference, column, channel, nodes, within_se, sd_within):
    """Coefficients within ``within_se`` of their standard errors of R's, the random intercepts' sd within
    ``sd_within`` of R's relatively, the same log-likelihood at R's estimate, and the same standard errors."""
    expected = FIXTURE["reference"][reference]
    assert expected["nAGQ"] == nodes
    result, reports = _fit(column, channel, nodes)
    for term in TERMS:
        gap = abs(result.fixed.at[term, "estimate"] - expected["fixef"][term])
        assert gap < within_se * expected["se"][term], (term, gap, result.fixed)
        assert result.fixed.at[term, "se"] == pytest.approx(expected["se"][term], rel=0.02 if nodes == 1 else 1e-3)
    assert result.tau == pytest.approx(expected["sd"], rel=sd_within)
    at_r = reports.loglik(np.array([expected["fixef"][term] for term in TERMS]), expected["sd"], nodes)
    assert at_r == pytest.approx(expected["loglik"], abs=1e-3 if nodes == 1 else 1e-6)
    assert result.loglik >= at_r - 1e-9  # ours is the maximum of the same function: never below R's point on it


@pytest.mark.parametrize("references, column, channel", [
    (("crossed_rrmixed_laplace", "crossed_glmer_rr_laplace"), "resp", (0.75, 0.25)),  # one model, R's two routes
    (("crossed_glmer_plain_laplace",), "true", (1.0, 0.0)),
])
def test_two_crossed_factors_are_rs_laplace(references, column, channel):
    """Schools crossed with districts, by the Laplace approximation (lme4's only method for several factors):
    coefficients within 0.01 of their SEs of R's, each sd within 0.5%, the log-likelihood at R's estimate within
    2e-3 of R's (glmer's PIRLS stops short of the mode by about that), and each group's predicted effect within 0.01."""
    data = pd.DataFrame(FIXTURE["crossed"])
    coded = [pd.factorize(data[factor], sort=True) for factor in ("school", "district")]
    exog = np.column_stack([np.ones(len(data)), data["cov"]])
    reports = CrossedReports(data[column].to_numpy(dtype=float), exog, [codes for codes, _ in coded], *channel)
    result = fit_mixed(reports, TERMS, [list(names) for _, names in coded], group=["school", "district"])
    assert result.converged and result.nodes == 1
    low, high = result.components.loc["school", ["ci_low", "ci_high"]]
    assert low < result.components.at["school", "sd"] < high
    for reference in references:
        expected = FIXTURE["reference"][reference]
        assert expected["nAGQ"] == 1
        for term in TERMS:
            gap = abs(result.fixed.at[term, "estimate"] - expected["fixef"][term])
            assert gap < 0.01 * expected["se"][term], (term, gap, result.fixed)
            assert result.fixed.at[term, "se"] == pytest.approx(expected["se"][term], rel=0.01)
        for factor in ("school", "district"):
            # measured: 0.2% for the randomized answers (R's own two routes differ by 1e-5), 0.02% without randomization
            assert result.components.at[factor, "sd"] == pytest.approx(expected["sd"][factor], rel=5e-3)
            assert result.effects[factor]["effect"].to_numpy() == pytest.approx(expected[factor], abs=0.01)
        at_r = reports.loglik(np.array([expected["fixef"][term] for term in TERMS]),
                              np.array([expected["sd"]["school"], expected["sd"]["district"]]))
        assert at_r == pytest.approx(expected["loglik"], abs=2e-3)
        assert result.loglik >= at_r - 1e-9
