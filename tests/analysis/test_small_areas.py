"""Small-area estimates (`small_areas`): post-stratified predictions of a multilevel fit over a population table,
with parametric-bootstrap intervals, for areas with many, few and no respondents, beside each area's direct estimate;
refusals by name."""

import dataclasses
import math

import numpy as np
import pandas as pd
import patsy
import pytest
from scipy.special import expit

from deniable.analysis.errors import AnalysisError
from deniable.analysis.mixed import fit_mixed
from deniable.analysis.mixed_likelihood import GroupedReports
from deniable.analysis.small_areas import small_areas

AREAS = [f"d{i:02d}" for i in range(30)]
SIZES = [100, 80, 60, 40] + [20] * 6 + [8] * 6 + [3] * 4  # 20 areas reached; the last 10 reach nobody


@pytest.fixture(scope="module")
def world():
    """A population of 30 districts × 2 age groups; true district effects N(0, 0.6²); a randomized survey (forced
    response 3/4, 1/4) of 20 districts with 3 to 100 respondents: the fit, the population, each district's true share
    and the small-area estimates."""
    rng = np.random.default_rng(29)
    effects = dict(zip(AREAS, rng.normal(0, 0.6, len(AREAS))))
    beta = {"young": -1.2, "old": -0.2}
    population = pd.DataFrame([{"district": a, "agecat": age, "count": int(rng.integers(200, 2000))}
                               for a in AREAS for age in ("young", "old")])
    truth = {a: float(np.average([expit(beta[age] + effects[a]) for age in ("young", "old")],
                                 weights=population[population.district == a]["count"])) for a in AREAS}
    rows = []
    for area, size in zip(AREAS, SIZES):
        for _ in range(size):
            age = "young" if rng.random() < 0.5 else "old"
            true = rng.random() < expit(beta[age] + effects[area])
            report = true if rng.random() < 0.5 else rng.random() < 0.5
            rows.append((area, age, float(report)))
    sample = pd.DataFrame(rows, columns=["district", "agecat", "yes"])
    design = patsy.dmatrix("C(agecat, levels=['young', 'old'])", sample, return_type="dataframe")
    codes, names = pd.factorize(sample["district"], sort=True)
    fit = fit_mixed(GroupedReports(sample["yes"].to_numpy(), design.to_numpy(), codes, 0.75, 0.25),
                    list(design.columns), list(names), formula="yes ~ agecat + (1 | district)", group="district")
    fit = dataclasses.replace(fit, design_info=design.design_info)
    return fit, population, truth, small_areas(fit, population)


def test_every_district_has_an_estimate_inside_its_interval_and_the_truth_mostly_too(world):
    _, _, truth, areas = world
    table = areas.table
    assert list(table.index) == AREAS and (table["ci_low"] <= table["estimate"]).all()
    assert (table["estimate"] <= table["ci_high"]).all()
    covered = sum(row.ci_low <= truth[name] <= row.ci_high for name, row in table.iterrows())
    # 95% intervals over 30 districts: 28.5 expected, binomial sd 1.2; the approximation's slack allowed to 24
    assert covered >= 24, (covered, table)
    assert (table.loc[AREAS[20:], "respondents"] == 0).all() and table.loc[AREAS[20:], "direct"].isna().all()
    widths = table["ci_high"] - table["ci_low"]
    assert widths[AREAS[20:]].min() > widths[AREAS[:4]].max()  # no respondents: the widest intervals
    assert "10 areas have no respondents" in areas.summary()


def test_the_model_beats_the_direct_estimates_where_areas_are_small(world):
    """Root mean squared error against the truth, over the reached districts: the direct estimates (each district's
    own reports through the channel) against the post-stratified ones; shrinkage is larger where a district is
    smaller."""
    _, _, truth, areas = world
    table = areas.table
    reached = table[table["respondents"] > 0]
    error = {column: math.sqrt(np.mean([(row[column] - truth[name]) ** 2 for name, row in reached.iterrows()]))
             for column in ("estimate", "direct")}
    assert error["estimate"] < error["direct"], error
    small, large = reached[reached["respondents"] <= 8], reached[reached["respondents"] >= 60]
    assert small["shrinkage"].median() > large["shrinkage"].median()


def test_a_population_that_does_not_match_is_refused_by_name(world):
    fit, population, _, _ = world
    for table, says in [(population.drop(columns="count"), "no column 'count'"),
                        (population.assign(agecat="middle"), "do not match the model's covariates"),
                        (population.assign(count=-1), "must be a count")]:
        with pytest.raises(AnalysisError) as refused:
            small_areas(fit, table)
        assert says in refused.value.message and refused.value.field == "population"
    with pytest.raises(AnalysisError) as other:
        small_areas(fit, population, by="agecat")
    assert other.value.field == "by"
