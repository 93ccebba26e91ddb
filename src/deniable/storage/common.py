"""Small values every storage module writes the same way: dates, digests, canonical report text."""

from __future__ import annotations

import datetime as dt
import hashlib

from deniable.client.exact import canonical_json

#: How finely the day a response arrived is kept (the setting ``received_on``): a date can tell
#: a response from the others of that day to whoever saw someone answer on it.
GRANULARITIES = ("day", "week", "month")

canonical = canonical_json  # stored report values and fingerprints


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
