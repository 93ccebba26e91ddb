"""POST /api/v1/surveys/<id>/responses beneath Flask: the one request every respondent makes, answered by a WSGI
layer in front of the Flask app.

Flask's request and response objects, routing, hooks and Flask-Limiter's wrapper cost a large share of the CPU
of storing one response (benchmarks/ingest.py, wrk, 2 workers, SQLite: 483 → 582 responses/s with this layer,
0.56 → 0.65 times the trivial app's rate, medians of 5 pairs). This layer answers exactly that path (another
method: 405) and hands every other request to Flask unchanged. It judges a request with the same pieces the Flask
routes use, so the two cannot drift apart: `api.parse_json_body` for the body, `api.submit_item` for the response
(in an app context, so the store is the request's own, released at teardown), `api.error_body` for every refusal,
`SECURITY_HEADERS` on every answer. The NUL check of path and query is Flask's `before_request` one, and so is the
rate limit, counted per client address in this process's memory by the same library (`limits`) with the same
headers. Tests drive it through Flask's test client, which calls the WSGI app, so every existing test of the
endpoint runs against this layer.
"""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qsl

from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import FixedWindowRateLimiter
from werkzeug.exceptions import BadRequest, HTTPException, InternalServerError, MethodNotAllowed
from werkzeug.http import HTTP_STATUS_CODES

from deniable.client.errors import DeniableError

from . import CONTENT_SECURITY_POLICY, SECURITY_HEADERS, api

#: The endpoint's name in `RATE_LIMITS` (the Flask route it replaced was ``api.post_response``).
ENDPOINT = "api.post_response"
#: What it answers, in Flask's rule syntax (Flask's URL map does not hold it: tests and docs read it here).
ROUTE = ("/api/v1/surveys/<survey_id>/responses", "POST")
_PATH = re.compile(r"/api/v1/surveys/([^/]+)/responses")  # `ROUTE`, as Werkzeug's default converter matches it


class SingleResponses:
    """The WSGI layer: ``app.wsgi_app = SingleResponses(app, app.wsgi_app)``."""

    def __init__(self, app, flask_wsgi):
        self.app = app
        self.flask_wsgi = flask_wsgi
        self.limit_bytes = app.config["MAX_RESPONSE_BYTES"]
        self.headers = [("Content-Security-Policy", CONTENT_SECURITY_POLICY), *SECURITY_HEADERS, ("Cache-Control", "no-store")]
        self.rate = None
        if app.config["RATELIMIT_ENABLED"] and ENDPOINT in app.config["RATE_LIMITS"]:
            # Flask-Limiter's defaults: a fixed window, in memory, per address (never written anywhere else).
            self.rate = parse(app.config["RATE_LIMITS"][ENDPOINT])
            self.limiter = FixedWindowRateLimiter(MemoryStorage())

    def __call__(self, environ, start_response):
        if "wsgi.input" in environ:
            environ["wsgi.input"] = GuardedInput(environ["wsgi.input"])
        # Decoded as Werkzeug decodes it (PEP 3333 carries the path's bytes as latin-1), so both route alike.
        path = environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8", "replace")
        matched = _PATH.fullmatch(path)
        if matched is None:
            return self.flask_wsgi(environ, start_response)
        headers = list(self.headers)
        try:
            if environ.get("REQUEST_METHOD") != "POST":
                headers.append(("Allow", "POST"))
                status, body = 405, api.error_body(405, MethodNotAllowed.description)
            else:
                status, body = self._answer(environ, matched.group(1), headers)
        except Exception:  # as Flask answers an unexpected error: logged with its traceback, a JSON 500
            if self._propagate():
                raise
            self.app.logger.exception("Exception on %s [POST]", path)
            status = 500
            body = api.error_body(500, InternalServerError.description)
        data = (self.app.json.dumps(body, separators=(",", ":")) + "\n").encode()
        headers += [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        start_response(f"{status} {HTTP_STATUS_CODES.get(status, 'unknown').upper()}", headers)
        return [data]

    def _answer(self, environ, survey_id: str, headers: list) -> tuple[int, dict]:
        refused = _nul(survey_id, environ.get("QUERY_STRING", ""))
        if refused:
            return 400, api.error_body(400, f"{refused.replace(chr(0), '?')}: text with a NUL character is refused",
                                       refused.replace("\x00", "?"))
        if self.rate is not None:
            address = environ.get("REMOTE_ADDR") or "127.0.0.1"
            allowed = self.limiter.hit(self.rate, ENDPOINT, address)
            reset, remaining = self.limiter.get_window_stats(self.rate, ENDPOINT, address)
            headers += [("X-RateLimit-Limit", str(self.rate.amount)), ("X-RateLimit-Remaining", str(remaining)),
                        ("X-RateLimit-Reset", str(int(reset)))]
            if not allowed:
                headers.append(("Retry-After", str(max(int(reset - time.time()), 0))))
                return 429, api.error_body(429, str(self.rate))
        try:
            body = api.parse_json_body(_mimetype(environ), _content_length(environ),
                                       lambda: _read(environ, self.limit_bytes), self.limit_bytes, check_text=False)
            with self.app.app_context():
                payload, status = api.submit_item(survey_id, body)
        except DeniableError as error:  # as the API blueprint's handler answers one (`api._refused`)
            status = getattr(error, "status", 422)
            payload = api.error_body(status, error.message, error.field)
        except HTTPException as error:  # a body the server could not read (`GuardedInput`)
            status = error.code
            payload = api.error_body(status, error.description, "body")
        headers.extend(api.retry_later(status).items())
        return status, payload

    def _propagate(self) -> bool:
        propagate = self.app.config["PROPAGATE_EXCEPTIONS"]
        return self.app.testing or self.app.debug if propagate is None else propagate


class MalformedBody(BadRequest):
    description = "the request body could not be read (a malformed chunked encoding, or the connection broke off)"
    field = "body"


class GuardedInput:
    """``wsgi.input`` whose read errors become a 400: gunicorn parses a chunked body while the app reads it and raises
    its parser's error there (a malformed chunk size made every endpoint that reads a body a 500 with a logged
    traceback: responses, batches, the no-JavaScript form, the sign-in)."""

    def __init__(self, stream):
        self._stream = stream

    def _guarded(self, method: str, *args):
        try:
            return getattr(self._stream, method)(*args)
        except HTTPException:
            raise
        except Exception:
            raise MalformedBody() from None

    def read(self, *args):
        return self._guarded("read", *args)

    def readline(self, *args):
        return self._guarded("readline", *args)

    def readlines(self, *args):
        return self._guarded("readlines", *args)

    def __iter__(self):
        return iter(self.readline, b"")

    def close(self):
        closer = getattr(self._stream, "close", None)
        if closer is not None:
            closer()


def _nul(survey_id: str, query: str) -> str | None:
    """The field of the first text with a NUL (``path.survey_id``, ``query.<name>``), as Flask's hook names it."""
    if "\x00" in survey_id:
        return "path.survey_id"
    if query:
        for name, value in parse_qsl(query.encode("latin-1").decode("utf-8", "replace"), keep_blank_values=True):
            if "\x00" in name or "\x00" in value:
                return f"query.{name}"
    return None


def _mimetype(environ) -> str:
    return environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()


def _content_length(environ) -> int | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    return length if length >= 0 else None


def _read(environ, limit: int) -> bytes:
    """The body: Content-Length's bytes, or (sent in chunks, length unknown) at most one byte past the limit, enough
    to refuse it."""
    length = _content_length(environ)
    return environ["wsgi.input"].read(limit + 1 if length is None else length)
