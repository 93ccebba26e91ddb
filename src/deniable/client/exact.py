"""Exact arithmetic shared by every mechanism: parsing probabilities, bounding e^ε by rationals.

Everything here is integer or `Fraction` arithmetic so that the JavaScript twin
(`client/js/deniable.js`) reproduces each channel bit for bit. No transcendental
function of the floating-point library decides a probability: two languages'
`exp` may differ in the last bit, and then the "same" spec would give two channels.
"""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction

from .errors import DeniableError

#: Rational lower bounds of e^x are floored onto this grid (denominator 2^32).
EXP_GRID_BITS = 32
#: The Taylor series of e^x stops once a term falls below 2^-48.
_TAYLOR_STOP = Fraction(1, 2**48)

_RATIO = re.compile(r"([+-]?\d{1,40})\s*/\s*(\d{1,40})", re.ASCII)
# Bounded lengths and exponents: "1e999999999" would otherwise build a billion-digit integer.
_DECIMAL = re.compile(r"[+-]?(\d{1,40}\.?\d{0,40}|\.\d{1,40})([eE][+-]?\d{1,3})?", re.ASCII)
_LN_PATTERN = re.compile(r"^\s*(?:ln|log)\s*\(?\s*([0-9./eE+\-]+)\s*\)?\s*$")


def parse_fraction(value, field: str) -> Fraction:
    """Read a probability or number written as an int, a float, ``"1/4"`` or ``"0.25"``.

    Floats are read through their shortest decimal form (``0.1`` is 1/10, not the binary
    double nearest it), the same rule JavaScript's ``String(x)`` gives the twin.
    """
    if isinstance(value, bool):
        raise ValueError(f"{field}: expected a number or a fraction such as '1/4', got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{field}: must be finite, got {value!r}")
        return Fraction(repr(value))
    if isinstance(value, str):
        text = value.strip()
        ratio = _RATIO.fullmatch(text)
        if ratio:
            if int(ratio.group(2)) == 0:
                raise ValueError(f"{field}: division by zero in {value!r}")
            return Fraction(int(ratio.group(1)), int(ratio.group(2)))
        if _DECIMAL.fullmatch(text):
            return Fraction(text)
    raise ValueError(f"{field}: expected a number or a fraction such as '1/4', got {value!r}")


@dataclass(frozen=True)
class EpsilonRequest:
    """A privacy budget as written in a spec: a rational ``x`` or ``ln(c)`` for rational ``c``."""

    value: Fraction | None = None  # ε = value
    ln_of: Fraction | None = None  # ε = ln(ln_of)

    @classmethod
    def parse(cls, raw, field: str, ceiling: int | None = 50) -> "EpsilonRequest":
        if isinstance(raw, str):
            match = _LN_PATTERN.match(raw)
            if match:
                base = parse_fraction(match.group(1), field)
                if base <= 1:
                    raise ValueError(f"{field}: must be greater than 0, got {raw!r} (ln of a number ≤ 1)")
                return cls(ln_of=base)
        value = parse_fraction(raw, field)
        if value <= 0:
            raise ValueError(f"{field}: must be greater than 0, got {raw!r}")
        if ceiling is not None and value > ceiling:
            raise ValueError(f"{field}: {raw!r} is so large that the answer is practically sent as is; use privacy: none")
        return cls(value=value)

    def __float__(self) -> float:
        if self.ln_of is not None:
            return _log_fraction(self.ln_of)
        return float(self._rational)

    def canonical(self):
        """The spec form that is hashed: ``"ln(3)"`` or the number as the user wrote it."""
        if self.ln_of is not None:
            return f"ln({self.ln_of})"
        value = self._rational
        return int(value) if value.denominator == 1 else float(value)

    @property
    def _rational(self) -> Fraction:
        """ε itself, when written as a rational (not ``ln(c)``)."""
        assert self.value is not None, "an ε written as ln(c) has no rational value"
        return self.value

    def allows(self, exp_epsilon, spent: float) -> bool:
        """Whether a total whose exact e^ε is ``exp_epsilon()`` (a function: worked out only at a hair's breadth,
        since the product of many wide grids' has millions of bits and took minutes to build; None: infinite;
        ``spent``: its ε as a float) is within this budget. Floats decide when they are clear of the budget; at a
        hair's breadth the exact product decides, met from below on the 2^-32 grid like every ε a spec asks for."""
        if math.isinf(spent):
            return False
        budget = float(self)
        margin = 1e-9 * max(1.0, budget)
        if spent < budget - margin:
            return True
        if spent > budget + margin:
            return False
        exact = exp_epsilon()
        return exact is not None and exact <= (self.ln_of if self.ln_of is not None else self.exp_lower_bound())

    def exp_lower_bound(self, divisor: int = 1) -> Fraction:
        """A rational L with L ≤ e^(ε/divisor), on the 2^-32 grid (exact for ε = ln(c), divisor 1)."""
        scale = 2**EXP_GRID_BITS
        if self.ln_of is not None:
            # floor(2^32 · c^(1/d)) = floor((floor(c · 2^(32d)))^(1/d)), an integer root.
            target = (self.ln_of.numerator * scale**divisor) // self.ln_of.denominator
            return Fraction(integer_root(target, divisor), scale)
        x = self._rational / divisor
        total, term, k = Fraction(1), Fraction(1), 0
        while True:
            k += 1
            term = term * x / k
            total += term
            if term < _TAYLOR_STOP:
                break
        return Fraction(math.floor(total * scale), scale)


def integer_root(value: int, degree: int) -> int:
    """The largest integer r with r**degree <= value (Newton's method on integers)."""
    if value < 0 or degree < 1:
        raise ValueError("integer_root needs value >= 0 and degree >= 1")
    if value < 2 or degree == 1:
        return value
    guess = 1 << -(-value.bit_length() // degree)  # an over-estimate
    while True:
        better = ((degree - 1) * guess + value // guess ** (degree - 1)) // degree
        if better >= guess:
            break
        guess = better
    while guess**degree > value:
        guess -= 1
    while (guess + 1) ** degree <= value:
        guess += 1
    return guess


def _log_fraction(ratio: Fraction) -> float:
    """ln of a positive Fraction, accurate even when numerator and denominator overflow a float."""
    try:
        as_float = float(ratio)
    except OverflowError:
        as_float = math.inf
    if 0.0 < as_float < math.inf:
        return math.log(as_float)
    return math.log(ratio.numerator) - math.log(ratio.denominator)


def epsilon_of(exp_epsilon: Fraction | None) -> float:
    """ε as a float from the exact worst-case likelihood ratio e^ε (None means unbounded).

    Rounded upward: ln1p of the exact excess over 1 (accurate to about an ulp even for tiny ε),
    then two steps up, so the float never understates the privacy loss the channel implies.
    """
    if exp_epsilon is None:
        return math.inf
    excess = exp_epsilon - 1
    if excess == 0:
        return 0.0
    try:
        nearest = math.log1p(float(excess))
    except OverflowError:
        nearest = _log_fraction(exp_epsilon)
    return math.nextafter(math.nextafter(nearest, math.inf), math.inf)


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


#: A spreadsheet reads a cell starting with one of these as a formula (OWASP's CSV injection rule).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value):
    """A CSV cell no spreadsheet runs as a formula: text starting with = + - @, a tab or a carriage return
    gets a leading apostrophe (numbers such as -3 stay numbers). `from_spreadsheet` undoes it."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_row(cells) -> str:
    """One CSV line ("\n"-terminated) of spreadsheet-safe cells (`CsvLines`, for one line)."""
    return CsvLines().line(cells)


class CsvLines:
    """CSV lines of spreadsheet-safe cells through one pair of writers and one buffer (a writer and a buffer made for
    each line were a fifth of an export's time). A line with a carriage return or a line feed in a cell is written
    with every cell quoted: Python's csv quotes a line feed but not a lone carriage return, which readers take for
    the end of the row, so the text after it began a new row whose first cell could be a formula ("a\r=HYPERLINK(…)")."""

    def __init__(self):
        import csv  # not loaded by `import deniable.client` (7 ms): CSV is the exports'

        self._buffer = io.StringIO()
        self._minimal = csv.writer(self._buffer, lineterminator="\n")
        self._quoted = csv.writer(self._buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def line(self, cells) -> str:
        safe = ["" if cell is None else spreadsheet_safe(cell) if isinstance(cell, str) and cell.startswith(_FORMULA_START)
                else cell for cell in cells]
        line = self._written(self._minimal, safe)
        if "\r" in line or line.find("\n") != len(line) - 1:  # a cell holds one: numbers never do
            line = self._written(self._quoted, safe)
        return line

    def _written(self, writer, cells) -> str:
        self._buffer.seek(0)
        self._buffer.truncate()
        writer.writerow(cells)
        return self._buffer.getvalue()


def from_spreadsheet(text: str) -> str:
    """The value a `spreadsheet_safe` cell stands for."""
    if text.startswith("'") and text[1:].startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text[1:]):
        return text[1:]
    return text
