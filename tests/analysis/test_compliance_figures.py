"""The designs that measure compliance are analysed given the groups' observed sizes (the groups are drawn, their
sizes ancillary), as RRreg does: an unbalanced draw is no FIT FAILED, the standard errors are the closed-form
inverse information of the groups actually asked, and inside the parameter space the moment estimate is the
maximum-likelihood one."""

import numpy as np
import pytest

from deniable.analysis import estimate
from deniable.client import Survey
from tests.conftest import EXAMPLES

CDM = Survey.from_file(EXAMPLES / "respondent.yaml").questions["cheated"].mechanism  # yes-forcing: a 1/3, b 2/3
SLD = Survey.from_dict({"id": "s", "title": "S", "questions": [{
    "id": "lied", "type": "yes_no", "text": "?", "privacy": {"design": "stochastic_lie_detector", "groups": {
        "a": {"p": "2/12", "randomizer": "…"}, "b": {"p": "10/12", "randomizer": "…"}}}}]}).questions["lied"].mechanism


def _reports(mechanism, sizes: dict, yes: dict) -> list:
    """Reports with exactly ``yes[g]`` of ``sizes[g]`` saying yes in each group: counts chosen, not drawn."""
    return [{"group": g, "report": "yes" if i < yes[g] else "no"} for g in sizes for i in range(sizes[g])]


def _closed_form(mechanism, sizes: dict, yes: dict) -> tuple[np.ndarray, np.ndarray]:
    """Two groups, two free class shares: the groups' yes-rates determine the shares exactly; their covariance is
    the binomial variances of the two observed rates mapped through the same linear system."""
    columns = np.array([[float(p) for p in column] for _, column in mechanism.latent_classes]).T  # (group, typed) rows
    groups = mechanism.groups
    rows = [2 * i for i in range(len(groups))]  # the "yes" row of each group (each group's rows weigh 1/G)
    system = np.vstack([columns[rows] * len(groups), np.ones(columns.shape[1])])
    rates = np.array([yes[g] / sizes[g] for g in groups])
    inverse = np.linalg.inv(system)
    theta = inverse @ np.r_[rates, 1.0]
    covariance = inverse @ np.diag(np.r_[rates * (1 - rates) / np.array([sizes[g] for g in groups]), 0.0]) @ inverse.T
    return theta, covariance


@pytest.mark.parametrize("mechanism, sizes, yes", [
    (CDM, {"a": 564, "b": 692}, {"a": 260, "b": 470}),   # the minaret survey's group sizes
    (CDM, {"a": 900, "b": 1100}, {"a": 420, "b": 760}),
    (SLD, {"a": 564, "b": 692}, {"a": 430, "b": 240}),
    (SLD, {"a": 450, "b": 550}, {"a": 350, "b": 200}),
])
def test_an_unbalanced_draw_of_groups_is_analysed_as_drawn(mechanism, sizes, yes):
    result = estimate(mechanism, _reports(mechanism, sizes, yes))
    theta, covariance = _closed_form(mechanism, sizes, yes)
    assert (theta > 0).all()  # inside the parameter space: the maximum is the solution of the system
    assert result.class_shares == pytest.approx(theta, abs=1e-9)
    if mechanism is CDM:
        rows = np.eye(3)
    else:
        rows = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    shown = result.table["se"].to_numpy()[: len(rows)]
    assert shown == pytest.approx(np.sqrt(np.diag(rows @ covariance @ rows.T)), rel=1e-6)
    assert result.table["unbiased"].to_numpy()[: len(rows)] == pytest.approx(rows @ theta, abs=1e-9)
    assert not result.fit.flagged and result.fit.df == 0 and result.fit.pvalue == 1.0
    if mechanism is SLD:  # the carriers' truthfulness: its delta-method SE from the same covariance
        t = theta[0] / (theta[0] + theta[1])
        gradient = np.array([theta[1], -theta[0], 0.0]) / (theta[0] + theta[1]) ** 2
        assert result.table.loc["truthful", "estimate"] == pytest.approx(t, abs=1e-9)
        assert result.table.loc["truthful", "se"] == pytest.approx(np.sqrt(gradient @ covariance @ gradient), rel=1e-6)


def test_rates_no_population_can_produce_still_fail_the_fit():
    """Given the groups, the model is saturated inside its space: the fit test speaks only where the observed rates
    fall outside what any population can produce (here group b says yes less than its forced share allows)."""
    reports = _reports(CDM, {"a": 600, "b": 600}, {"a": 520, "b": 200})
    result = estimate(CDM, reports)
    assert result.fit.flagged and result.fit.df >= 1


@pytest.mark.slow
def test_no_published_row_holds_nan_or_an_se_beyond_the_share_s_range():
    """The lie detector at π = 0.05 with 200 respondents (where 7–11% of surveys published a NaN interval and a third
    an SE of t above 1): over 150 seeded surveys every published figure is a number, every SE at most 0.5, every
    interval inside [0, 1] around its estimate; an unidentified truthfulness is left out and said."""
    rng = np.random.default_rng(12)
    left_out = capped = 0
    for _ in range(150):
        groups = rng.choice(["a", "b"], size=200)
        carrier = rng.random(200) < 0.05
        honest = rng.random(200) < 0.9
        says_no = rng.random(200) < np.where(groups == "a", 2 / 12, 10 / 12)
        typed = np.where(carrier, honest, ~says_no)
        result = estimate(SLD, [{"group": g, "report": "yes" if t else "no"} for g, t in zip(groups, typed)])
        table = result.table
        assert not table.isna().to_numpy().any(), table
        assert (table["se"] <= 0.5).all()
        assert ((0 <= table["ci_low"]) & (table["ci_low"] <= table["estimate"]) & (table["estimate"] <= table["ci_high"])
                & (table["ci_high"] <= 1)).all()
        if "truthful" not in table.index:
            left_out += 1
            assert any("left out" in note for note in result.notes)
        capped += any("means nothing this near the boundary" in note for note in result.notes)
    assert left_out > 0 and capped > 0  # both cases occur in this cell


def test_the_compliance_test_at_a_double_boundary_takes_its_null_distribution_from_draws():
    """No cheaters and no honest "yes" either: the 50:50 χ² mixture rejected 8% of such honest surveys at 5%. There
    the p-value comes from the statistic's distribution at the fitted null, drawn with the groups' sizes as observed
    and seeded by the counts (docs/validation.md: its size over 1,500 surveys)."""
    from deniable.analysis import channels, distributions

    rng = np.random.default_rng(40)
    q = channels.channel_matrix(CDM)
    drawn = 0
    for i in range(30):
        counts = rng.multinomial(500, q @ np.array([0.0, 1.0, 0.0]))
        reports = [r for r, c in zip(CDM.reports, counts) for _ in range(c)]
        test = estimate(CDM, reports).compliance_test
        if test.statistic > 0:
            drawn += 1
            # A count of draws over draws, not a χ² tail: 999 of them, or more while few reached the statistic
            total = distributions.FIRST_DRAWS + 1 if test.p_value > 0.01 else None
            if total is not None:
                assert test.p_value * total == pytest.approx(round(test.p_value * total), abs=1e-6)
            if i < 3:
                assert estimate(CDM, reports).compliance_test == test  # the same counts, the same draws
        else:
            assert test.p_value == 0.5  # γ̂ = 0: the statistic is 0, half the mixture
    assert drawn >= 10


def test_a_compliance_test_far_beyond_its_draws_says_how_small_its_p_is_and_never_a_value_it_is_not():
    """No honest "yes" and 20% cheaters (the audit's example: likelihood ratio about 97, where χ²₁/2 gives 4e-23):
    999 draws printed "p = 0.001". The draws continue while fewer than 10 reach the statistic, up to 19,999; none
    does, so the p is said as a bound. With 5% cheaters, some draws reach it: a count over draws, above the bound."""
    from deniable.analysis import channels, distributions

    q = channels.channel_matrix(CDM)
    strong = estimate(CDM, _drawn(q, [0.0, 0.8, 0.2], 2000, 3)).compliance_test
    assert strong.statistic > 50 and strong.bound
    assert strong.p_value == pytest.approx(1 / (distributions.MOST_DRAWS + 1))
    assert "p < 0.0001" in str(strong) and "p = " not in str(strong)
    weak = [estimate(CDM, _drawn(q, [0.0, 0.95, 0.05], 500, seed)).compliance_test for seed in range(12)]
    bootstrapped = [t for t in weak if t.statistic > 0 and not t.bound]
    assert bootstrapped and all(t.p_value > 1 / (distributions.MOST_DRAWS + 1) for t in bootstrapped)
    assert not any("p = 0.001" == str(t)[-9:] for t in weak)  # the old floor: never a value that is only a floor


def _drawn(q, truth, n, seed):
    counts = np.random.default_rng(seed).multinomial(n, q @ np.array(truth))
    return [r for r, c in zip(CDM.reports, counts) for _ in range(c)]


@pytest.mark.parametrize("mechanism, truth", [(CDM, [0.0, 1.0, 0.0]), (CDM, [0.3, 0.5, 0.2]), (SLD, [0.0, 0.0, 1.0]),
                                              (SLD, [0.3, 0.1, 0.6])])
def test_the_batched_two_group_statistic_is_the_general_maximiser_s(mechanism, truth):
    """The bootstrap's statistic for a whole batch of draws (the triangle of the groups' yes-rates, its edges by
    bisection) against the general maximiser, draw by draw, at and away from the boundaries."""
    from deniable.analysis import compliance

    kept = [0, 1] if mechanism is CDM else [0, 2]
    draws = np.random.default_rng(3).multinomial(400, compliance.class_matrix(mechanism) @ np.array(truth), size=200)
    batched = compliance.two_group_statistics(mechanism, kept, draws)
    one_by_one = [compliance._statistic(compliance.class_matrix(mechanism, d), kept, d) for d in draws]
    assert batched == pytest.approx(one_by_one, abs=1e-8)
    assert (batched > 1e-6).sum() >= 20  # draws on both sides of the boundary
