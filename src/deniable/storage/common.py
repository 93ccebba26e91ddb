"""Small values every storage module writes the same way: dates, digests, canonical report text, and the one way a
reader turns stored report text back into values."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

from deniable.client.json_text import canonical_json

#: How finely the day a response arrived is kept (the setting ``received_on``): a date can tell
#: a response from the others of that day to whoever saw someone answer on it.
GRANULARITIES = ("day", "week", "month")

canonical = canonical_json  # stored report values and fingerprints

#: The stored text of reports seen before: a question's reports come from a small alphabet.
_REPORT_TEXT: dict = {}


def canonical_report(value) -> str:
    """A report value's stored text (`canonical`), remembered: a question's reports take few values."""
    key = (type(value), value) if type(value) in (str, int) else None
    if key is None:
        return canonical(value)
    text = _REPORT_TEXT.get(key)
    if text is None:
        text = canonical(value)
        if len(_REPORT_TEXT) < 65536:
            _REPORT_TEXT[key] = text
    return text


#: Report texts a reader keeps decoded (a number on a wide grid has a few thousand).
MAX_DECODED = 100_000


def decoded_report(known: dict, text: str):
    """``text`` (a stored report) as its value, remembered in ``known`` for the next row that holds the same text: a
    question's reports take few values, and a million rows decoded each was a third of an export's time. Readers look
    ``known`` up themselves (a call per row costs what the lookup saves) and come here on a miss. Only strings and
    numbers are remembered, so a value shared between rows is one nobody can change; lists and mappings are decoded
    each time."""
    value = json.loads(text)
    if isinstance(value, (str, int, float)) and len(known) < MAX_DECODED:
        known[text] = value
    return value


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def today(granularity: str = "day") -> str:
    """Today (UTC) as a date, rounded down to the Monday of its ISO week or the first of its month."""
    date = utc_now().date()
    if granularity == "week":
        date -= dt.timedelta(days=date.weekday())
    elif granularity == "month":
        date = date.replace(day=1)
    return date.isoformat()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunks(sequence, size: int):
    sequence = list(sequence)
    for start in range(0, len(sequence), size):
        yield sequence[start:start + size]
