"""A frame row leaves the database only when answers, not just invitations, are enough to hide in: a cell answered
fewer than five times is released merged with its stratum's other small cells (a PSU of their own, the pool's mean
weight, covariates withheld), or joined to its stratum's smallest released cell, or withheld. The red team's setting,
40 cells of 5 invitations answered at random, singled out 29% of respondents at a 20% response rate; released, none."""

import collections
import random

import pandas as pd
import pytest

from deniable import storage
from deniable.analysis import SampleDesign, estimate, load
from deniable.server.cli import main
from deniable.storage.release import MERGED_PSU, RELEASE_AT, expected_merging, release
from tests.conftest import SeededSource
from tests.server.conftest import ANSWERS
from tests.server.test_frame import _framed_survey, issue_with_frame

SAMPLE = {"frame": ["stratum", "psu", "weight", "area"], "weights": "weight", "strata": "stratum", "clusters": "psu"}


def test_the_release_rule_merges_joins_and_withholds_and_every_released_row_has_five_answers():
    cells = {0: {"stratum": "A", "psu": "a1", "weight": 2.0, "area": "x"},   # 6 answers: as issued
             1: {"stratum": "A", "psu": "a2", "weight": 2.0, "area": "y"},   # 2 answers ┐ pooled: 2 + 3 = 5, merged
             2: {"stratum": "A", "psu": "a3", "weight": 4.0, "area": "z"},   # 3 answers ┘ (mean weight 3.2)
             3: {"stratum": "B", "psu": "b1", "weight": 1.0, "area": "x"},   # 7 answers: as issued
             4: {"stratum": "B", "psu": "b2", "weight": 1.0, "area": "y"},   # 5 answers: as issued, the smaller
             5: {"stratum": "B", "psu": "b3", "weight": 1.0, "area": "z"},   # 1 answer: joins b2
             6: {"stratum": "C", "psu": "c1", "weight": 9.0, "area": "x"},   # 2 answers, alone in C: withheld
             7: {"stratum": "C", "psu": "c2", "weight": 9.0, "area": "y"}}   # never answered
    answers = {0: 6, 1: 2, 2: 3, 3: 7, 4: 5, 5: 1, 6: 2}
    released = release(SAMPLE, cells, answers)
    assert released.rows[0] == cells[0] and released.rows[3] == cells[3] and released.rows[4] == cells[4]
    assert released.rows[1] == released.rows[2] == {"stratum": "A", "psu": f"{MERGED_PSU} 1", "weight": 3.2,
                                                    "area": None}
    assert released.rows[5] == cells[4]
    assert released.rows[6] is None and released.rows[7] is None
    assert released.counts == {"as issued": 18, "merged": 5, "joined": 1, "withheld": 2}
    carried = collections.Counter()
    for cell, count in answers.items():
        if released.rows[cell] is not None:
            carried[tuple(sorted(released.rows[cell].items()))] += count
    assert min(carried.values()) >= RELEASE_AT
    assert "5 answers in merged PSUs" in released.describe() and "2 answers without a frame row" in released.describe()
    assert release(SAMPLE, {0: cells[0]}, {0: 6}).describe() == ""


def _red_team_rows():
    """40 cells of 5 invitations: 4 strata of 10 PSUs, a covariate per PSU (the red team's setting)."""
    return [{"stratum": f"S{h}", "psu": f"S{h}P{p}", "weight": str(10 + h), "area": f"area-{p}"}
            for h in range(4) for p in range(10) for _ in range(5)]


def _singled_out(frame: pd.DataFrame, columns) -> float:
    """The share of responses alone in their combination of the frame's columns (missing values as a value)."""
    keys = pd.Series(["|".join(map(str, values)) for values in frame[columns].itertuples(index=False)],
                     index=frame.index)
    return float((keys.map(keys.value_counts()) == 1).mean())


@pytest.mark.both_engines
@pytest.mark.parametrize("rate", [0.2, 0.4, 0.6])
def test_no_released_frame_row_singles_out_a_respondent_at_any_response_rate(db_path, runner, tmp_path, rate):
    survey = _framed_survey()
    rows = _red_team_rows()
    issued, tokens = issue_with_frame(db_path, runner, tmp_path, survey, rows)
    assert "Expected by response rate: at 20%, about" in issued.stderr  # said before anyone answers
    rng, coins = random.Random(int(rate * 100)), SeededSource(7)
    answered = [i for i in range(len(tokens)) if rng.random() < rate]
    with storage.Store(db_path) as store:
        for i in answered:
            store.submit("tax", survey.hash, f"key-{i:04d}", survey.randomize(ANSWERS, rng=coins), tokens[i])
    issued_frame = pd.DataFrame([rows[i] for i in answered])
    columns = ["stratum", "psu", "weight", "area"]
    before = _singled_out(issued_frame, columns)
    exported = runner.invoke(main, ["export", "tax", "--db", db_path])
    assert exported.exit_code == 0, exported.output
    export = pd.read_csv(__import__("io").StringIO(exported.stdout), dtype=str, keep_default_na=False)
    assert len(export) == len(answered)
    after = _singled_out(export, columns)
    data = load(db=db_path, survey_id="tax")
    loaded = _singled_out(data.auxiliary().reindex(columns=columns), columns)
    assert after == 0 and loaded == 0, (before, after, loaded)
    if rate == 0.2:
        assert before > 0.15  # the red team's 29% in their draw; here this draw's
        shown = runner.invoke(main, ["survey", "show", "tax", "--db", db_path])
        assert "Released: frame rows judged by answers (at least 5 a row)" in shown.output
    # The design still estimates on the released rows (merged PSUs are PSUs of their stratum; at 20% a stratum of 50
    # invitations may keep a single one, centred at the grand mean as R's survey.lonely.psu = "adjust" does)
    design = SampleDesign(weights="weight", strata="stratum", clusters="psu", lonely_psu="adjust")
    result = estimate(data, "dodged", design=design)
    assert result.design_df >= 1 and (result.table["se"] > 0).all()
    print(f"\n[frame release] rate {rate:.0%}: {len(answered)} answers; singled out as issued {before:.1%}, "
          f"released {after:.1%}")


def test_the_expected_merging_is_the_binomial_chance_of_one_to_four_answers():
    cells, share = expected_merging([5] * 40, 0.2)
    # P(1 ≤ Bin(5, 0.2) ≤ 4) = 1 − 0.8⁵ − 0.2⁵
    assert cells == pytest.approx(40 * (1 - 0.8**5 - 0.2**5))
    assert 0 < share < 1 and expected_merging([5] * 40, 1.0) == (0.0, 0.0)
