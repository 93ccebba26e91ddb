"""Send a respondent's answers from a Python app: fetch the spec, randomize here, post the reports.

Standard library only (urllib). Transient failures (no connection, 5xx, 429) are retried with
the same idempotency key, so the server stores the response once however often it is sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from . import blind_rsa
from .errors import DeniableError
from .files import write_private
from .memo import Memo
from .statuses import STATUS_TABLE, classify, retry_after_seconds, retryable

try:
    import fcntl
except ImportError:  # Windows: one process at a time, as before
    fcntl = None  # type: ignore[assignment]
from .survey import Survey

#: Statuses after which a response is sent again (`statuses.STATUS_TABLE`: "retry later").
TRANSIENT_STATUSES = frozenset(status for status, _, _, retry, _ in STATUS_TABLE if retry)
#: The longest a send waits for a Retry-After before it gives up (and an outbox keeps the response).
MAX_RETRY_WAIT = 30.0


class SubmitError(DeniableError):
    """The server refused the response or could not be reached; ``status`` and ``field`` say why, ``kind`` is its row
    of `statuses.STATUS_TABLE` ("unreachable" without an answer), ``retry_after`` the server's Retry-After in seconds."""

    def __init__(self, message: str, status: int | None = None, field: str | None = None,
                 retry_after: float | None = None):
        super().__init__(message, field)
        self.status = status
        self.retry_after = retry_after
        self.kind = "unreachable" if status is None else classify(status, field)[0]

    @property
    def retryable(self) -> bool:
        """Whether sending the same body again later can succeed: keep it until then."""
        return retryable(self.status, self.field)


class SurveyNotFound(SubmitError):
    """404: no survey with this id."""


class StaleSpec(SurveyNotFound):
    """404 on ``spec_hash``: the spec it was randomized under is no version of this survey."""


class SurveyClosed(SubmitError):
    """410: the survey no longer accepts responses."""


class WaveClosed(SurveyClosed):
    """410 on ``wave``: the wave this response was for has closed (it was not counted in another)."""


class TokenAlreadyUsed(SubmitError):
    """409 on ``token``: this respondent token has answered already."""


class NoWaveOpen(SubmitError):
    """409 on ``wave``: the survey is repeated and no wave is open now (nothing to do with the token)."""


class QuotaFull(SubmitError):
    """409 on ``quota``: the respondent's group (a quota cell of public answers) is full; the response was not stored."""


class ResponseRejected(SubmitError):
    """4xx: a report or field is invalid; ``field`` names it."""


class RetryLater(SubmitError):
    """408, 429, 5xx, 507: the server could not take it now; sending the same body again later can succeed."""


class SpecMismatch(SubmitError):
    """The served spec does not hash to the hash served with it."""


_BY_KIND = {"survey_not_found": SurveyNotFound, "stale_spec": StaleSpec, "closed": SurveyClosed,
            "wave_closed": WaveClosed, "token_used": TokenAlreadyUsed, "no_wave_open": NoWaveOpen, "quota_full": QuotaFull,
            "refused": ResponseRejected, "retry_later": RetryLater}


@dataclass
class Submission:
    """What was sent and what the server said: ``reports`` is exactly what left this process (or, when
    ``queued``, what waits in the outbox to leave it: ``acknowledgement`` is then None)."""

    acknowledgement: dict | None
    reports: dict
    spec_hash: str
    created: bool
    queued: bool = False


def _request(method: str, url: str, body: dict | None, timeout: float):
    """(status, payload, Retry-After in seconds or None)."""
    import urllib.request  # with http.client and the e-mail parser, 20 ms off `import deniable.client`: sending only

    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Accept": "application/json", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null"), None
    except urllib.error.HTTPError as error:
        try:
            payload = json.loads(error.read() or b"null")
        except ValueError:
            payload = None
        return error.code, payload, retry_after_seconds(error.headers.get("Retry-After"))


def _refusal(status: int, payload, url: str, retry_after: float | None = None) -> SubmitError:
    detail = (payload or {}).get("error") or {} if isinstance(payload, dict) else {}
    field = detail.get("field")
    message = detail.get("message") or f"{url}: HTTP {status}"
    return _BY_KIND.get(classify(status, field)[0], SubmitError)(message, status=status, field=field,
                                                                   retry_after=retry_after)


def _with_retries(method, url, body, retries, backoff, timeout, max_wait: float = MAX_RETRY_WAIT):
    """Send until an answer that is final, or ``retries`` more tries; each waits its backoff or the server's
    Retry-After, whichever is longer, and a Retry-After beyond ``max_wait`` ends the tries at once."""
    last = SubmitError(f"{url}: not sent")  # replaced by the first attempt's outcome
    for attempt in range(retries + 1):
        if attempt:
            wait = max(backoff * 2 ** (attempt - 1), last.retry_after or 0.0)
            if wait > max_wait:
                break
            time.sleep(wait)
        try:
            status, payload, retry_after = _request(method, url, body, timeout)
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            last = SubmitError(f"could not reach {url}: {getattr(error, 'reason', error)}")
            continue
        if status < 400:
            return status, payload
        last = _refusal(status, payload, url, retry_after)
        if not last.retryable:
            raise last
    raise last


def fetch_survey(base_url: str, survey_id: str, *, retries: int = 3, backoff: float = 0.25, timeout: float = 10.0):
    """The served spec as a `Survey`, after checking it hashes to the hash the server states."""
    return _fetch(base_url, survey_id, retries, backoff, timeout)[0]


def _fetch(base_url: str, survey_id: str, retries: int, backoff: float, timeout: float) -> tuple[Survey, dict]:
    url = f"{base_url.rstrip('/')}/api/v1/surveys/{urllib.parse.quote(survey_id, safe='')}"
    _, payload = _with_retries("GET", url, None, retries, backoff, timeout)
    survey = Survey.from_dict(payload["spec"])
    if survey.hash != payload["hash"]:
        raise SpecMismatch(f"the spec served for {survey_id!r} hashes to {survey.hash}, not {payload['hash']}")
    return survey, payload


def post_response(base_url: str, survey_id: str, body: dict, *, retries: int = 4, backoff: float = 0.25,
                  timeout: float = 10.0) -> tuple[dict, bool]:
    """POST one already-randomized response (``spec_hash``, ``idempotency_key``, ``reports``, optional
    ``token``), retrying transient failures with the same body. Returns (acknowledgement, created):
    created is False when the server had stored this idempotency key already."""
    url = f"{base_url.rstrip('/')}/api/v1/surveys/{urllib.parse.quote(survey_id, safe='')}/responses"
    status, acknowledgement = _with_retries("POST", url, body, retries, backoff, timeout)
    return acknowledgement, status == 201


def submit(base_url: str, survey_id: str, answers: dict, token: str | None = None, *, retries: int = 4,
           backoff: float = 0.25, timeout: float = 10.0, rng=None, outbox: "Outbox | None" = None,
           memo: "Memo | None" = None, arms: dict | None = None) -> Submission:
    """Randomize ``answers`` locally and send only the reports. Raises a `SubmitError` subclass.

    With an ``outbox``, a send that gets no final answer (no connection, or a status the server says to send again
    later: 429, 503, 507, …; `statuses.STATUS_TABLE`) keeps the randomized body there (``queued=True``) for
    `Outbox.flush` to deliver later, with the same idempotency key. A repeated
    survey needs the device's ``memo`` (`deniable.client.Memo`); the response names the wave open when the
    survey was fetched, so one that arrives after that wave closed is refused, not counted in the next. A split-ballot
    question needs ``arms``: the arm each was shown before it was answered (`SplitBallot.assign_arm`, drawn when the
    app shows the question with the direct arm's notice), as `Survey.randomize` takes them."""
    survey, payload = _fetch(base_url, survey_id, retries, backoff, timeout)
    reports = survey.randomize(answers, rng, arms=arms, memo=memo)
    body = {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(16), "reports": reports}
    if token is not None:
        credential = obtain_credential(base_url, survey_id, token, retries=retries, backoff=backoff, timeout=timeout) \
            if payload.get("access") == "token" else None
        body.update({"credential": credential} if credential is not None else {"token": token})
    if payload.get("wave") is not None:
        body["wave"] = payload["wave"]
    try:
        acknowledgement, created = post_response(base_url, survey_id, body, retries=retries, backoff=backoff,
                                                 timeout=timeout)
    except SubmitError as error:
        if outbox is None or not error.retryable:
            raise
        outbox.add(base_url, survey_id, body)
        return Submission(acknowledgement=None, reports=reports, spec_hash=survey.hash, created=False, queued=True)
    return Submission(acknowledgement=acknowledgement, reports=reports, spec_hash=survey.hash, created=created)


def obtain_credential(base_url: str, survey_id: str, token: str, *, retries: int = 4, backoff: float = 0.25,
                      timeout: float = 10.0) -> dict | None:
    """Exchange an invitation ``token`` for a blind-signed credential (`blind_rsa`): {"key", "serial", "signature"},
    sent with the response instead of the token, so the server cannot join the invitation to the response. None from
    a server that issues none (older than credentials: the token is sent itself, as it was). The same blinded
    message is sent on every retry, which the server answers again; a second call for one token is refused (409 on
    ``token``): an invitation receives one credential."""
    base = f"{base_url.rstrip('/')}/api/v1/surveys/{urllib.parse.quote(survey_id, safe='')}"
    try:
        _, offered = _with_retries("POST", f"{base}/credential-key", {"token": token}, retries, backoff, timeout)
    except SurveyNotFound as error:
        if error.field is None:  # no such route: a server without credentials
            return None
        raise
    key = blind_rsa.PublicKey(int(offered["modulus"], 16), int(offered["exponent"]))
    serial = blind_rsa.prepare(secrets.token_bytes(32))
    blinded, inverse = blind_rsa.blind(key, serial)
    _, signed = _with_retries("POST", f"{base}/credentials", {"token": token, "key": offered["key"],
                                                               "blinded": blinded.hex()}, retries, backoff, timeout)
    signature = blind_rsa.finalize(key, serial, bytes.fromhex(signed["blind_signature"]), inverse)
    return {"key": offered["key"], "serial": serial.hex(), "signature": signature.hex()}


def unreachable(error: SubmitError) -> bool:
    """True for a send that never got an answer from the server (no connection, DNS, a timeout)."""
    return error.status is None


_OUTBOX_FIELDS = ("spec_hash", "idempotency_key", "reports", "token", "credential", "wave")


@dataclass
class Flushed:
    """What `Outbox.flush` did: acknowledgements of the bodies delivered, the refusals (dropped: retrying
    cannot help), and how many bodies still wait for a connection."""

    sent: list = field(default_factory=list)
    refused: list = field(default_factory=list)
    kept: int = 0


class Outbox:
    """Responses that could not be sent yet, in a JSON file the embedding app chooses (created 0600, only
    for this user): already randomized bodies (reports, spec hash, idempotency key, the invitation token
    if any), never a true answer. Each is sent with its own idempotency key, so a body that did reach
    the server before the connection dropped is stored once however often it is sent. Several processes
    may share one outbox: every change, and every flush as a whole, holds an exclusive lock (``flock`` on
    ``<file>.lock``, where the system has it), and the file is rewritten whole, atomically. A file that is
    not an outbox (corrupted, cut short) is moved aside to ``<file>.corrupt-<time>`` and the outbox starts
    empty, rather than failing every send."""

    def __init__(self, path):
        self.path = Path(path)

    @contextlib.contextmanager
    def _locked(self):
        lock = self.path.with_name(self.path.name + ".lock")
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def entries(self) -> list[dict]:
        """Every kept entry: ``{"base_url", "survey_id", "body"}``."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except UnicodeDecodeError:
            text = None
        try:
            entries = None if text is None else json.loads(text) if text.strip() else []
        except ValueError:
            entries = None
        if not isinstance(entries, list) or not all(_is_entry(e) for e in entries):
            self._quarantine()
            return []
        return entries

    def _quarantine(self):
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(2)}")
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            pass

    def add(self, base_url: str, survey_id: str, body: dict) -> None:
        kept = {name: body[name] for name in _OUTBOX_FIELDS if name in body}
        if not isinstance(kept.get("idempotency_key"), str):
            raise ValueError("an outbox entry needs the body's idempotency_key")
        entry = {"base_url": base_url, "survey_id": survey_id, "body": kept}
        with self._locked():
            entries = self.entries()
            same = [i for i, e in enumerate(entries) if e["body"]["idempotency_key"] == kept["idempotency_key"]]
            if same:
                entries[same[0]] = entry  # one entry per response
            else:
                entries.append(entry)
            self._write(entries)

    def flush(self, survey_id: str | None = None, *, retries: int = 1, backoff: float = 0.25,
              timeout: float = 10.0) -> Flushed:
        """Send every kept body (or ``survey_id``'s). Delivered and refused ones leave the outbox;
        those that find no connection (or a server that cannot take them yet) stay. Two flushes at once
        take turns: the second finds what the first delivered already gone."""
        result = Flushed()
        with self._locked():
            for entry in self.entries():
                if survey_id is not None and entry["survey_id"] != survey_id:
                    continue
                try:
                    acknowledgement, _ = post_response(entry["base_url"], entry["survey_id"], entry["body"],
                                                       retries=retries, backoff=backoff, timeout=timeout)
                    result.sent.append(acknowledgement)
                except SubmitError as error:
                    if error.retryable:  # no final answer yet: kept for the next flush
                        continue
                    result.refused.append(error)
                key = entry["body"]["idempotency_key"]
                self._write([e for e in self.entries() if e["body"]["idempotency_key"] != key])
            result.kept = sum(1 for e in self.entries() if survey_id is None or e["survey_id"] == survey_id)
        return result

    def _write(self, entries: list) -> None:
        if not entries:
            self.path.unlink(missing_ok=True)  # nothing waits: nothing left on the device
            return
        write_private(self.path, json.dumps(entries))


def _is_entry(entry) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("base_url"), str) and isinstance(entry.get("survey_id"), str)
            and isinstance(entry.get("body"), dict) and isinstance(entry["body"].get("idempotency_key"), str))
