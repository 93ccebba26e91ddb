"""The estimates page plans within its time limit, whatever the spec: a wide number grid's plan (minutes of CPU)
is finished by the process's background thread, and the next view finds it remembered."""

import time

import pytest

from deniable.analysis import load
from deniable.client import Survey
from deniable.server import background
from tests.server.conftest import sign_in, wait_for_background

SPEC = {"id": "wide", "title": "Hours", "questions": [
    {"id": "hours", "text": "Hours?", "type": "number", "min": 0, "max": 60, "step": 1,
     "privacy": {"design": "laplace", "epsilon": 0.8}},
    {"id": "dodged", "text": "Dodged?", "type": "yes_no", "privacy": {"design": "warner", "p": 0.75}}]}


@pytest.mark.slow
def test_a_plan_out_of_time_is_finished_in_the_background_and_shown_at_the_next_view(client, store, monkeypatch):
    from deniable.analysis import plans
    from deniable.server import dashboard

    survey = Survey.from_dict(SPEC)
    store.add_survey(survey)
    for i in range(40):
        store.submit("wide", survey.hash, f"key-{i:08d}", survey.randomize({"hours": i % 50, "dodged": "no"}))
    plans._PRECISION.clear()
    # The estimates worked out before (remembered): the page's whole 0.05 s goes to planning.
    dashboard.estimate_charts(load(store=store, survey_id="wide"), None)
    monkeypatch.setattr(dashboard, "PAGE_SECONDS", 0.05)
    sign_in(client)
    first = client.get("/admin/surveys/wide?n=777").get_data(as_text=True)
    # The mean of a number this wide is planned in closed form at once; its shares' bootstrap is left to the background.
    assert "Each value's share not planned within this page's 0.05 s of computing: hours (the mean is planned)" in first
    assert "being planned in the background" in first and "Not planned within" not in first
    assert "<tr><td>dodged</td>" in first and "<tr><td>hours</td>" in first
    assert "each value's share: not planned yet" in first
    mean = plans.plan(survey, 777)[0]  # the figure the page shows: the plan's own
    assert f"±{mean.mean_margin:.3g} on 0–60" in first
    job = next(iter(background._jobs()[1]), None)
    waited = time.monotonic()
    while job is not None and background.pending(job) and time.monotonic() - waited < 300:
        time.sleep(0.2)
    assert job is None or not background.pending(job)
    second = client.get("/admin/surveys/wide?n=777").get_data(as_text=True)
    assert "Not planned within" not in second and "not planned within" not in second and "not planned yet" not in second
    assert "<tr><td>hours</td>" in second and "<tr><td>dodged</td>" in second
    assert f"±{mean.mean_margin:.3g} on 0–60" in second  # the same mean once the shares are planned


def test_the_background_queue_is_bounded(monkeypatch):
    wait_for_background()  # another test's job: let it finish first
    monkeypatch.setattr(background, "MAX_JOBS", 1)
    release = []

    def slow():
        while not release:
            time.sleep(0.01)

    assert background.finish_later(("test", 1), slow)
    assert background.finish_later(("test", 1), slow)  # the same job: already queued, not twice
    assert not background.finish_later(("test", 2), slow)  # the queue is full: nothing started
    release.append(True)
    waited = time.monotonic()
    while background.pending(("test", 1)) and time.monotonic() - waited < 30:
        time.sleep(0.01)
    assert not background.pending(("test", 1))

