"""JSON text as both clients, the server and the store write and check it: the one canonical text of a value (spec
hashes, stored reports, the keys counts are made by), a rational grid value as its plain JSON number, and the check
that a parsed body or spec nests no deeper than allowed and holds only text every database takes."""

from __future__ import annotations

import json
import re
from fractions import Fraction

from .errors import DeniableError

#: Deeper than any survey spec or response body needs; deeper input is refused before it is walked.
MAX_JSON_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def printable_path(path: str) -> str:
    """A field path that can itself be written as UTF-8 (a lone surrogate shown as ``\\ud800``)."""
    return path.encode("utf-8", "backslashreplace").decode("utf-8")


class JsonShapeError(DeniableError, ValueError):
    """What `check_json_text` found: ``field`` (printable) and ``reason``."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}", field)
        self.reason = reason


def check_json_text(value, field: str, max_depth: int = MAX_JSON_DEPTH, text: bool = True) -> None:
    """`JsonShapeError` (a ValueError) naming the first place where ``value`` (parsed JSON or YAML) nests deeper than
    ``max_depth`` or holds a string, key included, that is not valid Unicode text (a lone
    surrogate such as ``"\\ud800"``, which JSON's escapes allow but no database or UTF-8
    encoder accepts), or a NUL character (which PostgreSQL's text refuses). Iterative, so no input can
    exhaust the stack. ``text=False`` checks depth only."""
    if text:
        try:  # the common case at C speed: no lone surrogate and no NUL anywhere, keys included
            dumped = json.dumps(value, ensure_ascii=False)
            dumped.encode("utf-8")  # a lone surrogate cannot be encoded
            if "\\u0000" not in dumped:
                text = False
                # Fewer brackets in all than the depth allowed: nothing can nest that deep (brackets inside strings
                # only count extra, so this never skips a value that is too deep).
                if dumped.count("{") + dumped.count("[") <= max_depth:
                    return
        except (UnicodeEncodeError, RecursionError, TypeError, ValueError):
            pass  # find where, below
    stack = [(value, field, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise JsonShapeError(printable_path(path), "not valid Unicode text (a lone surrogate)")
            if "\x00" in item:
                raise JsonShapeError(printable_path(path), "text with a NUL character, which no text field may hold")
            continue
        if depth >= max_depth:
            raise JsonShapeError(printable_path(path), f"nested deeper than {max_depth} levels")
        children = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in children:
            if isinstance(key, str):
                child_path = f"{path}.{key}" if path else key
                if text and _SURROGATE.search(key):
                    raise JsonShapeError(printable_path(child_path), "not valid Unicode text (a lone surrogate)")
                if text and "\x00" in key:
                    raise JsonShapeError(printable_path(child_path), "text with a NUL character, which no text field may hold")
            else:
                child_path = f"{path}[{key}]"
            # only containers, and strings while a surrogate is still to be found, are visited
            if isinstance(child, (dict, list)) or (text and isinstance(child, str)):
                stack.append((child, child_path, depth + 1))


def json_number(value: Fraction):
    """A grid value as the plain JSON number both clients produce (int when whole)."""
    if value.denominator == 1:
        return int(value)
    return float(value)


def canonical_json(value) -> str:
    """The one JSON text of a value (sorted keys, no spaces): spec hashes, stored report values,
    and the keys the analysis counts by all use it, so equal values always compare equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
