"""The goodness-of-fit test every estimate carries: exact where it claims to be, calibrated on
honest data (it errs toward not flagging), and it names reports no honest population could send."""

from __future__ import annotations

import dataclasses
import math
import zlib
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from deniable.analysis import channels, estimate, likelihood
from deniable.analysis import estimators as est
from deniable.analysis.fit import FLAG_P, count_channel, fit_test, saturated_test
from deniable.client import Survey
from tests.conftest import SeededSource

COIN = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}


def question(qtype="yes_no", privacy=None, **extra):
    return Survey.from_dict({"id": "v", "title": "v", "questions": [
        {"id": "q", "type": qtype, "text": "?", "privacy": privacy or COIN, **extra}]}).questions["q"]


def test_the_exact_two_report_p_value_is_the_binomial_tail_of_the_refitted_statistic():
    """Independently: refit every possible count with the binary estimator, and sum the binomial at the fit."""
    q = question()
    channel = channels.binary_channel(q.mechanism)
    matrix = channels.channel_matrix(q.mechanism)
    for n, yes in [(20, 18), (20, 19), (20, 3), (50, 45), (7, 7), (1, 1), (1, 0), (30, 12)]:
        def g2(k):
            rate = channel.rate(est.binary_mle(channel, k, n))
            return 2 * sum(c * math.log(c / (n * r)) for c, r in ((k, rate), (n - k, 1 - rate)) if c > 0)

        fitted = channel.rate(est.binary_mle(channel, yes, n))
        expected = sum(stats.binom.pmf(k, n, fitted) for k in range(n + 1) if g2(k) >= g2(yes) - 1e-9)
        share = est.binary_mle(channel, yes, n)
        result = saturated_test(matrix, np.array([yes, n - yes]), np.array([share, 1 - share]))
        assert result.method == "exact" and result.statistic == pytest.approx(g2(yes), abs=1e-9)
        assert result.pvalue == pytest.approx(min(1.0, expected), rel=1e-9, abs=1e-12), (n, yes)
    # inside what the design can produce the fit is perfect
    inside = saturated_test(matrix, np.array([10, 10]), np.array([0.5, 0.5]))
    assert inside.statistic == pytest.approx(0, abs=1e-12) and inside.pvalue == 1.0


@pytest.mark.serial  # it bounds the process's CPU time: run alone
@pytest.mark.parametrize("yes", [750_600, 249_000, 900_000, 10])
def test_the_exact_two_report_p_value_at_a_million_is_the_tails_of_every_count_and_costs_no_sweep(yes):
    """At n = 10⁶ the counts whose statistic reaches the observed one are found by bisection: the same p-value as
    every count's statistic computed and the binomial summed over them (here with scipy.stats), in a few hundred
    microseconds of CPU where the sweep over a million counts took a second."""
    import time

    from deniable.analysis import fit

    n, (low, high) = 1_000_000, (0.25, 0.75)
    counts = np.array([yes, n - yes], dtype=float)
    fitted = min(max(yes / n, low), high)
    observed = fit._g2(counts, n, np.array([fitted, 1 - fitted]))
    every = np.arange(n + 1, dtype=float)
    rate = np.clip(every / n, low, high)
    with np.errstate(divide="ignore", invalid="ignore"):
        g2 = 2 * (np.where(every > 0, every * np.log(every / (n * rate)), 0.0)
                  + np.where(every < n, (n - every) * np.log((n - every) / (n * (1 - rate))), 0.0))
    reaching = np.flatnonzero(g2 >= observed - 1e-9 * observed)
    expected = stats.binom.pmf(reaching, n, fitted).sum()
    started = time.process_time()
    found = fit._exact_two((low, high), counts, observed)
    spent = time.process_time() - started
    assert found == pytest.approx(expected, rel=1e-9, abs=1e-300)
    assert spent < 0.1


def test_the_count_channel_of_a_multi_select_question_is_the_exact_one_summed():
    q = question("multi_select", {"design": "unary", "epsilon": 2}, options=["a", "b", "c"])
    mechanism = q.mechanism
    # the number reported depends on the number held only: sum the exact channel over reports of each size,
    # for every answer of each size
    for answer in mechanism.answers:
        column = [sum((mechanism.probability(r, answer) for r in mechanism.reports if len(r) == k), Fraction(0))
                  for k in range(4)]
        assert np.allclose(count_channel(mechanism)[:, len(answer)], [float(p) for p in column])


def honest_counts(q, truth, n, rng):
    return rng.multinomial(n, channels.channel_matrix(q.mechanism) @ truth)


@pytest.mark.parametrize("case", ["coin n=40", "k_rr n=3000", "ordinal n=300", "laplace n=200", "cdm n=2000"])
def test_on_honest_data_the_test_errs_toward_not_flagging(case):
    """p-values of honest surveys are at least uniform: P(p < 0.05) ≤ 0.05 (plus Monte Carlo error), and no
    flag at 0.001 over the runs."""
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    if case.startswith("coin"):
        q, truth, n = question(), np.array([0.3, 0.7]), 40
    elif case.startswith("k_rr"):
        q = question("choice", {"design": "k_rr", "epsilon": "ln 3"}, options=["a", "b", "c", "d"])
        truth, n = np.array([0.4, 0.3, 0.2, 0.1]), 3000
    elif case.startswith("ordinal"):
        q = question("ordinal", {"design": "ordinal", "epsilon": 1}, options=["1", "2", "3", "4", "5"])
        truth, n = np.array([0.1, 0.2, 0.4, 0.2, 0.1]), 300
    elif case.startswith("laplace"):
        q = question("number", {"design": "laplace", "epsilon": 1}, min=0, max=6, step=1)
        truth, n = np.full(7, 1 / 7), 200
    else:
        q = question(privacy={"design": "cheating_detection", "groups": {
            "a": {"yes": "1/3", "randomizer": "x"}, "b": {"yes": "2/3", "randomizer": "y"}}})
        truth, n = np.array([0.2, 0.7, 0.1]), 2000
    runs = 200
    pvalues = []
    for _ in range(runs):
        counts = honest_counts(q, truth, n, rng)
        pi, _ = likelihood.certified_maximum(channels.channel_matrix(q.mechanism), counts)
        pvalues.append(fit_test(q.mechanism, counts, pi).pvalue)
    pvalues = np.array(pvalues)
    assert np.mean(pvalues < 0.05) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs), case
    assert np.mean(pvalues < FLAG_P) <= 1 / runs, case


def test_reports_no_honest_population_sends_are_named():
    q = question()
    result = estimate(q, ["yes"] * 190 + ["no"] * 10)  # 95% yes: the coin design gives at most 75%
    assert result.fit.flagged and result.fit.pvalue < 1e-10 and result.fit.method == "exact"
    assert result.notes[0].startswith("FIT FAILED") and "FIT FAILED" in result.summary().as_text()
    honest = estimate(q, ["yes"] * 120 + ["no"] * 80)
    assert not honest.fit.flagged and "Goodness of fit: G² = 0.00 on 0 df, p = 1" in honest.summary().as_text()
    # groups are assigned with equal chances: a script that always claims group a is unlike any population
    cdm = question(privacy={"design": "cheating_detection", "groups": {
        "a": {"yes": "1/3", "randomizer": "x"}, "b": {"yes": "2/3", "randomizer": "y"}}})
    lopsided = estimate(cdm, [{"group": "a", "report": "yes"}] * 300 + [{"group": "b", "report": "no"}] * 100)
    assert lopsided.fit.flagged
    # a multi-select flood of one option: the number selected per report gives it away
    multi = question("multi_select", {"design": "unary", "epsilon": 2}, options=["a", "b", "c", "d"])
    rng = np.random.default_rng(3)
    draws = SeededSource(3)  # an honest survey is flagged in 0.1% of draws (FLAG_P): seeded, never
    reports = [multi.mechanism.randomize([o for o in "abcd" if rng.random() < 0.4], draws) for _ in range(2000)]
    assert not estimate(multi, reports).fit.flagged
    assert estimate(multi, reports + [["d"]] * 400).fit.flagged


def test_the_fit_test_runs_when_first_read_and_once_for_every_result_rebuilt_from_one_estimate(monkeypatch):
    """A long grid's test is Monte Carlo, several times the estimate's own cost: a result read for its figures and
    intervals does not pay it; reading ``fit`` or ``notes`` does, once, and gives the test an eager call gives."""
    from deniable.analysis import fit as fit_module

    q = question("number", {"design": "laplace", "epsilon": 1}, min=0, max=40, step=1)
    draws = SeededSource(5)
    reports = [q.mechanism.randomize(int(v), draws) for v in np.random.default_rng(5).integers(0, 41, 800)]
    runs = []
    real = fit_module.fit_test
    monkeypatch.setattr(fit_module, "fit_test", lambda *arguments: runs.append(1) or real(*arguments))
    result = estimate(q, reports)
    result.table, result.mean, result.conf_int(level=0.9), result.to_frame(), repr(result)
    assert runs == []
    rebuilt = dataclasses.replace(result, population="everyone")
    assert rebuilt.fit == result.fit and len(runs) == 1
    assert result.fit == real(q.mechanism, result.counts, result.answer_shares) and len(runs) == 1
    assert result.notes == rebuilt.notes and len(runs) == 1


def test_the_monte_carlo_route_is_deterministic_and_conservative():
    q = question("number", {"design": "laplace", "epsilon": 1}, min=0, max=6, step=1)
    rng = np.random.default_rng(9)
    counts = honest_counts(q, np.full(7, 1 / 7), 60, rng)
    pi, _ = likelihood.certified_maximum(channels.channel_matrix(q.mechanism), counts)
    first, again = fit_test(q.mechanism, counts, pi), fit_test(q.mechanism, counts, pi)
    assert first.method == "monte carlo" and first == again
    assert 0 < first.pvalue <= 1


def test_the_monte_carlo_route_can_flag_what_it_sees():
    """A number 0..10 at ε = 4 from 2,000 honest reports and 100 fakes all sending −10: G² in the hundreds on the
    Monte Carlo route (sparse cells), whose 999 draws alone could not go below p = 0.001; the draws continue while
    too few reach the statistic, so the flag fires. Honest reports stop at the first 999 and are not flagged."""
    q = question("number", {"design": "laplace", "epsilon": 4}, min=0, max=10, step=1)
    draws, rng = SeededSource(2), np.random.default_rng(2)
    honest = [q.mechanism.randomize(int(v), draws) for v in rng.integers(0, 11, 2000)]
    clean = estimate(q, honest).fit
    assert clean.method == "monte carlo" and not clean.flagged
    faked = estimate(q, honest + [-10] * 100).fit
    assert faked.method == "monte carlo" and faked.flagged and faked.pvalue == pytest.approx(1 / 20_000)
    assert faked == estimate(q, honest + [-10] * 100).fit  # seeded by the counts


def test_every_estimate_carries_its_fit_and_the_interval_holds_the_estimate():
    for privacy, qtype, extra, answer in [
        (COIN, "yes_no", {}, "yes"),
        ({"design": "k_rr", "epsilon": 1}, "choice", {"options": ["a", "b", "c"]}, "b"),
        ({"design": "crosswise", "p": "1/4", "companion": "Sunday?"}, "yes_no", {}, "yes"),
    ]:
        q = question(qtype, privacy, **extra)
        result = estimate(q, [q.mechanism.randomize(answer) for _ in range(300)])
        assert result.fit is not None and 0 <= result.fit.pvalue <= 1
        assert (result.table["ci_low"] <= result.table["estimate"] + 1e-12).all()
        assert (result.table["estimate"] <= result.table["ci_high"] + 1e-12).all()


def test_a_fit_at_the_saturated_model_reads_zero_not_minus_zero():
    from deniable.analysis.fit import FitTest

    assert "G² = 0.00 on 1 df" in FitTest(-3e-15, 1, 1.0, "exact").describe()
    assert FitTest(-3e-15, 1, 1.0, "exact").statistic == 0.0
