"""A new version that randomizes or asks an answered question differently is said before it is published (on every
surface, one refusal naming each question and each confirmation it needs), not found out at estimate time."""

import re

import pytest

from deniable import storage
from deniable.client import Survey
from deniable.server.cli import main
from tests.server.conftest import ANSWERS, sign_in

pytestmark = pytest.mark.both_engines


def _with(demo: Survey, **privacy) -> Survey:
    spec = demo.to_dict()
    for question in spec["questions"]:
        if question["id"] in privacy:
            question["privacy"] = privacy[question["id"]]
    return Survey.from_dict(spec)


def _answer(store, survey: Survey, key: str, answers=ANSWERS):
    store.submit(survey.id, survey.hash, key, survey.randomize(answers))


def test_an_unanswered_question_may_be_randomized_anew_without_a_confirmation(store, demo):
    store.add_survey(demo)
    assert store.add_survey(_with(demo, dodged={"design": "warner", "p": "2/3"}))[1] == "new version"


def test_an_answered_question_randomized_anew_needs_a_confirmation_and_the_audit_log_keeps_it(store, demo):
    store.add_survey(demo)
    _answer(store, demo, "redesign-key-1")
    stronger = _with(demo, dodged={"design": "warner", "p": "2/3"})
    with pytest.raises(storage.Unconfirmed) as refused:
        store.add_survey(stronger, actor="cli:test")
    assert refused.value.needed == ("redesign",) and refused.value.status == 409
    assert "dodged: the design changed from forced_response to warner" in refused.value.message
    assert store.get_survey("tax").hash == demo.hash  # nothing published
    record, outcome = store.add_survey(stronger, actor="cli:test", confirm_redesign=True)
    assert outcome == "new version" and record.hash == stronger.hash
    assert "answered questions randomized anew, confirmed: dodged" in store.audit_log(limit=1)[0]["detail"]


def test_lowered_privacy_and_a_new_randomization_are_one_refusal_naming_both(store, demo):
    store.add_survey(demo)
    _answer(store, demo, "redesign-key-2")
    both = _with(demo, dodged="none", fairness={"design": "k_rr", "epsilon": 0.5})
    with pytest.raises(storage.Unconfirmed) as refused:
        store.add_survey(both)
    assert refused.value.needed == ("lower-privacy", "redesign")
    message = refused.value.message
    assert "dodged: randomized" in message and "fairness: the design changed" in message
    assert "?confirm=lower-privacy,redesign" in message and "--confirm-lower-privacy --confirm-redesign" in message
    with pytest.raises(storage.Unconfirmed) as still:
        store.add_survey(both, confirm_lower_privacy=True)
    assert still.value.needed == ("redesign",)
    assert store.add_survey(both, confirm_lower_privacy=True, confirm_redesign=True)[1] == "new version"


def test_every_surface_asks_for_the_confirmation_and_takes_it(client, store, demo, admin_headers, runner, db_path,
                                                             tmp_path):
    store.add_survey(demo)
    _answer(store, demo, "redesign-key-3")
    stronger = _with(demo, dodged={"design": "warner", "p": "2/3"})
    assert client.post("/api/v1/surveys?confirm=nonsense", json=stronger.to_dict(),
                       headers=admin_headers).json["error"]["field"] == "confirm"
    spec = tmp_path / "v2.json"
    spec.write_text(stronger.canonical_json(), encoding="utf-8")
    cli_refused = runner.invoke(main, ["survey", "add", str(spec), "--db", db_path])
    assert cli_refused.exit_code == 1 and "--confirm-redesign" in cli_refused.output
    sign_in(client)
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/admin/").get_data(as_text=True)).group(1)
    page = client.post("/admin/surveys", data={"csrf": csrf, "spec": stronger.canonical_json()})
    assert page.status_code == 409 and 'name="confirm_redesign"' in page.get_data(as_text=True)
    assert 'name="confirm_lower_privacy"' not in page.get_data(as_text=True)
    published = runner.invoke(main, ["survey", "add", str(spec), "--db", db_path, "--confirm-redesign"])
    assert published.exit_code == 0, published.output
    assert store.get_survey("tax").hash == stronger.hash
