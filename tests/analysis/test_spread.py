"""The standard error of an ordinal or numeric estimate is a parametric bootstrap of the fit itself
(analysis/spread.py): its batched solver must give the fits the estimate's own solver gives, certified."""

import numpy as np
import pytest

from deniable.analysis import channels, estimate, likelihood, spread
from tests.analysis.test_estimates import question

DESIGNS = [
    {"type": "ordinal", "options": list("abcd"), "privacy": {"design": "ordinal", "epsilon": 0.5}},
    {"type": "ordinal", "options": list("abcdefg"), "privacy": {"design": "ordinal", "epsilon": 2}},
    {"type": "number", "min": 0, "max": 4, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
    {"type": "number", "min": 0, "max": 20, "step": 1, "privacy": {"design": "laplace", "epsilon": 1}},
]


@pytest.mark.parametrize("spec", DESIGNS)
@pytest.mark.parametrize("n", [1, 30, 2000])
def test_the_batched_fits_are_the_certified_maxima(spec, n):
    q = channels.channel_matrix(question(**spec).mechanism)
    k = q.shape[1]
    skewed = np.r_[0.8, np.zeros(k - 2), 0.2]  # zeros inside the truth: fits on the boundary
    for truth in (np.full(k, 1 / k), skewed):
        draws = np.random.default_rng(n).multinomial(n, q @ truth, size=60).astype(float)
        fits, certified = spread._batched_maximise(q, draws, truth)
        assert certified.mean() >= 0.9
        for counts, fit, ok in zip(draws, fits, certified):
            if not ok:
                continue
            assert likelihood.certify(q, counts, fit).converged  # an independent check of the KKT conditions
            alone = likelihood.maximise(q, counts)[0]
            assert likelihood.loglikelihood(q, counts, fit) == pytest.approx(likelihood.loglikelihood(q, counts, alone),
                                                                             abs=1e-6)


@pytest.mark.parametrize("spec", DESIGNS)
def test_a_share_s_standard_error_is_the_spread_of_its_fit_and_never_above_a_half(spec):
    q_ = question(**spec)
    rng = np.random.default_rng(4)
    reports = q_.mechanism.reports
    for n in (1, 12, 400):
        drawn = [reports[i] for i in rng.integers(0, len(reports), n)]
        first, again = estimate(q_, drawn), estimate(q_, drawn)
        se = first.table["se"].to_numpy()
        assert np.all(np.isfinite(se)) and se.max() <= 0.5
        assert np.array_equal(se, again.table["se"].to_numpy())  # seeded by the counts: every surface the same
        assert first.covariance == pytest.approx(first.covariance.T)
        assert np.sqrt(np.diag(first.covariance)) == pytest.approx(se)
        if first.mean is not None:
            assert first.mean.ci.low <= first.mean.estimate <= first.mean.ci.high
            assert first.mean.se == pytest.approx(np.sqrt(q_scores(q_) @ first.covariance @ q_scores(q_)))


def q_scores(q_):
    from deniable.analysis.planning import scores

    return scores(q_)
