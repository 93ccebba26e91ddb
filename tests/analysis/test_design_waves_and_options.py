"""A repeated survey's waves as domains of a clustered sample: the change between two waves, whose respondents are
the same people nested in the same PSUs, gets the joint linearization within PSUs, which counts the correlation
memoization gives one person's two reports (the design-free SE can only bound it)."""

import random

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import SampleDesign, load
from deniable.client import Survey
from deniable.client.memo import Memo
from tests.conftest import EXAMPLES, SeededSource

SURVEY = Survey.from_file(EXAMPLES / "panel.yaml")
CHANGE = 0.1


def _panel(rng, layer, psus=30, people=12):
    """30 PSUs of 12 panelists; a PSU's burnout share is 0.15-0.35 in the first wave and 0.1 more in the second; a
    panelist burned out in the first wave still is in the second. Each answers through their own memo. A panelist's
    weight (column w) is 1, 2 or 3 by PSU."""
    rows = []
    for psu in range(psus):
        first = 0.15 + 0.2 * rng.random()
        for _ in range(people):
            memo, u = Memo.from_secret(rng.randbytes(32)), rng.random()
            for wave, share in (("w1", first), ("w2", first + CHANGE)):
                answers = {"team": "Sales", "burnout": "yes" if u < share else "no", "looking": "no",
                           "workload": "Mostly"}
                rows.append({**SURVEY.randomize(answers, rng=layer, memo=memo), "wave": wave, "psu": psu,
                             "w": 1 + psu % 3})
    return load(pd.DataFrame(rows), spec=SURVEY)


@pytest.mark.slow
def test_the_design_based_change_between_waves_covers_and_counts_the_panel_s_correlation():
    """80 seeded panels (scripts-free; docs/analysis.md gives 400): the design-based 95% interval of the change covers
    in at least 72, and its SE is well under the design-free bound's (which treats the waves as independent)."""
    rng, layer = random.Random(3), SeededSource(4)
    covered, design_se, bound_se = 0, [], []
    for _ in range(80):
        data = _panel(rng, layer)
        change = data.compare_waves("burnout", "w1", "w2", answer="yes", design=SampleDesign(clusters="psu"))
        bound = data.compare_waves("burnout", "w1", "w2", answer="yes")
        covered += change.ci.low <= CHANGE <= change.ci.high
        design_se.append(change.se)
        bound_se.append(bound.se)
        assert "joint linearization" in change.note and "conservative" in bound.note
    assert covered >= 72, covered
    assert np.mean(design_se) < 0.7 * np.mean(bound_se)


def test_a_multi_select_question_is_estimated_option_by_option_with_the_design():
    """Each option is a yes/no of its own through the option's bit channel: its unbiased share is the weighted mean of
    the bit mapped through the channel, with the ratio's linearized SE over PSU totals (computed here by hand);
    with each respondent a PSU of their own and equal weights, the simple random sample's figures ×√(n/(n − 1))."""
    from deniable.analysis import estimate

    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    rng = random.Random(1)
    rows = []
    for i in range(1200):
        answers = {"dodged": "no", "region": "North", "cash": "Salary", "fairness": "Agree", "hours": 10,
                   "undeclared": [o for o in ("Tips", "Rental income") if rng.random() < 0.3 + 0.2 * (i % 40 < 20)]}
        rows.append({**survey.randomize(answers, rng=SeededSource(i)), "psu": i // 30, "w": 1 + i % 3})
    frame = pd.DataFrame(rows)
    data = load(frame, spec=survey)
    result = estimate(data, "undeclared", design=SampleDesign(weights="w", clusters="psu"))
    mechanism = survey.questions["undeclared"].mechanism
    p, q = float(mechanism.keep_one), float(mechanism.flip_zero)
    w = frame["w"].to_numpy(float)
    for option in mechanism.options:
        bits = frame["undeclared"].map(lambda report: option in report).to_numpy(float)
        rate = w @ bits / w.sum()
        totals = pd.Series(w * (bits - rate) / w.sum()).groupby(frame["psu"]).sum().to_numpy()
        se = np.sqrt(len(totals) / (len(totals) - 1) * ((totals - totals.mean()) ** 2).sum()) / (p - q)
        assert result.table.loc[option, "unbiased"] == pytest.approx((rate - q) / (p - q), abs=1e-12)
        assert result.table.loc[option, "unbiased_se"] == pytest.approx(se, rel=1e-9)
        row = result.table.loc[option]
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
    assert result.design_df == 39 and result.design_effect > 1
    alone = estimate(data, "undeclared", design=SampleDesign(clusters=np.arange(len(frame))))
    plain = estimate(data, "undeclared")
    assert alone.table["unbiased_se"].to_numpy() == pytest.approx(
        plain.table["unbiased_se"].to_numpy() * np.sqrt(len(frame) / (len(frame) - 1)), rel=1e-9)
    # One option compared between two groups: with each respondent their own PSU, the independent groups' SE.
    from deniable.analysis import compare

    frame["half"] = np.where(np.arange(len(frame)) % 40 < 20, "North", "South")
    data = load(frame.assign(region=frame.pop("half")), spec=survey)
    designed = compare(data, "undeclared", "region", "North", "South", answer="Tips",
                       design=SampleDesign(clusters=np.arange(len(frame))))
    independent = compare(data, "undeclared", "region", "North", "South", answer="Tips")
    assert designed.difference == pytest.approx(independent.difference, abs=1e-9)
    assert designed.se == pytest.approx(independent.se, rel=2e-3)
    assert "joint linearization" in designed.note


@pytest.mark.parametrize("question_id", ["dodged", "cheated"])
def test_a_split_ballot_s_arms_are_compared_as_domains_of_the_sample(question_id):
    """The direct arm's weighted share, the randomized arm's design-based 'yes' and their difference, whose SE is the
    two arms' influences summed within PSUs: with each respondent a PSU of their own and equal weights, the simple
    random sample's comparison (to the n/(n − 1) of the design-based SEs); with clusters, their own."""
    from deniable.analysis import estimate
    from deniable.client.reports import arm_column, direct_column, group_column

    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    rng, source = random.Random(9), SeededSource(9)
    rows = []
    for i in range(4000):
        truth = "yes" if rng.random() < 0.25 + 0.1 * (i % 50 < 25) else "no"
        report = survey.simulate({question_id: truth}, source)[question_id]  # draws the arm as a device would
        arm, inner = survey.questions[question_id].split_ballot.unwrap(report)
        row = {arm_column(question_id): arm, direct_column(question_id): inner if arm == "direct" else "",
               question_id: "" if arm == "direct" else (inner["report"] if isinstance(inner, dict) else inner),
               "psu": i // 50}
        if isinstance(inner, dict):
            row[group_column(question_id)] = inner["group"]
        rows.append(row)
    data = load(pd.DataFrame(rows), spec=survey)
    plain = estimate(data, question_id).split_ballot
    alone = estimate(data, question_id, design=SampleDesign(clusters=np.arange(4000))).split_ballot
    assert alone.loc["direct", "estimate"] == pytest.approx(plain.loc["direct", "estimate"], abs=1e-12)
    assert alone.loc["difference", "estimate"] == pytest.approx(plain.loc["difference", "estimate"], abs=1e-9)
    assert alone.loc["direct", "se"] == pytest.approx(plain.loc["direct", "se"], rel=2e-3)
    assert alone.loc["difference", "se"] == pytest.approx(plain.loc["difference", "se"], rel=5e-3)
    clustered = estimate(data, question_id, design=SampleDesign(clusters="psu"))
    table = clustered.split_ballot
    assert list(table.index) == ["direct", "randomized", "difference"] and 0 <= table.loc["difference", "p_value"] <= 1
    assert table.loc["randomized", "estimate"] == pytest.approx(clustered.table.loc["yes", "estimate"], abs=1e-12)
    for arm in table.index:
        assert table.loc[arm, "ci_low"] <= table.loc[arm, "estimate"] <= table.loc[arm, "ci_high"]
    assert any("arms are domains of one sample" in note for note in clustered.notes)


@pytest.mark.parametrize("question", ["burnout", "workload"])
def test_a_design_based_estimate_of_a_panel_tests_each_wave_s_reports(question):
    """One person's memoized reports in two waves are correlated; each wave's are one per person. So the design-based
    estimate of a panel tests each wave's own reports and takes the smallest p, Bonferroni-corrected: the pooled
    plain estimate's test (`fit.over_waves`), not the test of every wave's reports counted together."""
    from deniable.analysis.fit import over_waves, test_counts
    from deniable.client.reports import WAVES

    data = _panel(random.Random(5), SeededSource(6))
    designed, plain = data.estimate(question, design=SampleDesign(clusters="psu")), data.estimate(question)
    mechanism = SURVEY.questions[question].mechanism
    reports = [*mechanism.reports]
    frame = data.design_frame(question, [WAVES])
    per_wave = {wave: test_counts(mechanism, np.bincount([reports.index(r) for r in frame.loc[frame[WAVES] == wave,
                                                                                             question]],
                                                        minlength=len(reports)))
                for wave in ("w1", "w2")}
    expected = over_waves(per_wave)
    assert "the smallest p of 2 waves" in expected.method
    for result in (designed, plain):
        assert (result.fit.method, result.fit.df) == (expected.method, expected.df)
        assert result.fit.pvalue == pytest.approx(expected.pvalue, rel=1e-9)


def test_a_panel_pooled_by_a_design_without_clusters_is_bounded_over_its_waves():
    """Without clusters each response is a PSU of its own, so a person's memoized reports in two waves counted as
    independent and the pooled design-based SE was the naive one (0.0405 where the bound is 0.057). Now every
    covariance of the sample is bounded over the waves (`Sample.over_waves`): a share's SE is about the bound from the
    waves' own design-based SEs, Σ_w (W_w/W)·SE_w (the two differ in the centring and the weight of each wave's
    influence, and in the one p_w for all shares), the design effect and effective n include it, so the interval
    widens to match. With clusters holding the panelists, the linearization within PSUs counts the correlation."""
    from deniable.analysis.from_counts import estimate_counts
    from deniable.analysis.weighted import PANEL_BOUND

    data = _panel(random.Random(3), SeededSource(4))
    naive = estimate_counts(SURVEY.questions["burnout"].mechanism, data.question_counts("burnout"), 0.95, None,
                            "burnout").table.loc["yes"]
    for design in (SampleDesign(weights="w"), SampleDesign(strata="team")):
        pooled, waves = data.estimate("burnout", design=design), data.by_wave("burnout", design=design)
        # every panelist answers both waves with the same weight: each wave holds half of it
        bound = 0.5 * waves["w1"].table.loc["yes", "se"] + 0.5 * waves["w2"].table.loc["yes", "se"]
        row = pooled.table.loc["yes"]
        assert row["se"] == pytest.approx(bound, rel=0.01)
        assert pooled.notes[0] == PANEL_BOUND and pooled.design_effect > 1.8
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
        assert row["se"] > 1.3 * naive["se"] and row["ci_high"] - row["ci_low"] > 1.3 * (naive["ci_high"] - naive["ci_low"])
        for wave in waves.values():  # a wave's own domain is not bounded: its design effect is the design's alone
            assert PANEL_BOUND not in wave.notes and wave.design_effect < 1.3
    unweighted = data.estimate("burnout", design=SampleDesign(strata="team")).table.loc["yes", "se"]
    assert unweighted == pytest.approx(data.estimate("burnout").table.loc["yes", "se"], rel=0.01)  # the plain bound
    clustered = data.estimate("burnout", design=SampleDesign(clusters="psu"))
    assert PANEL_BOUND not in clustered.notes


def test_a_multi_select_question_of_a_panel_pooled_by_a_design_without_clusters_is_bounded_over_its_waves():
    """Each option's SE and design effect are bounded over the waves, and its interval at its effective n widens with
    them; with clusters holding the panelists it is the linearization."""
    from deniable.analysis import estimate
    from deniable.analysis.weighted import PANEL_BOUND

    survey = Survey.from_dict({"id": "pulse", "title": "Pulse", "repeated": True, "questions": [
        {"id": "perks", "type": "multi_select", "text": "Which did you use?", "options": ["Gym", "Lunch", "Bike"],
         "privacy": {"design": "unary", "epsilon": 2, "variant": "optimized"}}]})
    rng, layer = random.Random(7), SeededSource(8)
    rows = []
    for person in range(500):
        memo = Memo.from_secret(rng.randbytes(32))
        used = [option for option, share in (("Gym", 0.3), ("Lunch", 0.6), ("Bike", 0.1)) if rng.random() < share]
        for wave in ("w1", "w2"):
            rows.append({**survey.randomize({"perks": used}, rng=layer, memo=memo), "wave": wave,
                         "psu": person // 10, "w": 1 + person % 2})
    frame = pd.DataFrame(rows)
    data = load(frame, spec=survey)
    pooled, waves = estimate(data, "perks", design=SampleDesign(weights="w")), data.by_wave("perks",
                                                                                            design=SampleDesign(weights="w"))
    # the same reports as two separate samples of one wave each (what the pooled figure counted them as)
    independent = estimate(load(frame.assign(wave="w1"), spec=survey), "perks", design=SampleDesign(weights="w"))
    for option in ("Gym", "Lunch", "Bike"):
        bound = 0.5 * waves["w1"].table.loc[option, "se"] + 0.5 * waves["w2"].table.loc[option, "se"]
        row, naive = pooled.table.loc[option], independent.table.loc[option]
        assert row["se"] == pytest.approx(bound, rel=0.02) and row["se"] > 1.2 * naive["se"]
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
        assert row["ci_high"] - row["ci_low"] > 1.2 * (naive["ci_high"] - naive["ci_low"])
    assert PANEL_BOUND in pooled.notes
    clustered = estimate(data, "perks", design=SampleDesign(weights="w", clusters="psu"))
    assert PANEL_BOUND not in clustered.notes


def test_a_design_based_model_of_a_panel_without_clusters_is_bounded_over_its_waves():
    """A logistic regression and a correlation with a design that has no clusters read the panel's waves as
    independent responses unless bounded: their samples say so, and the bound widens the SE (the same rows read as one
    wave's do not)."""
    from deniable.analysis import correlation, logistic
    from deniable.analysis.weighted import PANEL_BOUND

    data = _panel(random.Random(3), SeededSource(4))
    frame = pd.concat([data.design_frame("burnout", ["looking", "w", "psu"]),
                       data.design_frame("burnout", ["@wave"])[["@wave"]]], axis=1)
    as_one_wave = load(frame.drop(columns="@wave").reset_index(drop=True).assign(wave="w1"), spec=SURVEY)
    design = SampleDesign(weights="w")
    bounded, single = logistic("burnout ~ 1", data, design=design), logistic("burnout ~ 1", as_one_wave, design=design)
    assert PANEL_BOUND in bounded.sample and PANEL_BOUND not in single.sample
    assert float(bounded.bse.iloc[0]) > 1.3 * float(single.bse.iloc[0])
    assert float(bounded.params.iloc[0]) == pytest.approx(float(single.params.iloc[0]), rel=1e-9)
    found = correlation(data, "burnout", "looking", design=design)
    assert PANEL_BOUND in found.sample
    assert found.se > 1.3 * correlation(as_one_wave, "burnout", "looking", design=design).se
    clustered = logistic("burnout ~ 1", data, design=SampleDesign(weights="w", clusters="psu"))
    assert PANEL_BOUND not in clustered.sample
