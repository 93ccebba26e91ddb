"""When a survey takes answers: ``opens`` and ``closes`` in its spec, each an instant with its time zone.

Written as ``2026-12-01T09:00:00+01:00`` or ``2026-12-01T08:00Z`` (seconds optional, no fractions), kept in the spec
in one form, UTC to the second (``2026-12-01T08:00:00Z``), so the spec's hash does not depend on how the time was
written; the JS twin (``src/schedule.js``) reads and writes the same. Before ``opens`` a survey is not yet open, from
``closes`` on it is closed: its pages say so and the server stores nothing (`storage` checks every submission)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from .errors import SpecError

_INSTANT = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?(Z|[+-]\d{2}:\d{2})")
_EXAMPLE = "e.g. 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z"


def parse_instant(value, where: str) -> dt.datetime:
    """An instant written with its time zone, as an aware UTC datetime; a clear `SpecError` otherwise."""
    match = _INSTANT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise SpecError(f"{where}: an instant with its time zone, {_EXAMPLE}, got {value!r}")
    year, month, day, hour, minute, second = (int(part or 0) for part in match.groups()[:6])
    zone = match.group(7)
    offset = dt.timedelta(0) if zone == "Z" else (1 if zone[0] == "+" else -1) * dt.timedelta(
        hours=int(zone[1:3]), minutes=int(zone[4:6]))
    if offset.total_seconds() and (abs(offset) > dt.timedelta(hours=14) or int(zone[4:6]) > 59):
        raise SpecError(f"{where}: an instant with its time zone, {_EXAMPLE}, got {value!r}")
    try:
        local = dt.datetime(year, month, day, hour, minute, second)
    except ValueError:
        raise SpecError(f"{where}: an instant with its time zone, {_EXAMPLE}, got {value!r}") from None
    return (local - offset).replace(tzinfo=dt.timezone.utc)


def written(instant: dt.datetime) -> str:
    """The one form an instant is kept in: UTC, to the second."""
    return instant.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Schedule:
    """A survey's fieldwork window; either end may be open (None)."""
    opens: dt.datetime | None = None
    closes: dt.datetime | None = None

    @classmethod
    def read(cls, opens, closes) -> "Schedule":
        start = None if opens is None else parse_instant(opens, "survey.opens")
        end = None if closes is None else parse_instant(closes, "survey.closes")
        if start is not None and end is not None and end <= start:
            raise SpecError(f"survey.closes: must be after survey.opens ({written(start)}), got {written(end)}")
        return cls(start, end)

    def state(self, now: dt.datetime | None = None) -> str:
        """"not open" before ``opens``, "closed" from ``closes`` on, else "open"."""
        now = now or dt.datetime.now(dt.timezone.utc)
        if self.opens is not None and now < self.opens:
            return "not open"
        if self.closes is not None and now >= self.closes:
            return "closed"
        return "open"

    def to_dict(self) -> dict:
        return {key: written(value) for key, value in (("opens", self.opens), ("closes", self.closes))
                if value is not None}
