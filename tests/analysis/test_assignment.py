"""The public markers are tested against the design's draw on every estimate: respondents who reload until shown
the split-ballot arm or the cheating-detection group they like are flagged, honest draws are not (seeded)."""

import random

import pandas as pd
import pytest

from deniable.analysis import estimate, load
from deniable.client import Survey
from deniable.client.reports import arm_column, direct_column, group_column
from tests.conftest import SeededSource

SPLIT = {"id": "s", "title": "t", "questions": [
    {"id": "dodged", "type": "yes_no", "text": "Dodged?", "split_ballot": {"direct": "1/4"},
     "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]}
CHEATING = {"id": "c", "title": "t", "questions": [
    {"id": "cheated", "type": "yes_no", "text": "Cheated?", "privacy": {"design": "cheating_detection", "groups": {
        "a": {"yes": "1/3", "randomizer": "Birthday in January to April: yes."},
        "b": {"yes": "2/3", "randomizer": "Birthday in January to August: yes."}}}}]}


def _split_ballot(reload_direct: bool, seed: int):
    """6,000 honest respondents; with ``reload_direct`` those shown the direct arm reload once in three and are
    shown a new draw (the simulation that gave an arm share of 0.184 for 0.25)."""
    survey = Survey.from_dict(SPLIT)
    split, rng, source = survey.questions["dodged"].split_ballot, random.Random(seed), SeededSource(seed)
    rows = []
    for _ in range(6000):
        arm = split.assign_arm(source)
        if reload_direct and arm == "direct" and rng.random() < 1 / 3:
            arm = split.assign_arm(source)
        truth = "yes" if rng.random() < 0.2 else "no"
        report = survey.randomize({"dodged": truth}, source, arms={"dodged": arm})["dodged"]
        rows.append({arm_column("dodged"): arm, direct_column("dodged"): report["report"] if arm == "direct" else "",
                     "dodged": "" if arm == "direct" else report["report"]})
    return load(pd.DataFrame(rows), spec=survey)


@pytest.mark.parametrize("reload_direct", [False, True])
def test_a_split_ballot_whose_arms_were_chosen_is_flagged(reload_direct):
    result = estimate(_split_ballot(reload_direct, 11), "dodged")
    test = result.assignment
    assert test is not None and test.flagged == reload_direct, test
    if reload_direct:
        assert result.notes[0].startswith("ASSIGNMENT FAILED: the arms were not drawn as the design draws them")
        assert "reloaded" in result.notes[0] and 0.18 < test.counts["direct"] / 6000 < 0.2
    else:
        assert not any(note.startswith("ASSIGNMENT FAILED") for note in result.notes)


@pytest.mark.parametrize("reload_group", [False, True])
def test_cheating_detection_whose_groups_were_chosen_is_flagged(reload_group):
    """Those shown group b (asked to say yes more often) reload once in three."""
    survey = Survey.from_dict(CHEATING)
    mechanism = survey.questions["cheated"].mechanism
    rng, source = random.Random(5), SeededSource(5)
    rows = []
    for _ in range(6000):
        group = mechanism.assign_group(source)
        if reload_group and group == "b" and rng.random() < 1 / 3:
            group = mechanism.assign_group(source)
        rows.append({group_column("cheated"): group, "cheated": "yes" if rng.random() < 0.5 else "no"})
    result = estimate(load(pd.DataFrame(rows), spec=survey), "cheated")
    assert result.assignment.flagged == reload_group, result.assignment
