"""Planning with the sample design: a stratified two-stage sample planned from its frame gives the half-width its
design-based estimates realise, where a simple random sample's plan promises one too narrow by √deff.

The sample: 2 strata (weights 1 and 3) × 20 PSUs × 15 respondents, every invitation answered; each PSU's share of
"yes" drawn from a Beta with mean ½ and intraclass correlation ρ = 0.1; each answer randomized by the demo's forced
response (truth ½, forced yes ¼, no ¼). For this model the plan's figure is exact, not an approximation: the weighted
share's variance is Σ W_h² σ²(1 + (b − 1)ρκ)/n_h with κ = a²θ(1 − θ)/(λ(1 − λ)) = ¼ (a = ½, θ = λ = ½), so
deff = 1.25 × (1 + 14 × 0.1 × 0.25) = 1.6875. The realised spread is measured on simulated surveys by the closed-form
estimate (λ̂_w − ¼)/½, an independent method, and deniable's own design-based estimates are checked beside it."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from deniable.analysis import AnalysisError, SampleDesign, estimate, load
from deniable.analysis.planned_design import ASSUMED_ICC, planned_design
from deniable.analysis.plans import plan
from deniable.client import Survey
from deniable.server.cli import main

STRATA = {"A": 1.0, "B": 3.0}
PSUS, PER_PSU, RHO = 20, 15, 0.1
N = len(STRATA) * PSUS * PER_PSU


def _survey() -> Survey:
    return Survey.from_dict({
        "id": "clinics", "title": "Clinics",
        "questions": [{"id": "dodged", "type": "yes_no", "text": "Did you?",
                       "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}],
        "sample": {"frame": ["stratum", "psu", "weight"], "weights": "weight", "strata": "stratum",
                   "clusters": "psu"}})


def _frame() -> list[dict]:
    return [{"stratum": s, "psu": f"{s}{p}", "weight": str(w)} for s, w in STRATA.items() for p in range(PSUS)
            for _ in range(PER_PSU)]


def _surveys(rng, count: int):
    """``count`` simulated surveys' reports (1 = "yes"), a row each, in the frame's row order."""
    shape = (1 / RHO - 1) / 2  # Beta(a, a): mean ½, ICC 1 / (2a + 1)
    shares = rng.beta(shape, shape, size=(count, len(STRATA) * PSUS))
    answers = rng.random((count, N)) < np.repeat(shares, PER_PSU, axis=1)
    coin = rng.random((count, N))
    return np.where(coin < 0.5, answers, coin < 0.75).astype(int)  # truth ½, then forced yes ¼, forced no ¼


def test_a_two_stage_sample_planned_from_its_frame_gives_the_half_width_its_estimates_realise():
    survey = _survey()
    design = planned_design(survey, N, frame=_frame(), icc=RHO)
    assert design.weighting == pytest.approx(1.25) and design.per_psu == pytest.approx(PER_PSU)
    planned = plan(survey, N, design=design)[0]
    assert planned.design_effect == pytest.approx(1.25 * (1 + 14 * RHO * 0.25), rel=1e-9)
    simple = plan(survey, N)[0]  # the spec alone: the design is said to be left out
    assert plan(survey, N).design.unused and "leaves the design out" in plan(survey, N).design.words

    reports = _surveys(np.random.default_rng(20261128), 4000)
    weights = np.repeat([w for w in STRATA.values()], PSUS * PER_PSU)
    estimates = (reports @ weights / weights.sum() - 0.25) / 0.5
    spread = estimates.std(ddof=1)
    deviations = estimates - estimates.mean()
    kurtosis = np.mean(deviations**4) / np.mean(deviations**2) ** 2
    error = math.sqrt((kurtosis - 1) / (4 * len(estimates)))  # the SD's relative Monte Carlo error (about 1.1%)
    assert abs(estimates.mean() - 0.5) < 4 * spread / math.sqrt(len(estimates))
    # Planned with the design: within 4 Monte Carlo errors of the realised spread (measured 1.009 of it: ±10.4 points planned, ±10.3 realised).
    assert abs(planned.se / spread - 1) < 4 * error, (planned.se, spread, error)
    assert planned.margin == pytest.approx(1.959964 * planned.se, rel=1e-5)
    # A simple random sample's plan promises √1.6875 = 1.30 times too narrow an interval.
    assert spread / simple.se > 1.2
    assert planned.n_for_margin == math.ceil(simple.n_for_margin * planned.design_effect - 1e-9)

    # deniable's design-based estimates of some of those surveys: their SE and realised design effect agree with the
    # plan (each survey's deff is an estimate on 38 degrees of freedom: the mean over 40 within 4 of its MC errors).
    frame = pd.DataFrame(_frame())
    effects, ses = [], []
    for row in reports[:40]:
        data = load(frame.assign(dodged=np.where(row == 1, "yes", "no")), spec=survey)
        result = estimate(data, "dodged", design=SampleDesign.of(survey))
        assert result.table.at["yes", "estimate"] == pytest.approx(
            np.clip((row @ weights / weights.sum() - 0.25) / 0.5, 0, 1), abs=1e-9)
        effects.append(result.design_effect)
        ses.append(result.table.at["yes", "se"])
    assert abs(np.mean(effects) - planned.design_effect) < 4 * np.std(effects, ddof=1) / math.sqrt(len(effects))
    assert abs(np.mean(ses) / planned.se - 1) < 4 * np.std(ses, ddof=1) / np.mean(ses) / math.sqrt(len(ses)) + 0.02


def test_what_a_plan_assumes_is_said_and_bad_figures_are_refused():
    survey = _survey()
    assumed = planned_design(survey, N, assumed=2.0)
    assert assumed.for_figure(0.01) == 2.0 and "assumed design effect of 2" in assumed.words
    assert plan(survey, N, design=assumed)[0].se == pytest.approx(plan(survey, N)[0].se * math.sqrt(2), rel=1e-12)
    unstated = planned_design(survey, N, frame=_frame())
    assert unstated.rho == ASSUMED_ICC and f"ρ = {ASSUMED_ICC:g} the answers' ICC assumed: state yours" in unstated.words
    # A direct question takes the whole clustering; a randomized one a diluted share of it.
    assert unstated.for_figure(1.0) == pytest.approx(unstated.effect)
    assert 1.25 < unstated.for_figure(0.25) < unstated.effect
    # Pairs of (row, invitations), as the stored frame gives them, are the same frame.
    counted = [({"stratum": s, "psu": f"{s}{p}", "weight": w}, PER_PSU) for s, w in STRATA.items() for p in range(PSUS)]
    assert planned_design(survey, N, frame=counted, icc=RHO) == planned_design(survey, N, frame=_frame(), icc=RHO)
    # Planned for fewer respondents than invitations, a PSU holds fewer of them.
    assert planned_design(survey, N // 3, frame=_frame(), icc=RHO).per_psu == pytest.approx(PER_PSU / 3)
    for bad, field in [({"assumed": 0}, "design_effect"), ({"assumed": True}, "design_effect"),
                       ({"icc": 1.5, "frame": _frame()}, "icc"),
                       ({"frame": [{**row, "weight": "none"} for row in _frame()]}, "frame"), ({"frame": []}, "frame")]:
        with pytest.raises(AnalysisError) as refused:
            planned_design(survey, N, **bad)
        assert refused.value.field == field
    plain = Survey.from_dict({**survey.to_dict(), "sample": None})
    assert planned_design(plain, N).effect == 1 and not planned_design(plain, N).unused
    with pytest.raises(AnalysisError, match="no clusters"):
        planned_design(plain, N, icc=0.1)


def test_survey_check_plans_with_the_frame_it_is_given(tmp_path):
    runner = CliRunner()

    spec = tmp_path / "clinics.json"
    spec.write_text(json.dumps(_survey().to_dict()))
    frame = tmp_path / "frame.csv"
    frame.write_text("stratum,psu,weight\n" + "".join(f"{r['stratum']},{r['psu']},{r['weight']}\n" for r in _frame()))
    alone = runner.invoke(main, ["survey", "check", str(spec), "--n", str(N)])
    assert alone.exit_code == 0 and "this plan leaves the design out" in alone.output, alone.output
    sized = runner.invoke(main, ["survey", "check", str(spec), "--n", str(N), "--frame", str(frame), "--icc", "0.1"])
    assert sized.exit_code == 0, sized.output
    assert "ρ = 0.1 the answers' ICC given" in sized.output and "design effect 1.69" in sized.output
    shown = json.loads(runner.invoke(main, ["survey", "check", str(spec), "--n", str(N), "--frame", str(frame),
                                            "--icc", "0.1", "--json"]).output)
    assert shown["design"]["effect"] == pytest.approx(1.25 * (1 + 14 * RHO))  # a direct question's
    assert shown["questions"]["dodged"]["planning"]["design_effect"] == pytest.approx(1.6875)
    lonely = runner.invoke(main, ["survey", "check", str(spec), "--icc", "0.1"])
    assert lonely.exit_code == 2 and "--icc goes with --frame" in lonely.output
    frame.write_text("stratum,psu,weight\nA,A1,heavy\n")
    bad = runner.invoke(main, ["survey", "check", str(spec), "--frame", str(frame)])
    assert bad.exit_code == 2 and "'heavy'" in bad.output and "Traceback" not in bad.output
