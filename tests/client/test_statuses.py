"""What each answer to a sent response means to the Python client: one table (client/statuses.py), the JS twin's
module written from it, and a test per row: kept in the outbox until a final answer, typed, Retry-After read."""

import http.server
import importlib.util
import json
import threading
import time
from pathlib import Path

import pytest

from deniable.client import NoWaveOpen, Outbox, QuotaFull, RetryLater, StaleSpec, SubmitError, TokenAlreadyUsed, WaveClosed, submit
from deniable.client.statuses import STATUS_TABLE, classify, retry_after_seconds

ROOT = Path(__file__).resolve().parents[2]
SPEC = {"id": "tax", "title": "Taxes", "questions": [{"id": "dodged", "type": "yes_no", "text": "Dodged?"}]}


class Scripted:
    """A server on loopback that answers each POST with the next scripted (status, field, headers)."""

    def __init__(self, answers):
        from deniable.client import Survey

        self.answers, self.posts = list(answers), 0
        survey = Survey.from_dict(SPEC)
        served = json.dumps({"spec": survey.to_dict(), "hash": survey.hash}).encode()
        script = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body, headers=()):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(200, served)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                script.posts += 1
                status, field, headers = script.answers.pop(0)
                body = {"id": "r1"} if status < 400 else {"error": {"status": status, "field": field, "message": "m"}}
                self._send(status, json.dumps(body).encode(), headers)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("row", [r for r in STATUS_TABLE if r[0] >= 400], ids=lambda r: f"{r[0]}-{r[1] or 'any'}")
def test_each_answer_keeps_the_response_until_a_final_one(row, tmp_path):
    status, field, kind, retry, _ = row
    outbox = Outbox(tmp_path / "outbox.json")
    with Scripted([(status, field, ())] * 2) as server:
        if retry:
            sent = submit(server.url, "tax", {"dodged": "yes"}, outbox=outbox, retries=1, backoff=0.001)
            assert sent.queued and len(outbox.entries()) == 1
        else:
            with pytest.raises(SubmitError) as refused:
                submit(server.url, "tax", {"dodged": "yes"}, outbox=outbox, retries=1, backoff=0.001)
            assert refused.value.kind == kind and not refused.value.retryable
            assert outbox.entries() == [] and server.posts == 1  # a final answer is not sent again
    if retry:
        with Scripted([(status, field, ()), (201, None, ())]) as server:
            entry = outbox.entries()[0]
            outbox.add(server.url, entry["survey_id"], entry["body"])  # the same key, now for this server
            assert outbox.flush(retries=0).kept == 1  # still no final answer: kept
            flushed = outbox.flush(retries=0)
            assert [a["id"] for a in flushed.sent] == ["r1"] and flushed.kept == 0


def test_409_and_410_are_told_apart_by_their_field():
    assert classify(409, "token") == ("token_used", False)
    assert classify(409, "wave") == ("no_wave_open", False)
    assert classify(410, "wave") == ("wave_closed", False)
    assert classify(404, "spec_hash") == ("stale_spec", False)
    assert classify(599) == ("retry_later", True) and classify(418) == ("refused", False)
    for (status, field), kind in {(409, "wave"): NoWaveOpen, (409, "quota"): QuotaFull, (409, "token"): TokenAlreadyUsed, (410, "wave"): WaveClosed,
                                  (404, "spec_hash"): StaleSpec, (507, "db"): RetryLater}.items():
        with Scripted([(status, field, ())]) as server, pytest.raises(kind):
            submit(server.url, "tax", {"dodged": "no"}, retries=0)


def test_retry_after_is_waited_when_short_and_a_long_one_ends_the_tries(tmp_path, monkeypatch):
    assert retry_after_seconds("55") == 55 and retry_after_seconds("soon") is None
    now = 1_800_000_000.0  # an HTTP date is read against the clock: a fixed one here
    monkeypatch.setattr(time, "time", lambda: now)
    assert retry_after_seconds(time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 10))) == 10
    monkeypatch.undo()
    waits = []  # what the client sleeps, recorded instead of slept
    monkeypatch.setattr(time, "sleep", waits.append)
    outbox = Outbox(tmp_path / "outbox.json")
    with Scripted([(503, "db", (("Retry-After", "55"),))] * 4) as server:
        sent = submit(server.url, "tax", {"dodged": "yes"}, outbox=outbox, retries=3, backoff=0.001)
        assert sent.queued and server.posts == 1 and not any(wait >= 30 for wait in waits)  # kept, not waited for 55 s
    with Scripted([(429, None, (("Retry-After", "1"),)), (201, None, ())]) as server:
        sent = submit(server.url, "tax", {"dodged": "yes"}, retries=2, backoff=0.001)
        assert sent.acknowledgement == {"id": "r1"} and max(waits) >= 1  # the server's 1 s


def test_the_js_clients_status_table_is_written_from_this_one():
    spec = importlib.util.spec_from_file_location("statuses_js", ROOT / "scripts" / "statuses_js.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = (ROOT / "src" / "deniable" / "client" / "js" / "src" / "statuses.js").read_text(encoding="utf-8")
    assert written == module.render(), "statuses.js is stale: run python scripts/statuses_js.py"
