"""Exact arithmetic shared by every mechanism: parsing probabilities, bounding e^ε by rationals.

Everything here is integer or `Fraction` arithmetic so that the JavaScript twin
(`client/js/deniable.js`) reproduces each channel bit for bit. No transcendental
function of the floating-point library decides a probability: two languages'
`exp` may differ in the last bit, and then the "same" spec would give two channels.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

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
