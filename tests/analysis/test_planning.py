import math

import numpy as np
import pytest

from deniable.analysis import compare_designs, estimate, margin_of_error, power, sample_size, unit_variance
from deniable.client import Survey


def question(**spec):
    return Survey.from_dict({"id": "s", "title": "t", "questions": [{"id": "q", "text": "?", **spec}]}).questions["q"]


def test_coin_flip_unit_variance_and_sample_size():
    coin = question(type="yes_no")
    # π = 0.1: λ = 0.3, Var = λ(1 − λ)/(1/2)² = 0.84
    assert unit_variance(coin, 0.1)[0] == pytest.approx(0.84)
    n = sample_size(coin, 0.03, distribution=0.1)
    assert n == math.ceil(1.959963984540054**2 * 0.84 / 0.03**2)
    assert margin_of_error(coin, n, distribution=0.1) <= 0.03


def test_sample_size_delivers_the_margin_in_simulation():
    coin = question(type="yes_no")
    n = sample_size(coin, 0.05, distribution=0.2)
    rng = np.random.default_rng(1)
    half_widths = []
    for _ in range(200):
        truth = rng.random(n) < 0.2
        reports = np.where(rng.random(n) < np.where(truth, 0.75, 0.25), "yes", "no")
        result = estimate(coin, reports, method="wald")
        half_widths.append((result.table.at["yes", "ci_high"] - result.table.at["yes", "ci_low"]) / 2)
    assert np.mean(half_widths) == pytest.approx(0.05, rel=0.03)


def test_power_grows_with_n_and_matches_simulation():
    coin = question(type="yes_no")
    assert power(coin, 0.1, 0.2, 200, 200) < power(coin, 0.1, 0.2, 800, 800)
    assert power(coin, 0.1, 0.1, 500, 500) == pytest.approx(0.05, abs=1e-9)
    predicted = power(coin, 0.1, 0.25, 400, 400)
    rng = np.random.default_rng(2)
    rejected = 0
    for _ in range(400):
        shares = []
        for share in (0.1, 0.25):
            truth = rng.random(400) < share
            reports = np.where(rng.random(400) < np.where(truth, 0.75, 0.25), "yes", "no")
            shares.append(estimate(coin, reports, method="wald"))
        difference = shares[0].estimate["yes"] - shares[1].estimate["yes"]
        se = math.hypot(shares[0].se["yes"], shares[1].se["yes"])
        rejected += abs(difference / se) > 1.959963984540054
    assert rejected / 400 == pytest.approx(predicted, abs=0.08)


def test_compare_designs_ranks_by_variance():
    table = compare_designs(4, 1.0)
    assert list(table.index)[0] == "k_rr" == table.attrs["recommended"]  # few options, moderate ε
    assert table["worst unit variance"].is_monotonic_increasing
    assert (table["epsilon"] <= 1.0 + 1e-12).all()
    # unary must protect any subset (ε split over every option), so per share it costs more than
    # k_rr; between its variants, optimized wins for rare options at a larger per-bit budget
    many = compare_designs(16, 4.0)
    assert many.index[0] == "k_rr"
    assert many.loc["unary optimized", "worst unit variance"] > many.loc["k_rr", "worst unit variance"]
