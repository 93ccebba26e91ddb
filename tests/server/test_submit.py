"""The Python client's submit() against a live server."""

import json

import pytest

from deniable.client import AnswerError, ResponseRejected, Survey, SurveyClosed, SurveyNotFound, TokenAlreadyUsed, submit
from deniable.client.submit import SpecMismatch, fetch_survey
from tests.conftest import EXAMPLES
from tests.server.conftest import ANSWERS
from tests.support.serving import served

pytestmark = pytest.mark.both_engines


def test_submit_randomizes_locally_and_is_stored(live_server, survey, store):
    sent = submit(live_server, "tax", ANSWERS)
    assert sent.created and sent.spec_hash == survey.hash
    rows = list(store.export("tax"))
    assert len(rows) == 1 and rows[0]["reports"] == sent.reports
    assert rows[0]["id"] == sent.acknowledgement["id"]


def test_submit_errors_are_typed(live_server, survey, store):
    with pytest.raises(SurveyNotFound):
        submit(live_server, "nope", ANSWERS)
    with pytest.raises(AnswerError, match="answers.nope: no such question"):
        submit(live_server, "tax", {"nope": "yes"})
    [token] = store.issue_tokens("tax", 1)
    with pytest.raises(ResponseRejected) as missing_token:
        submit(live_server, "tax", ANSWERS)
    assert missing_token.value.field == "token" and missing_token.value.status == 422
    submit(live_server, "tax", ANSWERS, token=token)
    with pytest.raises(TokenAlreadyUsed):
        submit(live_server, "tax", ANSWERS, token=token)
    store.close_survey("tax")
    with pytest.raises(SurveyClosed):
        submit(live_server, "tax", ANSWERS, token="x")


def test_transient_failures_are_retried_with_the_same_key(app, survey, store):
    """A flaky proxy: the first POST is stored but its answer is lost (502); the retry gets 200."""
    seen_keys = []

    def flaky(environ, start_response):
        if environ["REQUEST_METHOD"] == "POST" and not seen_keys:
            seen_keys.append("first")
            response = app(environ, lambda *args, **kwargs: None)  # stored, answer dropped
            b"".join(response)
            start_response("502 Bad Gateway", [("Content-Type", "application/json")])
            return [b'{"error": {"status": 502, "field": null, "message": "bad gateway"}}']
        return app(environ, start_response)

    with served(flaky) as base:
        sent = submit(base, "tax", ANSWERS, backoff=0.01)
    assert sent.created is False  # the retry found the first, stored copy
    assert store.response_count("tax") == 1


def test_unreachable_server_raises_after_retries():
    from deniable.client import SubmitError

    with pytest.raises(SubmitError, match="could not reach"):
        submit("http://127.0.0.1:9", "tax", ANSWERS, retries=1, backoff=0.01, timeout=1)


def test_a_spec_that_does_not_match_its_hash_is_refused(app, survey, monkeypatch):
    def lying(environ, start_response):
        import json

        body = b"".join(app(environ, lambda *a, **k: None))
        payload = json.loads(body)
        payload["spec"]["title"] = "Swapped"
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(payload).encode()]

    with served(lying) as base, pytest.raises(SpecMismatch):
        fetch_survey(base, "tax")


def test_a_kept_body_sent_again_is_one_response(live_server, survey, store):
    """The embedding guide's step-by-step path: a body kept after a failure and sent again, unchanged."""
    import secrets

    from deniable.client import post_response

    fetched = fetch_survey(live_server, "tax")
    body = {"spec_hash": fetched.hash, "idempotency_key": secrets.token_hex(16), "reports": fetched.randomize(ANSWERS)}
    first, created = post_response(live_server, "tax", body)
    again, created_again = post_response(live_server, "tax", body)
    assert (created, created_again) == (True, False) and first == again
    assert store.response_count("tax") == 1


def test_with_no_connection_the_outbox_keeps_the_randomized_body_and_delivers_it_once(live_server, survey, store,
                                                                                     tmp_path, monkeypatch):
    import importlib
    import os
    import stat
    import urllib.error

    from deniable.client import Outbox
    from deniable.client import submit as send

    submit_module = importlib.import_module("deniable.client.submit")  # the module (the package's `submit` is the function)
    real_request, attempted = submit_module._request, []

    def no_connection_for_posts(method, url, body, timeout):
        if method == "POST":
            attempted.append(body)
            raise urllib.error.URLError("network is unreachable")
        return real_request(method, url, body, timeout)

    monkeypatch.setattr(submit_module, "_request", no_connection_for_posts)
    outbox = Outbox(tmp_path / "outbox.json")
    answers = {**ANSWERS, "hours": 12.5}  # off the grid: the typed value can never be a report
    sent = send(live_server, "tax", answers, outbox=outbox, retries=1, backoff=0)
    assert sent.queued and sent.acknowledgement is None and not sent.created
    assert stat.S_IMODE(os.stat(outbox.path).st_mode) == 0o600
    [entry] = outbox.entries()
    assert entry == {"base_url": live_server, "survey_id": "tax", "body": attempted[0]}  # exactly what will be sent
    assert set(entry["body"]) == {"spec_hash", "idempotency_key", "reports"} and entry["body"]["reports"] == sent.reports
    assert "12.5" not in outbox.path.read_text()
    assert outbox.flush(retries=0).kept == 1 and store.response_count("tax") == 0  # still offline: kept

    monkeypatch.setattr(submit_module, "_request", real_request)
    flushed = outbox.flush()
    assert len(flushed.sent) == 1 and flushed.refused == [] and flushed.kept == 0
    assert not outbox.path.exists()  # nothing left on the device
    [row] = list(store.export("tax"))
    assert row["reports"] == sent.reports
    outbox.add(live_server, "tax", entry["body"])  # sent again (it had arrived after all): still one response
    assert len(outbox.flush().sent) == 1 and store.response_count("tax") == 1


def test_the_outbox_drops_a_body_refused_for_good(live_server, survey, store, tmp_path):
    from deniable.client import Outbox, SurveyClosed

    outbox = Outbox(tmp_path / "outbox.json")
    outbox.add(live_server, "tax", {"spec_hash": survey.hash, "idempotency_key": "k" * 16, "reports": survey.randomize(ANSWERS)})
    store.close_survey("tax")
    flushed = outbox.flush()
    assert [type(e) for e in flushed.refused] == [SurveyClosed] and flushed.kept == 0 and outbox.entries() == []


def _add_many(path, base_url, hashes, worker):
    from deniable.client import Outbox

    outbox = Outbox(path)
    for i in range(100):
        outbox.add(base_url, "tax", {"spec_hash": hashes, "idempotency_key": f"w{worker}-{i:04d}-key", "reports": {}})


def _flush(path, queue):
    from deniable.client import Outbox

    queue.put(len(Outbox(path).flush(retries=0).sent))


def test_the_outbox_is_shared_safely_by_several_processes(live_server, survey, store, tmp_path):
    """Three processes add 100 entries each at once: all 300 kept. Two processes flush at once: each body
    is sent once (the second flush finds the first's deliveries gone) and nothing is left."""
    import multiprocessing

    from deniable.client import Outbox

    context = multiprocessing.get_context("fork")
    path = tmp_path / "outbox.json"
    adders = [context.Process(target=_add_many, args=(path, live_server, survey.hash, w)) for w in range(3)]
    for process in adders:
        process.start()
    for process in adders:
        process.join(60)
    assert len(Outbox(path).entries()) == 300
    # give the entries valid reports so the server stores them
    reports = survey.randomize(ANSWERS)
    entries = Outbox(path).entries()
    for entry in entries:
        entry["body"]["reports"] = reports
    path.write_text(json.dumps(entries))
    queue = context.Queue()
    flushers = [context.Process(target=_flush, args=(path, queue)) for _ in range(2)]
    for process in flushers:
        process.start()
    sent = sorted(queue.get(timeout=120) for _ in flushers)
    for process in flushers:
        process.join(60)
    assert sum(sent) == 300 and sent[0] == 0  # one flush sent them all; the other found nothing left
    assert store.response_count("tax") == 300 and not path.exists()


@pytest.mark.parametrize("content", ["", "{not json", '{"a": 1}', '[{"base_url": 1}]', "\udcff"])
def test_a_corrupted_outbox_is_set_aside_and_the_outbox_starts_empty(tmp_path, content):
    from deniable.client import Outbox

    path = tmp_path / "outbox.json"
    path.write_text(content, encoding="utf-8", errors="surrogateescape")
    outbox = Outbox(path)
    assert outbox.entries() == []
    outbox.add("http://127.0.0.1:1", "tax", {"spec_hash": "h", "idempotency_key": "k" * 16, "reports": {}})
    assert len(outbox.entries()) == 1
    if content.strip():
        assert [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]


def test_submit_sends_a_split_ballot_with_the_arms_the_app_showed(live_server, store):
    """submit() could not send a split-ballot survey: its error said "pass arms=…", which submit() did not take."""
    from deniable.client import AnswerError

    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    store.add_survey(survey)
    answers = {"region": "North", "dodged": "yes", "took": "same",  # crosswise and cheating detection: reports
               "cheated": {"group": "a", "report": "no"}}
    with pytest.raises(AnswerError, match="pass arms"):
        submit(live_server, survey.id, answers)
    arms = {qid: "randomized" for qid, q in survey.questions.items() if q.split_ballot is not None}
    arms["dodged"] = "direct"
    sent = submit(live_server, survey.id, answers, arms=arms)
    assert sent.reports["dodged"] == {"arm": "direct", "report": "yes"}  # the direct arm: as given, announced
    assert sent.reports["took"]["arm"] == "randomized"
    assert store.response_count(survey.id) == 1
