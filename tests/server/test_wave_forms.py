"""The no-JavaScript form of a repeated survey is bound to the wave it was served in."""

import re

import pytest

pytestmark = pytest.mark.both_engines


def test_the_no_javascript_form_is_bound_to_the_wave_it_was_served_in(client, store, pulse):
    """Before: a form served in a wave and sent after it closed was stored in the next one."""
    store.open_wave("pulse", "w1")
    page = client.get("/s/pulse").get_data(as_text=True)
    assert re.search(r'<input type="hidden" name="wave" value="w1">', page)
    form = {name: value for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)}
    store.open_wave("pulse", "w2")  # w1 closes while the page is open
    form.update({"team": "Sales"})  # the page set its form cookie on this client (a panel offers its public questions)
    answered = client.post("/s/pulse/submit", data=form)
    assert answered.status_code == 410, answered.get_data(as_text=True)[:300]
    assert store.response_count("pulse") == 0
    # served in w2, it is stored in w2
    page = client.get("/s/pulse").get_data(as_text=True)
    form = {name: value for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)}
    assert form["wave"] == "w2"
    assert client.post("/s/pulse/submit", data={**form, "team": "Sales"}).status_code in (200, 303)
    assert {w["label"]: w["responses"] for w in store.waves("pulse")} == {"w1": 0, "w2": 1}
