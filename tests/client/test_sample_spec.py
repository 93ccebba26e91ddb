"""A spec's ``sample:``: roles name public questions or declared frame columns; a frame column is named apart from
the questions and an export's own columns, and never like contact data."""

import pytest

from deniable.client import SpecError, Survey
from deniable.client.sample import frame_roles
from tests.conftest import EXAMPLES

SPEC = Survey.from_file(EXAMPLES / "tax.yaml").to_dict()


def test_a_frame_and_roles_that_name_its_columns_or_public_questions():
    survey = Survey.from_dict({**SPEC, "sample": {"frame": ["stratum", "psu", "w", "area"], "weights": "w",
                                                  "strata": "stratum", "clusters": "psu"}})
    assert frame_roles(survey.sample) == {"stratum": "strata", "psu": "clusters", "w": "weights", "area": None}
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash
    assert Survey.from_dict({**SPEC, "sample": {"frame": ["area"]}}).sample == {"frame": ["area"]}
    assert Survey.from_dict({**SPEC, "sample": {"strata": "region"}}).sample == {"strata": "region"}


@pytest.mark.parametrize("sample, words", [
    ({"frame": ["email"], "strata": "email"}, "'email' is named like contact data"),
    ({"frame": ["home_address"]}, "named like contact data"),
    ({"frame": ["first_name"]}, "named like contact data"),
    ({"frame": ["dodged"]}, "'dodged' is a question of this survey"),
    ({"frame": ["received_on"]}, "an export's own column"),
    ({"frame": ["a", "a"]}, "'a' is listed twice"),
    ({"frame": "stratum"}, "survey.sample.frame: a list of column names"),
    ({"frame": ["bad name"]}, "survey.sample.frame[0]: must be 1-64 letters"),
    ({"weights": "nowhere"}, "survey.sample.weights: 'nowhere' is not a question of this survey"),
    ({"frame": ["psu"], "strata": "stratum"}, "not a question of this survey or a column of sample.frame (psu)"),
    ({"strata": "dodged"}, "'dodged' is randomized"),
    ({"weights": "region"}, "'region' is a choice question; weights needs a number question"),
    ({"design": "x"}, "survey.sample: a mapping of weights, strata, clusters, fpc, frame"),
])
def test_a_bad_sample_is_refused_naming_where(sample, words):
    with pytest.raises(SpecError) as refused:
        Survey.from_dict({**SPEC, "sample": sample})
    assert words in str(refused.value)
