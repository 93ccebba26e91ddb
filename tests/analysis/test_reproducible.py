"""A published figure does not move with the last bits of its input. A plan's assumed distribution moved by 1e-12 or
1e-9 (as another BLAS or summation order moves a fit) must move each planned standard error by no more than its stated
Monte Carlo error (`bootstrap.Bootstrap.relative_error`), and a closed form by round-off; an estimate's calibrated surveys,
drawn at a fit moved the same way, likewise. One shape each: an ordinal scale, a number, a multi-select question and
a compliance design."""

from __future__ import annotations

import numpy as np
import pytest

from deniable.analysis import bootstrap, calibration, channels, likelihood
from deniable.analysis.precision import published_se, published_spread
from deniable.client import Survey

ORDINAL = {"type": "ordinal", "options": ["1", "2", "3", "4", "5"], "privacy": {"design": "ordinal", "epsilon": 1}}
NUMBER = {"type": "number", "min": 0, "max": 50, "step": 1, "privacy": {"design": "laplace", "epsilon": 2}}
MULTI = {"type": "multi_select", "options": ["a", "b", "c", "d"], "privacy": {"design": "unary", "epsilon": 2}}
COMPLIANCE = {"type": "yes_no", "privacy": {"design": "cheating_detection", "groups": {
    "a": {"yes": "1/3", "randomizer": "If your birthday is in January to April, answer yes; otherwise answer truthfully."},
    "b": {"yes": "2/3", "randomizer": "If your birthday is in January to August, answer yes; otherwise answer truthfully."}}}}
MOVES = (1e-12, 1e-9)


def question(spec):
    return Survey.from_dict({"id": "s", "title": "t", "questions": [{"id": "q", "text": "?", **spec}]}).questions["q"]


def moved(distribution: np.ndarray, by: float) -> np.ndarray:
    shifted = np.array(distribution, dtype=float)
    shifted[0] += by
    return shifted / shifted.sum()


@pytest.mark.parametrize("spec, n, distribution", [
    (ORDINAL, 300, np.array([0.45, 0.3, 0.15, 0.07, 0.03])),
    (NUMBER, 3000, np.full(51, 1 / 51)),  # the distribution whose planned mean SE read 0.544, then 0.660 at +1e-12
])
def test_a_planned_bootstrap_moves_by_less_than_its_monte_carlo_error(spec, n, distribution):
    q = question(spec)
    grid = np.arange(len(distribution), dtype=float)
    base = published_spread(q, n, distribution)
    error = base.relative_error(grid)
    # A scale's 1,250 surveys: about 2% for a near-normal figure; a long grid's 200 with the face's control variate
    # (`bootstrap.Bootstrap.variance`): about 1%, where read plainly they left 5%.
    assert error <= 0.021, error
    for by in MOVES:
        other = published_spread(q, n, moved(distribution, by))
        assert abs(np.sqrt(other.variance(grid) / base.variance(grid)) - 1) <= error, by
        shares, others = np.sqrt(base.variances()), np.sqrt(other.variances())
        assert (np.abs(others - shares) <= base.relative_error() * shares + 1e-15).all(), by


@pytest.mark.parametrize("spec, distribution", [(MULTI, np.array([0.4, 0.2, 0.1, 0.05])),
                                                (COMPLIANCE, None)])
def test_a_closed_form_plan_moves_by_round_off(spec, distribution):
    q = question(spec)
    base = published_se(q, 1000, distribution)
    start = np.full(len(base), 1 / len(base)) if distribution is None else distribution
    for by in MOVES:
        other = published_se(q, 1000, moved(start, by) if distribution is None else start + by)
        # The SE is a smooth function of the shares: a move of δ moves it by about δ·(its derivative, order 1).
        np.testing.assert_allclose(other, base, rtol=100 * by)


@pytest.mark.parametrize("spec, truth", [
    (ORDINAL, np.array([0.6, 0.3, 0.1, 0.0, 0.0])),
    (NUMBER, np.r_[0.5, 0.3, 0.2, np.zeros(48)]),  # a long grid: 200 surveys, the mean read with its control variate
])
def test_an_estimate_s_calibrated_surveys_do_not_move_with_its_fit_s_last_bits(spec, truth):
    """The surveys behind a near-face estimate's SEs and cuts are seeded by the counts: a fit moved by 1e-12 or 1e-9
    draws the same surveys (shares rounded to 9 decimals inside the draw), so its SEs and cut move by round-off."""
    q = question(spec)
    matrix = channels.channel_matrix(q.mechanism)
    rng = np.random.default_rng(5)
    counts = rng.multinomial(400, matrix @ truth)
    fit = likelihood.certified_maximum(matrix, counts)[0]
    assert not calibration.is_interior(matrix, fit, 400)
    grid = np.arange(len(truth), dtype=float)
    base = calibration.Calibration(bootstrap.bootstrap(matrix, fit, 400, counts=counts))
    error = base.surveys.relative_error(grid)
    assert error <= 0.021, error
    for by in MOVES:
        other = calibration.Calibration(bootstrap.bootstrap(matrix, moved(fit, by), 400, counts=counts))
        assert abs(np.sqrt(other.surveys.variance(grid) / base.surveys.variance(grid)) - 1) <= error, by
        assert other.cut(grid, 0.95) == pytest.approx(base.cut(grid, 0.95), rel=1e-6), by
