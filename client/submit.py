"""Send a respondent's answers from a Python app: fetch the spec, randomize here, post the reports.

Standard library only (urllib). Transient failures (no connection, 5xx, 429) are retried with
the same idempotency key, so the server stores the response once however often it is sent.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from .survey import Survey

TRANSIENT_STATUSES = {408, 425, 429, 500, 502, 503, 504}


class SubmitError(Exception):
    """The server refused the response or could not be reached; ``status`` and ``field`` say why."""

    def __init__(self, message: str, status: int | None = None, field: str | None = None):
        super().__init__(message)
        self.status, self.field = status, field


class SurveyNotFound(SubmitError):
    """404: no survey with this id."""


class SurveyClosed(SubmitError):
    """410: the survey no longer accepts responses."""


class TokenAlreadyUsed(SubmitError):
    """409: this respondent token has answered already."""


class ResponseRejected(SubmitError):
    """4xx: a report or field is invalid; ``field`` names it."""


class SpecMismatch(SubmitError):
    """The served spec does not hash to the hash served with it."""


_BY_STATUS = {404: SurveyNotFound, 410: SurveyClosed, 409: TokenAlreadyUsed}


@dataclass
class Submission:
    """What was sent and what the server said: ``reports`` is exactly what left this process."""

    acknowledgement: dict
    reports: dict
    spec_hash: str
    created: bool


def _request(method: str, url: str, body: dict | None, timeout: float):
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Accept": "application/json", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        try:
            payload = json.loads(error.read() or b"null")
        except ValueError:
            payload = None
        return error.code, payload


def _raise_for(status: int, payload, url: str):
    detail = (payload or {}).get("error") or {} if isinstance(payload, dict) else {}
    message = detail.get("message") or f"{url}: HTTP {status}"
    raise _BY_STATUS.get(status, ResponseRejected if 400 <= status < 500 else SubmitError)(
        message, status=status, field=detail.get("field"))


def _with_retries(method, url, body, retries, backoff, timeout):
    last = None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        try:
            status, payload = _request(method, url, body, timeout)
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            last = SubmitError(f"could not reach {url}: {getattr(error, 'reason', error)}")
            continue
        if status in TRANSIENT_STATUSES:
            last = SubmitError(f"{url}: HTTP {status}", status=status)
            continue
        if status >= 400:
            _raise_for(status, payload, url)
        return status, payload
    raise last


def fetch_survey(base_url: str, survey_id: str, *, retries: int = 3, backoff: float = 0.25, timeout: float = 10.0):
    """The served spec as a `Survey`, after checking it hashes to the hash the server states."""
    url = f"{base_url.rstrip('/')}/api/v1/surveys/{urllib.parse.quote(survey_id, safe='')}"
    _, payload = _with_retries("GET", url, None, retries, backoff, timeout)
    survey = Survey.from_dict(payload["spec"])
    if survey.hash != payload["hash"]:
        raise SpecMismatch(f"the spec served for {survey_id!r} hashes to {survey.hash}, not {payload['hash']}")
    return survey


def post_response(base_url: str, survey_id: str, body: dict, *, retries: int = 4, backoff: float = 0.25,
                  timeout: float = 10.0) -> tuple[dict, bool]:
    """POST one already-randomized response (``spec_hash``, ``idempotency_key``, ``reports``, optional
    ``token``), retrying transient failures with the same body. Returns (acknowledgement, created):
    created is False when the server had stored this idempotency key already."""
    url = f"{base_url.rstrip('/')}/api/v1/surveys/{urllib.parse.quote(survey_id, safe='')}/responses"
    status, acknowledgement = _with_retries("POST", url, body, retries, backoff, timeout)
    return acknowledgement, status == 201


def submit(base_url: str, survey_id: str, answers: dict, token: str | None = None, *, retries: int = 4,
           backoff: float = 0.25, timeout: float = 10.0, rng=None) -> Submission:
    """Randomize ``answers`` locally and send only the reports. Raises a `SubmitError` subclass."""
    survey = fetch_survey(base_url, survey_id, retries=retries, backoff=backoff, timeout=timeout)
    reports = survey.randomize(answers, rng)
    body = {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(16), "reports": reports}
    if token is not None:
        body["token"] = token
    acknowledgement, created = post_response(base_url, survey_id, body, retries=retries, backoff=backoff, timeout=timeout)
    return Submission(acknowledgement=acknowledgement, reports=reports, spec_hash=survey.hash, created=created)
