"""What the server's answer to a sent response means to the client that sent it: one table, read by the Python
client (`submit`, `Outbox`), written into the JS twin (``client/js/src/statuses.js``, by ``scripts/statuses_js.py``)
and printed in docs/api.md. A response is kept (in an outbox) until an answer whose ``retry`` is False.

Rows are matched on (status, field of the error body) first, then on the status alone; a status in no row is
judged by its class: 5xx retry later, any other 4xx refused for good.
"""

from __future__ import annotations

import time

#: status, the error body's field (None: any), the kind a client tells apart, whether to send again later, meaning
STATUS_TABLE = (
    (200, None, "stored", False, "stored before: a retry of a response the server already has (created false)"),
    (201, None, "stored", False, "stored"),
    (400, None, "refused", False, "the request is malformed (not JSON, a field of the wrong type)"),
    (404, None, "survey_not_found", False, "no survey with this id"),
    (404, "spec_hash", "stale_spec", False,
     "the spec hash names no version of this survey: fetch the survey again and ask again"),
    (408, None, "retry_later", True, "the request timed out on its way"),
    (409, "token", "token_used", False, "this invitation has answered already; each answers once"),
    (409, "credential", "token_used", False,
     "this invitation's credential has answered already (or, on a token, it holds a credential): each answers once"),
    (409, "wave", "no_wave_open", False, "the survey is repeated and no wave is open now"),
    (409, "quota", "quota_full", False,
     "the respondent's group (a quota cell of public answers) is full: the response was not stored; nothing to resend"),
    (409, "survey_id", "retry_later", True, "the survey opens later (its spec's opens): send it again once it is open"),
    (410, None, "closed", False, "the survey is closed"),
    (410, "wave", "wave_closed", False, "the wave this response was for has closed; it was not counted in another"),
    (413, None, "refused", False, "the request is too large"),
    (422, None, "refused", False, "a report or field is invalid; the error's field names it"),
    (425, None, "retry_later", True, "too early: send it again"),
    (429, None, "retry_later", True, "too many requests: send it again after Retry-After"),
    (500, None, "retry_later", True, "the server failed; nothing was acknowledged"),
    (502, None, "retry_later", True, "a proxy could not reach the server"),
    (503, None, "retry_later", True, "the server or its database cannot take it now: send it again after Retry-After"),
    (504, None, "retry_later", True, "a proxy timed out waiting for the server"),
    (507, None, "retry_later", True, "the server's disk is full: nothing was stored; send it again after Retry-After"),
)

_BY_KEY = {(status, field): (kind, retry) for status, field, kind, retry, _ in STATUS_TABLE}


def classify(status: int, field: str | None = None) -> tuple[str, bool]:
    """(kind, retry later) of an answer with this status and error field."""
    found = _BY_KEY.get((status, field)) or _BY_KEY.get((status, None))
    if found is not None:
        return found
    if status >= 500:
        return "retry_later", True
    if status >= 400:
        return "refused", False
    return "stored", False


def retryable(status: int | None, field: str | None = None) -> bool:
    """Whether a response that got this answer must be kept and sent again (None: no answer at all)."""
    return status is None or classify(status, field)[1]


def retry_after_seconds(value) -> float | None:
    """A Retry-After header's delay in seconds (RFC 9110: a number of seconds or an HTTP date), or None."""
    if value is None:
        return None
    text = str(value).strip()
    if text.isdigit():
        return float(text)

    import email.utils  # 8 ms off `import deniable.client`: a date in Retry-After is rare

    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())
