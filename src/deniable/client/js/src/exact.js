// Exact arithmetic: BigInt fractions, exact ε from a channel, the 2^-32 grid (Python: exact.py).
// Part of deniable.js; no dependencies.

import { SpecError, show } from "./errors.js";

export const EXP_GRID_BITS = 32n;
const TAYLOR_STOP_BITS = 48n;
export const MAX_GRID_POINTS = 10001;
export const MAX_MULTI_SELECT_OPTIONS = 16;
export const ORDINAL_BASE_BITS = 20n;

const abs = (x) => (x < 0n ? -x : x);
const trailingZeros = (x) => (x & -x).toString(2).length - 1;  // x > 0
/** The greatest common divisor. Common factors of two first, in O(n): a number grid's α is 2^k/D (D odd), so its e^ε
 * over 10,001 points is D^N/2^(kN), 320,000 bits over 320,000, and Euclid's steps on those took 25 s where a factor of
 * two settles it at once (Python's math.gcd is Lehmer's, in C). */
export const gcd = (a, b) => {
  a = abs(a);
  b = abs(b);
  if (a === 0n || b === 0n) return a + b;
  const twosA = trailingZeros(a), twosB = trailingZeros(b);
  a >>= BigInt(twosA);
  b >>= BigInt(twosB);
  if (a !== 1n && b !== 1n) while (b) [a, b] = [b, a % b];
  else a = 1n;
  return a << BigInt(Math.min(twosA, twosB));
};

/** An exact rational n/d with d > 0, always reduced. */
export class Fraction {
  constructor(n, d = 1n) {
    n = BigInt(n);
    d = BigInt(d);
    if (d === 0n) throw new RangeError("division by zero");
    if (d < 0n) [n, d] = [-n, -d];
    const g = gcd(n, d) || 1n;
    this.n = n / g;
    this.d = d / g;
  }
  /** n/d already reduced, d > 0: no gcd (of a power's 320,000-bit parts, say). */
  static #reduced(n, d) {
    const f = Object.create(Fraction.prototype);
    f.n = n;
    f.d = d;
    return f;
  }
  add(o) { return new Fraction(this.n * o.d + o.n * this.d, this.d * o.d); }
  sub(o) { return new Fraction(this.n * o.d - o.n * this.d, this.d * o.d); }
  // Each side reduced against the other's denominator (as Python's Fraction does): the gcds are of one factor each,
  // not of the products.
  mul(o) {
    if (this.n === 0n || o.n === 0n) return Fraction.#reduced(0n, 1n);
    const g1 = gcd(this.n, o.d), g2 = gcd(o.n, this.d);
    return Fraction.#reduced((this.n / g1) * (o.n / g2), (this.d / g2) * (o.d / g1));
  }
  div(o) {
    if (o.n === 0n) throw new RangeError("division by zero");
    return this.mul(o.n < 0n ? Fraction.#reduced(-o.d, -o.n) : Fraction.#reduced(o.d, o.n));
  }
  // A reduced fraction's power is reduced.
  pow(k) { return Fraction.#reduced(this.n ** BigInt(k), this.d ** BigInt(k)); }
  cmp(o) { const x = this.n * o.d - o.n * this.d; return x < 0n ? -1 : x > 0n ? 1 : 0; }
  floor() { const q = this.n / this.d; return this.n < 0n && q * this.d !== this.n ? q - 1n : q; }
  isZero() { return this.n === 0n; }
  toString() { return this.d === 1n ? `${this.n}` : `${this.n}/${this.d}`; }
  toPair() { return [this.n, this.d]; }
  toNumber() { return Number(this.n) / Number(this.d); }
}
export const ONE = new Fraction(1n);
export const ZERO = new Fraction(0n);
export const frac = (n, d = 1n) => new Fraction(n, d);
export const fmax = (a, b) => (a.cmp(b) >= 0 ? a : b);
export const fmin = (a, b) => (a.cmp(b) <= 0 ? a : b);

function logFraction(f) {
  const x = f.toNumber();
  if (x > 0 && Number.isFinite(x)) return Math.log(x);
  const bits = (v) => v.toString(2).length;
  // ln(n/d) for huge n, d: shift both to 53 significant bits first.
  const scaleN = BigInt(Math.max(0, bits(f.n) - 53));
  const scaleD = BigInt(Math.max(0, bits(f.d) - 53));
  return Math.log(Number(f.n >> scaleN)) - Math.log(Number(f.d >> scaleD)) + Number(scaleN - scaleD) * Math.LN2;
}

/** The next float up (the one Python's math.nextafter(x, inf) gives). */
function nextUp(x) {
  if (!Number.isFinite(x)) return x;
  if (x === 0) return Number.MIN_VALUE;
  const bits = new BigInt64Array(new Float64Array([x]).buffer);
  bits[0] += x > 0 ? 1n : -1n;
  return new Float64Array(bits.buffer)[0];
}

/**
 * epsilon as a Number from the exact worst-case ratio e^epsilon (null: unbounded), rounded
 * upward as in Python: ln1p of the exact excess over 1, then two steps up.
 */
export function epsilonOf(expEpsilon) {
  if (expEpsilon === null) return Infinity;
  const excess = expEpsilon.sub(ONE);
  if (excess.isZero()) return 0;
  const x = excess.toNumber();
  const nearest = Number.isFinite(x) ? Math.log1p(x) : logFraction(expEpsilon);
  return nextUp(nextUp(nearest));
}

/** A grid value as the JSON number both clients produce. */
export function jsonNumber(f) {
  return f.d === 1n ? Number(f.n) : f.toNumber();
}

const RATIO = /^([+-]?\d{1,40})\s*\/\s*(\d{1,40})$/;
const DECIMAL = /^([+-]?)(\d{1,40}\.?\d{0,40}|\.\d{1,40})(?:[eE]([+-]?\d{1,3}))?$/;
const LN = /^\s*(?:ln|log)\s*\(?\s*([0-9./eE+-]+)\s*\)?\s*$/;

/** Read a number or a fraction written as a number, "1/4" or "0.25" (numbers via their shortest decimal). */
export function parseFraction(value, field) {
  const bad = () => new SpecError(`${field}: expected a number or a fraction such as '1/4', got ${show(value)}`);
  let text;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new SpecError(`${field}: must be finite, got ${show(value)}`);
    text = String(value);
  } else if (typeof value === "bigint") {
    return frac(value);
  } else if (typeof value === "string") {
    text = value.trim();
  } else {
    throw bad();
  }
  const ratio = RATIO.exec(text);
  if (ratio) {
    if (BigInt(ratio[2]) === 0n) throw new SpecError(`${field}: division by zero in ${show(value)}`);
    return frac(BigInt(ratio[1]), BigInt(ratio[2]));
  }
  const decimal = DECIMAL.exec(text);
  if (!decimal) throw bad();
  const [whole, fraction = ""] = decimal[2].split(".");
  const digits = BigInt((whole || "0") + fraction) * (decimal[1] === "-" ? -1n : 1n);
  const exponent = BigInt(decimal[3] ?? "0") - BigInt(fraction.length);
  return exponent >= 0n ? frac(digits * 10n ** exponent) : frac(digits, 10n ** -exponent);
}

/** The largest integer r with r ** degree <= value. */
export function integerRoot(value, degree) {
  value = BigInt(value);
  degree = BigInt(degree);
  if (value < 2n || degree === 1n) return value;
  const bitLength = BigInt(value.toString(2).length);
  let guess = 1n << ((bitLength + degree - 1n) / degree);
  for (;;) {
    const better = ((degree - 1n) * guess + value / guess ** (degree - 1n)) / degree;
    if (better >= guess) break;
    guess = better;
  }
  while (guess ** degree > value) guess -= 1n;
  while ((guess + 1n) ** degree <= value) guess += 1n;
  return guess;
}

/** A privacy budget as written in a spec: a rational value, or ln(c). */
export class EpsilonRequest {
  constructor({ value = null, lnOf = null }) {
    this.value = value;
    this.lnOf = lnOf;
  }
  static parse(raw, field, ceiling = 50) {
    if (typeof raw === "string") {
      const match = LN.exec(raw);
      if (match) {
        const base = parseFraction(match[1], field);
        if (base.cmp(ONE) <= 0) throw new SpecError(`${field}: must be greater than 0, got ${show(raw)} (ln of a number ≤ 1)`);
        return new EpsilonRequest({ lnOf: base });
      }
    }
    const value = parseFraction(raw, field);
    if (value.cmp(ZERO) <= 0) throw new SpecError(`${field}: must be greater than 0, got ${show(raw)}`);
    if (ceiling !== null && value.cmp(frac(BigInt(ceiling))) > 0) {
      throw new SpecError(`${field}: ${show(raw)} is so large that the answer is practically sent as is; use privacy: none`);
    }
    return new EpsilonRequest({ value });
  }
  toNumber() { return this.lnOf ? logFraction(this.lnOf) : this.value.toNumber(); }
  canonical() {
    if (this.lnOf) return `ln(${this.lnOf})`;
    return jsonNumber(this.value);
  }
  /** Whether a total with exact e^epsilon `expEpsilon()` (a function: worked out only at a hair's breadth, since the
   * product of many wide grids' has millions of bits; null: infinite; `spent`: its epsilon) is within this budget:
   * floats decide when clear of it, the exact product at a hair's breadth (Python: EpsilonRequest.allows). */
  allows(expEpsilon, spent) {
    if (spent === Infinity) return false;
    const budget = this.toNumber();
    const margin = 1e-9 * Math.max(1, budget);
    if (spent < budget - margin) return true;
    if (spent > budget + margin) return false;
    const exact = expEpsilon();
    return exact !== null && exact.cmp(this.lnOf ?? this.expLowerBound()) <= 0;
  }
  /** A rational L <= e^(epsilon/divisor) on the 2^-32 grid; exact for ln(c) with divisor 1. */
  expLowerBound(divisor = 1) {
    const d = BigInt(divisor);
    const scale = 1n << EXP_GRID_BITS;
    if (this.lnOf) {
      const target = (this.lnOf.n * scale ** d) / this.lnOf.d;
      return frac(integerRoot(target, d), scale);
    }
    const x = this.value.div(frac(d));
    const stop = frac(1n, 1n << TAYLOR_STOP_BITS);
    let total = ONE;
    let term = ONE;
    for (let k = 1n; ; k++) {
      term = term.mul(x).div(frac(k));
      total = total.add(term);
      if (term.cmp(stop) < 0) break;
    }
    return frac(total.mul(frac(scale)).floor(), scale);
  }
}
