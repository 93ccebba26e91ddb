"""What the server's own logs may say: never a client's address, never an invitation token.

gunicorn writes "Invalid request from ip=… " for a malformed request and the request's URI (an
invitation link carries its token in the query) when a request fails; docs/privacy.md promises that
neither reaches a log. `AddressFreeLogger` is gunicorn's logger with every message passed through
`redact` first.
"""

from __future__ import annotations

import re

from gunicorn.glogging import Logger

_IP = re.compile(r"ip=\S+?(?=:?\s|$)"  # gunicorn's "Invalid request from ip=…: …"
                 r"|\b\d{1,3}(?:\.\d{1,3}){3}\b"  # IPv4
                 r"|\[?(?=[0-9A-Fa-f:]*::)[0-9A-Fa-f:]{2,39}\]?"  # IPv6 with "::"
                 r"|\[?(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\]?")  # full IPv6
_QUERY = re.compile(r"(/[^\s?]*)\?\S*")


def redact(message: str) -> str:
    """The message with client addresses and query strings (which may hold an invitation token) removed."""
    message = _IP.sub(lambda m: "ip=[hidden]" if m.group(0).startswith("ip=") else "[address hidden]", message)
    return _QUERY.sub(r"\1?[query hidden]", message)


class AddressFreeLogger(Logger):
    """gunicorn's error log with `redact` applied to every message (the access log is off altogether)."""

    def _clean(self, msg, args):
        text = str(msg) % args if args else str(msg)
        return redact(text)

    def critical(self, msg, *args, **kwargs):
        super().critical(self._clean(msg, args), **kwargs)

    def error(self, msg, *args, **kwargs):
        super().error(self._clean(msg, args), **kwargs)

    def warning(self, msg, *args, **kwargs):
        super().warning(self._clean(msg, args), **kwargs)

    def info(self, msg, *args, **kwargs):
        super().info(self._clean(msg, args), **kwargs)

    def debug(self, msg, *args, **kwargs):
        super().debug(self._clean(msg, args), **kwargs)

    def exception(self, msg, *args, **kwargs):
        super().exception(self._clean(msg, args), **kwargs)
