"""`analysis.distributions` gives what `scipy.stats` gives (to a few ulps; the binomial to 1e-11 relative), without
its import; and a survey's estimate loads neither `scipy.stats` nor `scipy.optimize` nor statsmodels."""

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from deniable.analysis import distributions
from deniable.analysis.assignment import _binomial_two_sided
from deniable.analysis.splitballot import comparison
from tests.conftest import EXAMPLES

P = np.array([1e-12, 1e-6, 0.001, 0.025, 0.05, 0.3, 0.5, 0.9, 0.999])
X = np.array([-6.0, -1.0, 0.0, 0.5, 2.0, 8.0, 40.0])


@pytest.mark.parametrize("df", [1, 2, 3, 7.5, 30, 200, None])
def test_the_quantiles_and_tails_are_scipy_stats_own(df):
    t = stats.norm if df is None else stats.t(df)
    np.testing.assert_allclose(distributions.t_isf(P, df), t.isf(P), rtol=1e-13)
    np.testing.assert_allclose(distributions.t_sf(X, df), t.sf(X), rtol=1e-13)
    if df is not None:
        np.testing.assert_allclose(distributions.chi2_ppf(1 - P[1:], df), stats.chi2.ppf(1 - P[1:], df), rtol=1e-13)
        np.testing.assert_allclose(distributions.chi2_sf(np.abs(X), df), stats.chi2.sf(np.abs(X), df), rtol=1e-13)
    np.testing.assert_allclose(distributions.norm_isf(P), stats.norm.isf(P), rtol=1e-13)
    np.testing.assert_allclose(distributions.beta_ppf(P, 3, 7.5), stats.beta.ppf(P, 3, 7.5), rtol=1e-13)


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 100, 1256, 20_000, 10**6])
@pytest.mark.parametrize("p", [0.0, 1e-9, 1e-4, 0.09, 0.1, 0.5, 0.77, 0.999, 1.0])
def test_the_binomial_probability_is_scipy_s_to_1e_11(n, p):
    k = np.arange(n + 1) if n <= 20_000 else np.unique(np.r_[0:60, n - 60:n + 1,
                                                           np.clip(np.arange(-3000, 3000) + int(n * p), 0, n)])
    ours, theirs = distributions.binom_pmf(k, n, p), stats.binom.pmf(k, n, p)
    representable = theirs > 1e-290
    np.testing.assert_allclose(ours[representable], theirs[representable], rtol=2e-11)
    assert (ours[~representable] < 1e-280).all()
    assert distributions.binom_pmf([-1, n + 1], n, p).tolist() == [0.0, 0.0]


def test_the_two_sided_binomial_test_and_the_wilson_interval_are_the_libraries():
    for n, p in ((10, 0.5), (57, 1 / 3), (1256, 0.5), (20_000, 0.1)):
        for k in {0, 1, n // 2, int(n * p) + int(3 * n**0.5), n}:
            if k <= n:
                assert _binomial_two_sided(k, n, p) == pytest.approx(stats.binomtest(k, n, p).pvalue, rel=1e-11)

    class Result:  # the randomized arm's row, as `comparison` reads it
        import pandas as pd
        table = pd.DataFrame({"estimate": [0.2], "se": [0.05], "ci_low": [0.1], "ci_high": [0.3]}, index=["yes"])
        n = 400
    for yes, n in ((0, 10), (3, 10), (10, 10), (57, 123)):
        row = comparison(Result, [yes, n - yes], 0.9).loc["direct"]
        low, high = proportion_confint(yes, n, alpha=0.1, method="wilson")
        assert row["ci_low"] == pytest.approx(max(min(low, yes / n), 0)) and row["ci_high"] == pytest.approx(min(high, 1))


def test_a_survey_s_estimate_loads_no_scipy_stats_optimize_or_statsmodels():
    script = ("import sys; from deniable.analysis import estimate; from deniable.client import Survey; "
              f"survey = Survey.from_file({str(EXAMPLES / 'questionnaire.yaml')!r}); "
              "import random; rng = random.Random(5); "
              "[estimate(q, [q.mechanism.reports[rng.randrange(len(q.mechanism.reports))] for _ in range(300)]) "
              " for q in survey.questions.values() if q.is_private]; "
              "print(sorted(m for m in ('scipy.stats', 'scipy.optimize', 'statsmodels') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
