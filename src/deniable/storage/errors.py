"""Storage's refusals: each is a `DeniableError` with the HTTP status it answers with."""

from __future__ import annotations

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
