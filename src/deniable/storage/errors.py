"""Storage's refusals: each is a `DeniableError` with the HTTP status it answers with."""

from __future__ import annotations

import time

from deniable.client.errors import DeniableError


class StorageError(DeniableError):
    """Base of the storage layer's errors; each carries an HTTP status and the field at fault."""

    status = 400


class NotFound(StorageError):
    status = 404


class Conflict(StorageError):
    status = 409


class Unconfirmed(Conflict):
    """A version that needs a confirmation before it is published; ``needed`` names each (``lower-privacy``,
    ``redesign``), so every surface can ask for exactly those."""

    def __init__(self, message: str, needed: tuple[str, ...]):
        super().__init__(message, "confirm")
        self.needed = needed


class Gone(StorageError):
    status = 410


class Invalid(StorageError):
    status = 422


class Unavailable(StorageError):
    """The database cannot be reached (down, restarting, a connection lost mid-request): try again shortly."""

    status = 503


class DiskFull(StorageError):
    """The database's disk (or its size limit) is full: nothing was stored."""

    status = 507


#: The last failure of the database itself in this process (monotonic time, message): `Store.healthy` reports
#: it for a minute, so a load balancer stops sending writes to a server whose disk is full.
LAST_FAILURE: dict = {}


def refusal(error) -> StorageError | None:
    """What a failure of the database itself (not of the request) means for whoever sent the request:
    a full disk (507) or a read-only database (503), each saying nothing was stored. None otherwise."""
    text, name = str(error).lower(), error.__class__.__name__
    if "disk is full" in text or "no space left" in text or name == "DiskFull":
        refused = DiskFull("the server's disk is full: nothing was stored; send it again later", "db")
    elif "readonly database" in text or name == "ReadOnlySqlTransaction":
        refused = Unavailable("the database is read-only: nothing was stored; send it again later", "db")
    else:
        return None
    LAST_FAILURE.update(at=time.monotonic(), message=refused.message)
    return refused
