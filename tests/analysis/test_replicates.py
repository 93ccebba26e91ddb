"""Replicate weights kept by PSU (and, raked, by raking cell): what an estimate reads from them, the replicate totals
of any values and the per-replicate tallies of reports, is what the n × R weights written out give, to round-off;
their memory is the PSUs', not the responses'."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import SampleDesign, estimate, load
from deniable.analysis.replicates import jackknife, subbootstrap
from tests.analysis import simulated_samples as simulated


def _psus(rng, n=3000):
    strata = rng.integers(0, 4, n)
    psu_in_stratum = rng.integers(0, 6, n)
    psu = np.unique(strata * 10 + psu_in_stratum, return_inverse=True)[1].ravel()
    return strata, psu


@pytest.mark.parametrize("kind", ["jk1", "jkn", "bootstrap"])
def test_totals_and_tallies_through_the_psus_are_the_written_out_weights(kind):
    rng = np.random.default_rng(3)
    strata, psu = _psus(rng)
    if kind == "jk1":
        replicates = jackknife(np.zeros_like(strata), psu, None, stratified=False)
    elif kind == "jkn":
        replicates = jackknife(strata, psu, None, stratified=True)
    else:
        replicates = subbootstrap(strata, psu, 50, seed=4)
    assert replicates.factors.shape[0] == psu.max() + 1  # a row per PSU, not per response
    written = replicates.multipliers
    values = rng.normal(size=(len(psu), 3))
    np.testing.assert_allclose(replicates.totals(values), written.T @ values, rtol=1e-12, atol=1e-9)
    subset = np.flatnonzero(rng.random(len(psu)) < 0.7)
    categories, weights = rng.integers(0, 5, len(subset)), rng.uniform(1, 3, len(subset))
    expected = np.zeros((replicates.count, 5))
    for category in range(5):
        chosen = subset[categories == category]
        expected[:, category] = written[chosen].T @ weights[categories == category]
    np.testing.assert_allclose(replicates.tallied(subset, categories, weights, 5), expected, rtol=1e-12, atol=1e-9)


def test_raked_replicates_through_the_raking_cells_are_each_replicate_raked_alone():
    """Each replicate's weights raked to the margins, response by response (the way weights given with the data are
    raked), against the PSU × cell route: the same replicate weights, and the same standard errors."""
    survey = simulated.survey_of("k_ary")
    answers = simulated.population("k_ary")
    frame = simulated.sample("k_ary", answers, np.random.default_rng(5))
    frame["region"] = np.where(np.random.default_rng(6).random(len(frame)) < 0.4, "north", "south")
    data = load(frame, spec=survey)
    margins = {"stratum": {str(h): 1800.0 * (h + 1) for h in range(4)}, "region": {"north": 7000.0, "south": 11000.0}}
    design = SampleDesign(weights="weight", strata="stratum", clusters="cluster", variance="jkn", rake=margins)
    sample = design.resolve(data.design_frame("q", design.column_names()))
    assert sample.replicates.cells is not None and sample.replicates.rows is not None
    by_cells = sample.replicate_frame()
    # The same replicates given as weights with the data: raked response by response
    given = pd.concat([frame.reset_index(drop=True), _unraked(design, data).reset_index(drop=True)], axis=1)
    columns = [f"replicate_{r + 1}" for r in range(sample.replicates.count)]
    supplied = SampleDesign(weights="weight", strata="stratum", clusters="cluster", variance="jk1",
                            replicate_weights=columns, replicate_scale=1.0, rake=margins)
    alone = supplied.resolve(load(given, spec=survey).design_frame("q", supplied.column_names())).replicate_frame()
    np.testing.assert_allclose(by_cells.to_numpy(), alone.to_numpy(), rtol=1e-8)
    estimated = estimate(data, "q", design=design)
    assert (estimated.table["se"] > 0).all()


def _unraked(design, data) -> pd.DataFrame:
    unraked = SampleDesign(weights="weight", strata="stratum", clusters="cluster", variance="jkn")
    return unraked.resolve(data.design_frame("q", unraked.column_names())).replicate_frame()
