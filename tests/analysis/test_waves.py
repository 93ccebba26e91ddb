"""The change between two waves of a memoized panel: the interval covers the panel's true change at least at
its nominal level (the independent-sample standard error is an upper bound under memoization), checked by
simulating panels through the exact layers, which are first checked against the client itself."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from scipy import stats

from deniable.analysis import AnalysisError, LoadedSurvey, Version
from deniable.client import Survey
from deniable.client.json_text import canonical_json as key
from deniable.client.memo import Memo
from deniable.client.reports import WAVES
from tests.conftest import SeededSource

COIN = {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}
KRR = {"design": "k_rr", "epsilon": "ln 3"}


def panel_survey(privacy, options=None) -> Survey:
    question = {"id": "q", "type": "choice" if options else "yes_no", "text": "Q?", "privacy": privacy}
    if options:
        question["options"] = options
    return Survey.from_dict({"id": "pulse", "title": "Pulse", "repeated": True, "questions": [question]})


def layers(survey):
    """(permanent P[r, a], instantaneous I[r', r]) as floats, in report/answer order."""
    mechanism = survey.questions["q"].mechanism
    permanent = np.array([[float(p) for p in row] for row in mechanism.permanent.channel()])
    k = permanent.shape[0]
    instant = np.full((k, k), float(mechanism.instant.other))
    np.fill_diagonal(instant, float(mechanism.instant.keep))
    return permanent, instant


def test_the_simulated_layers_are_the_clients_joint_distribution_of_two_waves():
    """One person, the same answer in two waves: the client's pair of reports follows Σ_p P(p|a) I(r₁|p) I(r₂|p)."""
    survey = panel_survey(KRR, ["a", "b", "c"])
    permanent, instant = layers(survey)
    reports = survey.questions["q"].mechanism.reports
    rng = SeededSource(11)
    people = 4000
    observed = np.zeros((3, 3))
    for _ in range(people):
        memo = Memo.from_secret(bytes(rng.randbelow(256) for _ in range(32)))
        first, second = (reports.index(survey.randomize({"q": "a"}, rng, memo=memo)["q"]) for _ in range(2))
        observed[first, second] += 1
    joint = np.einsum("p,ip,jp->ij", permanent[:, 0], instant, instant)
    result = stats.chisquare(observed.ravel(), people * joint.ravel())
    assert result.pvalue > 0.001
    # and the pair is correlated, as memoization intends: the same report twice far more often than if independent
    assert np.trace(observed) / people > np.sum(np.diag(np.outer(joint.sum(1), joint.sum(0)))) + 0.1


def simulate_panel(survey, answers_first, answers_second, rng) -> dict:
    """Counts per wave of a panel whose people answer ``answers_first`` then ``answers_second`` (answer indexes):
    a permanent report per person and distinct answer, drawn once, then each wave's instantaneous layer."""
    permanent, instant = layers(survey)
    k = permanent.shape[0]
    n = len(answers_first)
    cumulative = permanent.cumsum(axis=0)
    draw_permanent = lambda answers: (rng.random(n)[None, :] > cumulative[:, answers]).sum(axis=0)  # noqa: E731
    first_permanent = draw_permanent(answers_first)
    fresh = draw_permanent(answers_second)
    second_permanent = np.where(answers_second == answers_first, first_permanent, fresh)  # a changed answer: a new one
    counts = {}
    for wave, held in (("w1", first_permanent), ("w2", second_permanent)):
        cumulative_instant = instant.cumsum(axis=0)
        sent = (rng.random(n)[None, :] > cumulative_instant[:, held]).sum(axis=0)
        counts[wave] = np.bincount(sent, minlength=k)
    return counts


def loaded_panel(survey, counts: dict) -> LoadedSurvey:
    reports = survey.questions["q"].mechanism.reports

    def counter(question_id, by):
        per_wave = {key(w): {key(r): int(c) for r, c in zip(reports, counted) if c} for w, counted in counts.items()}
        if by == WAVES:
            return per_wave
        total = {}
        for part in per_wave.values():
            for report, count in part.items():
                total[report] = total.get(report, 0) + count
        return {None: total}

    n = int(sum(c.sum() for c in counts.values()))
    return LoadedSurvey([Version(1, survey.hash, survey, n, counter, None, waves=list(counts))], "simulation")


@pytest.mark.parametrize("privacy, options, first_shares, stay", [
    (COIN, None, [0.3, 0.7], 0.8),
    (COIN, None, [0.05, 0.95], 0.95),  # near the boundary, most answers unchanged
    (KRR, ["a", "b", "c"], [0.5, 0.3, 0.2], 0.7),
])
def test_the_interval_of_the_change_covers_the_panels_true_change(privacy, options, first_shares, stay):
    survey = panel_survey(privacy, options)
    answer = survey.questions["q"].mechanism.answers[0]
    rng = np.random.default_rng(2026)
    n, panels = 600, 400
    covered, differences, errors = 0, [], []
    for _ in range(panels):
        first = rng.choice(len(first_shares), size=n, p=first_shares)
        moved = rng.choice(len(first_shares), size=n, p=first_shares[::-1])
        second = np.where(rng.random(n) < stay, first, moved)
        truth = np.mean(second == 0) - np.mean(first == 0)
        change = loaded_panel(survey, simulate_panel(survey, first, second, rng)).compare_waves("q", "w1", "w2", answer)
        covered += change.ci.low <= truth <= change.ci.high
        differences.append(change.difference - truth)
        errors.append(change.se)
    coverage = covered / panels
    assert coverage >= 0.95 - 1.0 * np.sqrt(0.95 * 0.05 / panels), coverage  # nominal, less one sampling SE
    # conservative: the stated SE is at least the realised spread of the errors. How much more depends on how many
    # keep their answer (their two reports share a permanent one): about 2x when 80-95% do, which the unlinked
    # reports cannot tell, so the bound stays the bound (docs/analysis.md says so).
    spread = float(np.std(differences))
    assert spread <= np.mean(errors) * 1.05 and np.mean(errors) <= 2.5 * spread
    assert abs(np.mean(differences)) < 3 * spread / np.sqrt(panels) + 0.005  # unbiased but for boundary effects


def test_waves_of_a_survey_asked_once_are_refused():
    survey = Survey.from_dict({"id": "once", "title": "Once", "questions": [
        {"id": "q", "type": "yes_no", "text": "Q?", "privacy": COIN}]})
    loaded = LoadedSurvey([Version(1, survey.hash, survey, 1, lambda q, by: {None: {key("yes"): 1}}, None)], "test")
    assert loaded.waves == [] and not loaded.repeated
    with pytest.raises(AnalysisError, match="not repeated"):
        loaded.compare_waves("q", "w1", "w2")


def test_a_wave_without_responses_is_named():
    survey = panel_survey(COIN)
    counts = {"w1": np.array([5, 5]), "w2": np.array([6, 4])}
    with pytest.raises(AnalysisError, match="wave 'w3': no responses in it"):
        loaded_panel(survey, counts).compare_waves("q", "w1", "w3")


def coverage_table(seed: int = 2026, panels: int = 1000) -> list[tuple]:
    """The figures of the closing note: coverage, mean SE and realised SD of the change (not a test)."""
    rows = []
    for (privacy, options), (shares, stay) in itertools.product([(COIN, None), (KRR, ["a", "b", "c"])],
                                                                [([0.3, 0.7], 0.8), ([0.05, 0.95], 0.95)]):
        if options:
            shares = shares + [0.0] if len(shares) == 2 else shares
            shares = [s / sum(shares) for s in shares]
        survey = panel_survey(privacy, options)
        answer = survey.questions["q"].mechanism.answers[0]
        rng = np.random.default_rng(seed)
        covered, errors, differences = 0, [], []
        for _ in range(panels):
            first = rng.choice(len(shares), size=600, p=shares)
            second = np.where(rng.random(600) < stay, first, rng.choice(len(shares), size=600, p=shares[::-1]))
            truth = np.mean(second == 0) - np.mean(first == 0)
            change = loaded_panel(survey, simulate_panel(survey, first, second, rng)).compare_waves("q", "w1", "w2", answer)
            covered += change.ci.low <= truth <= change.ci.high
            errors.append(change.se)
            differences.append(change.difference - truth)
        rows.append((privacy["design"], shares, stay, covered / panels, float(np.mean(errors)), float(np.std(differences))))
    return rows


@pytest.mark.slow
def test_a_number_in_a_panel_is_estimated_through_the_channel_its_devices_draw_from():
    """One wave of a repeated survey's number question, drawn by the client's own composite (the permanent Laplace
    report, then the instantaneous layer): the grid mean's estimates centre on the truth and their intervals cover
    it. Estimating through the Laplace channel alone (the layer left out) put them at 1.41 for 1.35, and fails."""
    from deniable.analysis import estimate

    survey = Survey.from_dict({"id": "pulse", "title": "Pulse", "repeated": True, "questions": [
        {"id": "x", "type": "number", "text": "How many?", "min": 0, "max": 4, "step": 1,
         "privacy": {"design": "laplace", "epsilon": 1}}]})
    question = survey.questions["x"]
    truth = np.array([0.1, 0.6, 0.2, 0.05, 0.05])
    mean = float(truth @ np.arange(5))
    rng, source = np.random.default_rng(44), SeededSource(44)
    surveys, n = 100, 2000
    estimates, covered = [], 0
    for _ in range(surveys):
        answers = rng.choice(5, size=n, p=truth)
        result = estimate(question, question.mechanism.randomize_many([int(a) for a in answers], source)).mean
        estimates.append(result.estimate)
        covered += result.ci.low <= mean <= result.ci.high
    spread = float(np.std(estimates))
    assert abs(np.mean(estimates) - mean) < 3 * spread / np.sqrt(surveys), (np.mean(estimates), mean, spread)
    assert covered >= 90, covered  # 95% intervals: fewer than 90 of 100 has probability 1.1% if they hold


@pytest.mark.parametrize("privacy, options, first_shares, stay", [
    (COIN, None, [0.3, 0.7], 0.9),
    (KRR, ["a", "b", "c"], [0.5, 0.3, 0.2], 0.8),
])
def test_the_pooled_estimate_of_a_panel_covers_its_pooled_truth(privacy, options, first_shares, stay):
    """The default estimate of a repeated survey pools its waves. Counted as if every report were another person's,
    its interval covered 85% in simulated panels (memoized reports of one person are correlated); with the bound
    Σ (n_w/N)·SE_w and intervals widened to match, at least the nominal level (less one sampling SE)."""
    from deniable.analysis.from_counts import estimate_counts

    survey = panel_survey(privacy, options)
    answer = survey.questions["q"].mechanism.answers[0]
    rng = np.random.default_rng(77)
    n, panels = 600, 400
    covered = naive_covered = 0
    for _ in range(panels):
        first = rng.choice(len(first_shares), size=n, p=first_shares)
        moved = rng.choice(len(first_shares), size=n, p=first_shares[::-1])
        second = np.where(rng.random(n) < stay, first, moved)
        truth = (np.mean(first == 0) + np.mean(second == 0)) / 2
        loaded = loaded_panel(survey, simulate_panel(survey, first, second, rng))
        pooled = loaded.estimate("q")
        covered += pooled.table.at[answer, "ci_low"] <= truth <= pooled.table.at[answer, "ci_high"]
        naive = estimate_counts(survey.questions["q"].mechanism, loaded.question_counts("q"), 0.95, None, "q")
        naive_covered += naive.table.at[answer, "ci_low"] <= truth <= naive.table.at[answer, "ci_high"]
    assert "pooled over 2 waves" in pooled.notes[0] and pooled.n == 2 * n
    assert covered / panels >= 0.95 - np.sqrt(0.95 * 0.05 / panels), (covered / panels, naive_covered / panels)
    assert naive_covered < covered  # what the naive interval missed


def test_a_panel_number_s_pooled_intervals_widen_by_the_figures_own_ratios():
    """A 0..100 number pooled over two waves of a panel. The intervals widen by the bound's ratio to the
    independent-reports SE, taken over the positive shares, and for the mean by the mean's own ratio. A share the fit
    holds at 0 has a naive SE near 0; its ratio (15 here) once widened every interval, the mean's to [21.6, 74.6]
    about 50.7 ± 2.3. Now the mean's interval is the pooled one stretched by its ratio about the estimate: about
    ±1.96 SE, covering the truth. The covariance is read scaled without being written out."""
    from deniable.analysis import channels, estimate, estimators

    survey = Survey.from_dict({"id": "pulse", "title": "Pulse", "repeated": True, "questions": [
        {"id": "q", "type": "number", "text": "How many?", "min": 0, "max": 100, "step": 1,
         "privacy": {"design": "laplace", "epsilon": 1}}]})
    q = channels.channel_matrix(survey.questions["q"].mechanism)
    rng = np.random.default_rng(3)
    truth = rng.dirichlet(np.full(101, 0.5))
    rates = q @ truth
    result = estimate(loaded_panel(survey, {w: rng.multinomial(3000, rates / rates.sum()) for w in ("w1", "w2")}), "q")
    mean = result.mean
    assert mean.ci.low < truth @ np.arange(101) < mean.ci.high
    assert 0.8 < (mean.ci.high - mean.ci.low) / (2 * 1.96 * mean.se) < 1.25
    note = result.notes[0]
    assert "15." not in note
    # Two waves of 3,000 from one distribution: each wave's SE is about √2 times the pooled one's, so the bound (their
    # average) is √2 times the independent-reports SE. Each of the three SEs is a 200-survey bootstrap (Monte Carlo
    # error about 1/√400 = 5%), the ratio's about √(5²/2 + 5²) = 6.1%: within 4 of those of √2.
    ratio = float(re.search(r"the mean's ([0-9.]+)×", note).group(1))
    assert abs(ratio / math.sqrt(2) - 1) <= 4 * 0.061, note
    source = result.covariance_source
    assert isinstance(source, estimators.ScaledCovariance)
    np.testing.assert_allclose(source.variances(), np.diag(result.covariance), rtol=1e-12)


def _memoized_number_panel(seed: int, people: int = 600, waves: int = 3, top: int = 10) -> tuple:
    """(survey, {wave: counts}): a 0..``top`` number (ε = 1) in a panel whose people give the same answer in every wave,
    each report drawn by the client with the person's memo (the same permanent report, re-randomized)."""
    survey = Survey.from_dict({"id": "pulse", "title": "Pulse", "repeated": True, "questions": [
        {"id": "q", "type": "number", "text": "How many?", "min": 0, "max": top, "step": 1,
         "privacy": {"design": "laplace", "epsilon": 1}}]})
    reports = list(survey.questions["q"].mechanism.reports)
    rng, source = np.random.default_rng(seed), SeededSource(seed)
    answers = np.clip(rng.normal(0.4 * top, 0.15 * top, people).round(), 0, top).astype(int)
    counts = {f"w{wave + 1}": np.zeros(len(reports), dtype=np.int64) for wave in range(waves)}
    for answer in answers:
        memo = Memo.from_secret(bytes(source.randbelow(256) for _ in range(32)))
        for counted in counts.values():
            counted[reports.index(survey.randomize({"q": int(answer)}, source, memo=memo)["q"])] += 1
    return survey, counts


def test_a_panel_s_pooled_fit_test_is_each_wave_s_own_corrected_for_the_waves():
    """A person's memoized reports in several waves are correlated, so the pooled counts are overdispersed against any
    multinomial: their G² flagged every one of these five honest panels (p at most 2e-5). Each wave's reports are one
    per person, independent given the answers: the pooled estimate's test is the smallest of the waves' p-values,
    Bonferroni-corrected, and honest panels pass it."""
    from deniable.analysis.fit import FLAG_P, test_counts

    pvalues = []
    for seed in range(5):
        survey, counts = _memoized_number_panel(seed)
        pooled = loaded_panel(survey, counts).estimate("q")
        smallest = min((test_counts(survey.questions["q"].mechanism, counted) for counted in counts.values()),
                       key=lambda tested: tested.pvalue)
        assert pooled.fit.pvalue == pytest.approx(min(1.0, 3 * smallest.pvalue), rel=1e-12)
        assert (pooled.fit.statistic, pooled.fit.df) == (smallest.statistic, smallest.df)
        assert "the smallest p of 3 waves" in pooled.fit.method
        pvalues.append(pooled.fit.pvalue)
    assert min(pvalues) > FLAG_P and np.mean(pvalues) > 0.25, pvalues


def test_a_panel_s_subgroups_are_bounded_as_its_pooled_figure():
    """Each group of a panel pools its people's waves, as the whole survey's estimate does, so it is bounded the same
    way: a group's figure is the pooled estimate of the panel's rows in that group alone (its SE the bound over the
    group's waves, its intervals widened to match, its fit test each wave's). Counted as independent reports, a group's
    SE was the naive one, too small."""
    import random

    import pandas as pd

    from deniable.analysis import load, subgroups
    from deniable.analysis.from_counts import estimate_counts
    from tests.conftest import EXAMPLES

    survey = Survey.from_file(EXAMPLES / "panel.yaml")
    rng, layer = random.Random(8), SeededSource(9)
    teams = ["Sales", "Engineering", "Support"]
    rows = []
    for person in range(450):
        memo, burned = Memo.from_secret(rng.randbytes(32)), rng.random() < 0.2 + 0.15 * (person % 3)
        for wave in ("w1", "w2", "w3"):
            answers = {"team": teams[person % 3], "burnout": "yes" if burned else "no", "looking": "no",
                       "workload": rng.choice(["Barely", "Mostly", "Fully"])}
            rows.append({**survey.randomize(answers, rng=layer, memo=memo), "wave": wave})
    frame = pd.DataFrame(rows)
    groups = subgroups(load(frame, spec=survey), "burnout", "team")
    assert set(groups) == set(teams)
    mechanism = survey.questions["burnout"].mechanism
    for team, result in groups.items():
        alone = load(frame[frame["team"] == team], spec=survey).estimate("burnout")
        assert any(note.startswith("pooled over 3 waves") for note in result.notes)
        pd.testing.assert_frame_equal(result.table, alone.table, rtol=1e-12)
        assert result.fit.pvalue == pytest.approx(alone.fit.pvalue, rel=1e-12)
        naive = estimate_counts(mechanism, result.counts, 0.95, None, "burnout")
        assert (result.table["se"] > naive.table["se"]).all()
    ordinal = subgroups(load(frame, spec=survey), "workload", "team", level=0.9)
    for team, result in ordinal.items():
        alone = load(frame[frame["team"] == team], spec=survey).estimate("workload", level=0.9)
        pd.testing.assert_frame_equal(result.table, alone.table, rtol=1e-12)
        assert result.mean.ci == alone.mean.ci and result.mean.se == pytest.approx(alone.mean.se, rel=1e-12)


def _stable_panel(rng, layer, people: int, waves=("w1", "w2", "w3")):
    """The example pulse panel's people, each giving the same answers in every wave through their own memo (burnout
    0.2 to 0.5 by team; looking for a job 0.5 if burned out, else 0.2) and a public number of hours."""
    import pandas as pd

    from tests.conftest import EXAMPLES

    survey = Survey.from_file(EXAMPLES / "panel.yaml")
    spec = survey.to_dict()
    spec["questions"].append({"id": "hours", "type": "number", "text": "Hours?", "min": 0, "max": 80, "step": 1,
                              "privacy": "none"})
    survey = Survey.from_dict(spec)
    teams = ["Sales", "Engineering", "Support"]
    rows = []
    for person in range(people):
        memo = Memo.from_secret(rng.randbytes(32))
        burned = rng.random() < 0.2 + 0.15 * (person % 3)
        answers = {"team": teams[person % 3], "burnout": "yes" if burned else "no",
                   "looking": "yes" if rng.random() < (0.5 if burned else 0.2) else "no", "workload": "Mostly",
                   "hours": 40 + 10 * burned + rng.randrange(-5, 6)}
        for wave in waves:
            rows.append({**survey.randomize(answers, rng=layer, memo=memo), "wave": wave})
    return survey, pd.DataFrame(rows)


def test_models_of_a_panel_s_pooled_waves_bound_their_covariance_over_the_waves():
    """A logistic regression, a correlation and a linear regression over a panel's pooled waves read each response as
    another person, but a person's memoized reports in several waves are correlated: over 60 three-wave panels of
    people who kept their answers, a logistic intercept's stated SE was 0.094 where its estimates spread 0.178, a
    correlation's 0.107 for 0.168. The covariance of the responses' scores is now bounded over the waves (the sandwich
    with `Sample.over_waves`): over these 30 panels the stated SE is at least 0.8 of the spread (it was about 0.55)."""
    import random
    import warnings

    from deniable.analysis import correlation, linear, load, logistic
    from deniable.analysis.weighted import PANEL_BOUND

    rng, layer = random.Random(1), SeededSource(2)
    intercepts, intercept_ses, correlations, correlation_ses = [], [], [], []
    for _ in range(30):
        survey, frame = _stable_panel(rng, layer, 900)
        data = load(frame, spec=survey)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = logistic("burnout ~ 1", data)
        intercepts.append(float(fitted.params.iloc[0]))
        intercept_ses.append(float(fitted.bse.iloc[0]))
        found = correlation(data, "burnout", "looking")
        correlations.append(found.estimate)
        correlation_ses.append(found.se)
        assert PANEL_BOUND in fitted.sample and PANEL_BOUND in found.sample
    assert np.mean(intercept_ses) >= 0.8 * np.std(intercepts), (np.mean(intercept_ses), np.std(intercepts))
    assert np.mean(correlation_ses) >= 0.8 * np.std(correlations), (np.mean(correlation_ses), np.std(correlations))
    # one wave alone is not a panel's pooled figure: the model's own covariance, as before
    single = load(frame[frame["wave"] == "w1"], spec=survey)
    assert logistic("burnout ~ 1", single).sample == "simple random sample"
    assert correlation(single, "burnout", "looking").sample == "simple random sample"
    fitted = linear("hours ~ burnout", data)
    alone = linear("hours ~ burnout", load(frame.assign(wave="w1"), spec=survey))  # the same rows as one wave's
    assert PANEL_BOUND in fitted.sample and alone.sample == "simple random sample"
    assert float(fitted.bse["burnout[yes]"]) > 1.3 * float(alone.bse["burnout[yes]"])


def _split_ballot_panel(seed: int, people: int = 900):
    """(survey, its export-like frame): a panel of ``people`` in two teams, each asked a split-ballot yes/no (a third
    direct) in three waves through their memo, keeping their arm and answer."""
    import random

    import pandas as pd

    survey = Survey.from_dict({"id": "pulse", "title": "Pulse", "repeated": True, "questions": [
        {"id": "team", "type": "choice", "text": "Team?", "options": ["Sales", "Support"], "privacy": "none"},
        {"id": "took", "type": "yes_no", "text": "Took supplies?", "split_ballot": {"direct": "1/3"},
         "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]})
    rng, layer = random.Random(seed), SeededSource(seed + 1)
    rows = []
    for person in range(people):
        memo = Memo.from_secret(rng.randbytes(32))
        answers = {"team": ["Sales", "Support"][person % 2], "took": "yes" if rng.random() < 0.3 else "no"}
        for wave in ("w1", "w2", "w3"):
            sent = survey.randomize(answers, rng=layer, memo=memo)
            arm, report = sent["took"]["arm"], sent["took"]["report"]
            # as an export lays it out: the arm, and the direct answer or the randomized report in its own column
            rows.append({"team": sent["team"], "took.arm": arm, "took.direct": report if arm == "direct" else None,
                         "took": report if arm == "randomized" else None, "wave": wave})
    return survey, pd.DataFrame(rows)


def test_a_panel_s_split_ballot_bounds_both_arms_over_the_waves():
    """A panelist keeps their split-ballot arm in every wave (`Survey.arm_for`) and answers it alike, so both arms'
    pooled shares are correlated over the waves: the randomized arm's SE is the pooled bound, the direct arm's the bound
    Σ_w (n_w/N)·SE_w of its waves' binomial SEs, and the difference's SE their hypot (the arms are different people).
    Counted as independent reports the comparison's one-sided p was too small. A group's comparison likewise."""
    import pandas as pd

    from deniable.analysis import load, subgroups

    survey, frame = _split_ballot_panel(4)
    data = load(frame, spec=survey)
    table = data.estimate("took").split_ballot
    naive = load(frame[frame["wave"] == "w1"], spec=survey).estimate("took").split_ballot  # one wave: no bound
    per_wave = [load(frame[frame["wave"] == w], spec=survey).estimate("took").split_ballot.loc["direct"]
                for w in ("w1", "w2", "w3")]
    n = sum(row["n"] for row in per_wave)
    assert table.loc["direct", "se"] == pytest.approx(sum(row["n"] / n * row["se"] for row in per_wave), rel=1e-12)
    assert table.loc["randomized", "se"] == pytest.approx(data.estimate("took").table.loc["yes", "se"], rel=1e-12)
    assert table.loc["difference", "se"] == pytest.approx(np.hypot(table.loc["direct", "se"],
                                                                   table.loc["randomized", "se"]), rel=1e-12)
    # about √3 times one wave's, where counting 3 waves as independent reports would have given about 1/√3 of it
    assert table.loc["direct", "se"] == pytest.approx(naive.loc["direct", "se"], rel=0.15)
    assert table.loc["direct", "ci_low"] <= table.loc["direct", "estimate"] <= table.loc["direct", "ci_high"]
    assert table.loc["direct", "ci_high"] - table.loc["direct", "ci_low"] > 1.5 * 1.96 * table.loc["direct", "se"]
    for team, result in subgroups(data, "took", "team").items():
        rows_of = frame[frame["team"] == team]
        alone = load(rows_of, spec=survey).estimate("took").split_ballot
        pd.testing.assert_frame_equal(result.split_ballot, alone, rtol=1e-12)


def test_a_panel_s_markers_are_tested_wave_by_wave():
    """A panelist keeps their split-ballot arm (or compliance group) in every wave, so the markers pooled over three
    waves count each person three times, and their test against the design's draw was overdispersed: over 2,000
    simulated honest panels of 900 it flagged 122 (one in 16, not one in 1,000). Each wave's own test, the smallest p
    Bonferroni-corrected, flags 1 of them; a loaded panel's estimate carries that test."""
    from deniable.analysis import load
    from deniable.analysis.assignment import assignment_test, over_waves
    from deniable.analysis.fit import FLAG_P

    rng = np.random.default_rng(12)
    design = {"direct": 1 / 3, "randomized": 2 / 3}
    pooled_flags = wave_flags = 0
    for _ in range(2000):
        direct = rng.random(900) < 1 / 3  # each person's arm, kept in all three waves
        waves = [assignment_test("arm", {"direct": int(direct.sum()), "randomized": int((~direct).sum())}, design)] * 3
        pooled = assignment_test("arm", {"direct": 3 * int(direct.sum()), "randomized": 3 * int((~direct).sum())},
                                 design)
        pooled_flags += pooled.flagged
        wave_flags += over_waves(waves).flagged
    assert pooled_flags > 60 and wave_flags <= 4, (pooled_flags, wave_flags)
    assert FLAG_P == 0.001
    survey, frame = _split_ballot_panel(6)
    found = load(frame, spec=survey).estimate("took").assignment
    alone = [load(frame[frame["wave"] == wave], spec=survey).estimate("took").assignment for wave in ("w1", "w2", "w3")]
    assert found.pvalue == pytest.approx(min(1.0, 3 * min(test.pvalue for test in alone)), rel=1e-12)
    assert found.waves == 3 and "the smallest p of 3" in found.describe()
    assert found.counts == {name: sum(test.counts[name] for test in alone) for name in ("direct", "randomized")}


def test_a_panel_s_control_question_is_tested_wave_by_wave():
    """A known-share control in a panel: its pooled counts are overdispersed by one person's memoized waves, so its
    likelihood-ratio p is each wave's own, the smallest Bonferroni-corrected, as the verdict's interval (bounded over
    the waves) already allows for. On this honest panel (its estimate 0.037 by chance) the pooled counts' own p was
    0.12; wave by wave it is 0.95 (on another, 0.0003 against 0.035)."""
    import random

    import pandas as pd

    from deniable.analysis import load
    from deniable.analysis.estimation import _control

    survey = Survey.from_dict({"id": "pulse", "title": "Pulse", "repeated": True, "questions": [
        {"id": "freedonia", "type": "yes_no", "text": "Visited Freedonia?", "control": {"share": 0},
         "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]})
    rng, layer = random.Random(10), SeededSource(11)
    rows = []
    for _ in range(600):
        memo = Memo.from_secret(rng.randbytes(32))
        rows += [{**survey.randomize({"freedonia": "no"}, rng=layer, memo=memo), "wave": w} for w in ("w1", "w2", "w3")]
    frame = pd.DataFrame(rows)
    pooled = load(frame, spec=survey).estimate("freedonia")
    alone = [load(frame[frame["wave"] == w], spec=survey).estimate("freedonia").control["p_value"]
             for w in ("w1", "w2", "w3")]
    assert pooled.control["p_value"] == pytest.approx(min(1.0, 3 * min(alone)), rel=1e-12)
    assert pooled.control["recovered"] and "each wave's own, the smallest of 3, Bonferroni" in pooled.notes[0]
    counted_once, _ = _control(pooled, survey.questions["freedonia"])  # the pooled counts as independent reports
    assert counted_once["p_value"] < 0.2 and pooled.control["p_value"] > 0.9
