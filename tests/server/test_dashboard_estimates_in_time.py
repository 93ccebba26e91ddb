"""The estimates page estimates within its time, whatever the spec: a question whose estimate is not worked out in time
is finished by the process's background thread and shown at the next view, and a chart is remembered by what its
estimate is a function of, so a second view estimates nothing and a response recomputes only the charts it changes."""

import pytest

from deniable.analysis import SampleDesign, estimate, load
from deniable.client import Survey
from deniable.server import dashboard
from tests.server.conftest import sign_in, wait_for_background

SPEC = {"id": "wide", "title": "Hours", "questions": [
    {"id": "worked", "text": "Worked?", "type": "yes_no", "privacy": "none"},
    {"id": "dodged", "text": "Dodged?", "type": "yes_no", "privacy": {"design": "warner", "p": 0.75}},
    {"id": "hours", "text": "Hours?", "type": "number", "min": 0, "max": 60, "step": 1,
     "privacy": {"design": "laplace", "epsilon": 0.8}, "relevant": "worked = 'yes'"}]}


@pytest.fixture
def answered(store):
    survey = Survey.from_dict(SPEC)
    store.add_survey(survey)
    for i in range(60):
        answers = {"worked": "yes", "dodged": "no", "hours": i % 50} if i % 3 else {"worked": "no", "dodged": "yes"}
        store.submit("wide", survey.hash, f"key-{i:08d}", survey.randomize(answers))
    dashboard._charts.clear()
    return survey


@pytest.mark.slow
def test_an_estimate_out_of_time_is_finished_in_the_background_and_shown_at_the_next_view(client, answered, store,
                                                                                           monkeypatch):
    monkeypatch.setattr(dashboard, "ESTIMATE_SECONDS", 0.0)  # not one bootstrap fits: the number's estimate waits
    sign_in(client)
    first = " ".join(client.get("/admin/surveys/wide").get_data(as_text=True).split())
    assert "Not worked out within 0 s of computing: being estimated in the background" in first
    wait_for_background()
    second = client.get("/admin/surveys/wide").get_data(as_text=True)
    assert "Not worked out within" not in second
    # The page shows the estimate `deniable estimate` prints: the same mean, to the digits drawn.
    mean = estimate(load(store=store, survey_id="wide"), "hours").mean
    assert f"Mean: <strong>{mean.estimate:.3g}</strong> (SE {mean.se:.2g})" in second


def test_a_second_view_estimates_nothing_and_a_response_recomputes_only_what_it_answers(answered, store,
                                                                                       monkeypatch):
    data = load(store=store, survey_id="wide")
    design = SampleDesign.of(data.survey)
    first = dashboard.estimate_charts(data, design)
    assert not first.pending and [chart["id"] for chart in first] == ["worked", "dodged", "hours"]

    def estimated(*_):
        raise AssertionError("estimated again")

    with monkeypatch.context() as patched:
        patched.setattr(dashboard, "_chart", estimated)
        again = dashboard.estimate_charts(load(store=store, survey_id="wide"), design)
    assert [a is b for a, b in zip(again, first)] == [True, True, True]
    # A respondent who did not work is not asked the hours: that chart is kept, the others are estimated anew.
    survey = data.survey
    store.submit("wide", survey.hash, "key-late", survey.randomize({"worked": "no", "dodged": "no"}))
    later = dashboard.estimate_charts(load(store=store, survey_id="wide"), design)
    assert [a is b for a, b in zip(later, first)] == [False, False, True]
    assert later[1]["n"] == first[1]["n"] + 1


def test_charts_not_reached_in_time_are_listed_and_say_so(answered, store):
    data = load(store=store, survey_id="wide")
    charts = dashboard.estimate_charts(data, SampleDesign.of(data.survey), time_limit=0.0)
    assert "hours" in charts.pending
    (waiting,) = [chart for chart in charts if chart["id"] == "hours"]
    assert waiting["pending"] and not waiting["rows"] and waiting["population"]
    assert not dashboard._charts or all(chart["id"] != "hours" for chart in dashboard._charts.values())
