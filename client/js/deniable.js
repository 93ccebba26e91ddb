// deniable.js: randomize survey answers on the respondent's device (browser or Node >= 18).
//
// The twin of the Python package deniable.client: the same spec builds the same exact channel
// Q[r][a] = P(report r | answer a), here with BigInt fractions. Reports are drawn with
// crypto.getRandomValues and integer thresholds; no floating point decides a probability.
// epsilon is computed from the channel. Shared test vectors (tests/vectors/) keep the twins equal.
// No dependencies.

const cryptoSource = globalThis.crypto ?? (await import("node:crypto")).webcrypto;

// ---------------------------------------------------------------- exact arithmetic

export const EXP_GRID_BITS = 32n;
const TAYLOR_STOP_BITS = 48n;
export const MAX_GRID_POINTS = 1001;
export const MAX_MULTI_SELECT_OPTIONS = 16;
const ORDINAL_BASE_BITS = 20n;

const abs = (x) => (x < 0n ? -x : x);
const gcd = (a, b) => {
  a = abs(a);
  b = abs(b);
  while (b) [a, b] = [b, a % b];
  return a;
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
  add(o) { return new Fraction(this.n * o.d + o.n * this.d, this.d * o.d); }
  sub(o) { return new Fraction(this.n * o.d - o.n * this.d, this.d * o.d); }
  mul(o) { return new Fraction(this.n * o.n, this.d * o.d); }
  div(o) { return new Fraction(this.n * o.d, this.d * o.n); }
  pow(k) { return new Fraction(this.n ** BigInt(k), this.d ** BigInt(k)); }
  cmp(o) { const x = this.n * o.d - o.n * this.d; return x < 0n ? -1 : x > 0n ? 1 : 0; }
  floor() { const q = this.n / this.d; return this.n < 0n && q * this.d !== this.n ? q - 1n : q; }
  isZero() { return this.n === 0n; }
  toString() { return this.d === 1n ? `${this.n}` : `${this.n}/${this.d}`; }
  toPair() { return [this.n, this.d]; }
  toNumber() { return Number(this.n) / Number(this.d); }
}
const ONE = new Fraction(1n);
const ZERO = new Fraction(0n);
const frac = (n, d = 1n) => new Fraction(n, d);
const fmax = (a, b) => (a.cmp(b) >= 0 ? a : b);
const fmin = (a, b) => (a.cmp(b) <= 0 ? a : b);

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
function jsonNumber(f) {
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
  static parse(raw, field) {
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
    if (value.cmp(frac(50n)) > 0) {
      throw new SpecError(`${field}: ${show(raw)} is so large that the answer is practically sent as is; use privacy: none`);
    }
    return new EpsilonRequest({ value });
  }
  toNumber() { return this.lnOf ? logFraction(this.lnOf) : this.value.toNumber(); }
  canonical() {
    if (this.lnOf) return `ln(${this.lnOf})`;
    return jsonNumber(this.value);
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

// ---------------------------------------------------------------- randomness

// Random words come from a pool that one crypto.getRandomValues call fills: drawing one word per
// call made the call itself most of the cost of a report. The pool lives in this module only.
const POOL_WORDS = 2048;
const pool = new Uint32Array(POOL_WORDS);
let poolNext = POOL_WORDS;
const TWO_32 = 0x100000000;
const TWO_32_BIG = 0x100000000n;

function nextWord() {
  if (poolNext === POOL_WORDS) {
    cryptoSource.getRandomValues(pool);
    poolNext = 0;
  }
  return pool[poolNext++];
}

/** A uniform Number in [0, limit) for a whole 1 <= limit <= 2^32, by rejection (no modulo bias). */
function wordBelow(limit) {
  const ceiling = TWO_32 - (TWO_32 % limit);
  for (;;) {
    const word = nextWord();
    if (word < ceiling) return word % limit;
  }
}

/** A uniform BigInt in [0, n) from crypto.getRandomValues (rejection sampling, no modulo bias). */
export function randomBelow(n) {
  n = BigInt(n);
  if (n <= 0n) throw new RangeError("randomBelow needs n > 0");
  if (n <= TWO_32_BIG) return BigInt(wordBelow(Number(n)));
  const bits = BigInt((n - 1n).toString(2).length);
  const words = Number((bits + 31n) / 32n);
  const excess = BigInt(words) * 32n - bits;
  for (;;) {
    let value = 0n;
    for (let i = 0; i < words; i++) value = (value << 32n) | BigInt(nextWord());
    value >>= excess;
    if (value < n) return value;
  }
}

// `below` is the fast path for denominators that fit in 32 bits; a source without it (a test's
// scripted source) is asked for BigInts, and every sampler gives the same distribution either way.
const defaultSource = { randomBelow, below: wordBelow, word: nextWord };

/** Integer thresholds over a common denominator, for drawing an index: Numbers when they fit in 32 bits. */
function makeSampler(denominator, thresholds) {
  const small = denominator <= TWO_32_BIG;
  return { denominator, thresholds, limit: small ? Number(denominator) : 0, smallThresholds: small ? thresholds.map(Number) : null };
}

function drawIndex(sampler, source) {
  if (sampler.smallThresholds !== null && source.below) {
    const draw = source.below(sampler.limit);
    const thresholds = sampler.smallThresholds;
    let index = 0;
    while (draw >= thresholds[index]) index += 1;
    return index;
  }
  const draw = source.randomBelow(sampler.denominator);
  return sampler.thresholds.findIndex((t) => draw < t);
}

/** 32 uniform bits as a Number. */
function wordOf(source) {
  return source.word ? source.word() : Number(source.randomBelow(TWO_32_BIG));
}

/** True with probability n/d (a Fraction), exactly. */
function bernoulli(p, source) {
  if (p.d <= TWO_32_BIG && source.below) return source.below(Number(p.d)) < Number(p.n);
  return source.randomBelow(p.d) < p.n;
}

// ---------------------------------------------------------------- mechanisms

export class SpecError extends Error {
  constructor(message) {
    super(message);
    this.name = "SpecError";
  }
}

/** An answer the client refuses before randomizing anything (twin of Python's AnswerError):
 * `question` names the question, `allowed` says in words what it accepts. */
export class AnswerError extends RangeError {
  constructor(question, reason, allowed) {
    super(`answers.${question}: ${reason}; allowed: ${allowed}`);
    this.name = "AnswerError";
    this.question = question;
    this.reason = reason;
    this.allowed = allowed;
  }
}

function show(value) {
  if (typeof value === "string") return `'${value}'`;
  if (typeof value === "bigint") return `${value}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function worstRatio(rows) {
  let worst = ONE;
  for (const row of rows) {
    const high = row.reduce(fmax);
    const low = row.reduce(fmin);
    if (high.isZero()) continue;
    if (low.isZero()) return null;
    worst = fmax(worst, high.div(low));
  }
  return worst;
}

class Mechanism {
  get epsilon() { return epsilonOf(this.expEpsilon); }
  get isPrivate() { return this.expEpsilon !== null; }
  /** The full matrix Q[r][a] as Fractions, in the order of reports and answers. */
  channel() {
    const answers = this.answers;
    return this.reports.map((r) => answers.map((a) => this._probability(r, a)));
  }
  get expEpsilon() {
    if (this._expEpsilon === undefined) this._expEpsilon = this._computeExpEpsilon();
    return this._expEpsilon;
  }
  _computeExpEpsilon() { return worstRatio(this.channel()); }
  /** Exact P(report | answer) as a [numerator, denominator] pair of BigInts. */
  probability(report, answer) { return this._probability(report, answer).toPair(); }
}

export class ChannelMechanism extends Mechanism {
  constructor(design, params, answers, reports, columns) {
    super();
    this.design = design;
    this.params = params;
    this._answers = [...answers];
    this._reports = [...reports];
    this._columns = columns.map((column) => column.map((p) => (p instanceof Fraction ? p : frac(p))));
    this._samplers = new Map();
  }
  get answers() { return [...this._answers]; }
  get reports() { return [...this._reports]; }
  validateAnswer(answer) {
    if (!this._answers.includes(answer)) throw new RangeError(`answer ${show(answer)} is not one of ${show(this._answers)}`);
    return answer;
  }
  validateReport(report) {
    if (!this._reports.includes(report)) throw new RangeError(`report ${show(report)} is not one of ${show(this._reports)}`);
    return report;
  }
  _probability(report, answer) {
    const a = this._answers.indexOf(this.validateAnswer(answer));
    const r = this._reports.indexOf(this.validateReport(report));
    return this._columns[a][r];
  }
  channel() { return this._reports.map((_, r) => this._columns.map((column) => column[r])); }
  _sampler(a) {
    if (!this._samplers.has(a)) {
      const column = this._columns[a];
      let denominator = 1n;
      for (const p of column) denominator = (denominator * p.d) / gcd(denominator, p.d);
      let running = 0n;
      const thresholds = column.map((p) => (running += p.n * (denominator / p.d)));
      this._samplers.set(a, makeSampler(denominator, thresholds));
    }
    return this._samplers.get(a);
  }
  randomize(answer, source = defaultSource) {
    return this._reports[drawIndex(this._sampler(this._answerIndex(this.validateAnswer(answer))), source)];
  }
  _answerIndex(answer) {
    if (this._answerPositions === undefined) this._answerPositions = new Map(this._answers.map((a, i) => [a, i]));
    return this._answerPositions.get(answer);
  }
}

/** k-ary RR and the identity of a public choice: keep the answer with `keep`, send each other
 * option with `other`. Held as two numbers, not k² entries (twin of Python's SymmetricMechanism). */
export class SymmetricMechanism extends ChannelMechanism {
  constructor(design, params, options, keep, other) {
    super(design, params, options, options, []);
    this.keep = keep;
    this.other = other;
    this._index = new Map(options.map((option, i) => [option, i]));
    // One integer range for every answer, split as the written-out column would split it.
    const denominator = (keep.d * other.d) / gcd(keep.d, other.d);
    this._denominator = denominator;
    this._keepWidth = keep.n * (denominator / keep.d);
    this._otherWidth = other.n * (denominator / other.d);
    this._small = denominator <= TWO_32_BIG
      ? { limit: Number(denominator), keep: Number(this._keepWidth), other: Number(this._otherWidth) } : null;
  }
  get _columns() {
    return this._answers.map((_, a) => this._reports.map((__, r) => (r === a ? this.keep : this.other)));
  }
  set _columns(_ignored) {}
  _probability(report, answer) {
    const a = this._index.get(this.validateAnswer(answer));
    const r = this._index.get(this.validateReport(report));
    return r === a ? this.keep : this.other;
  }
  _computeExpEpsilon() {
    if (this._answers.length === 1) return ONE;
    const high = fmax(this.keep, this.other);
    const low = fmin(this.keep, this.other);
    return low.isZero() ? null : high.div(low);
  }
  randomize(answer, source = defaultSource) {
    const a = this._index.get(this.validateAnswer(answer));
    if (this._small !== null && source.below) {
      const { limit, keep, other } = this._small;
      const draw = source.below(limit);
      const before = a * other;
      if (draw < before) return this._reports[Math.floor(draw / other)];
      if (draw < before + keep) return this._reports[a];
      return this._reports[a + 1 + Math.floor((draw - before - keep) / other)];
    }
    const draw = source.randomBelow(this._denominator);
    const before = BigInt(a) * this._otherWidth;
    if (draw < before) return this._reports[Number(draw / this._otherWidth)];
    if (draw < before + this._keepWidth) return this._reports[a];
    return this._reports[a + 1 + Number((draw - before - this._keepWidth) / this._otherWidth)];
  }
}

/** The exponential mechanism on a scale, P(r | a) = w^|r-a| / Z_a, held as integer weights
 * W_d = n^d m^(k-1-d) for w = n/m (twin of Python's OrdinalMechanism, which proves
 * e^ε = w^-(k-1)). */
export class OrdinalMechanism extends ChannelMechanism {
  constructor(design, params, options, base) {
    super(design, params, options, options, []);
    this.base = base;
    this._index = new Map(options.map((option, i) => [option, i]));
  }
  get _weights() {
    if (this._weightsMade === undefined) {
      const k = this._answers.length;
      this._weightsMade = Array.from({ length: k }, (_, d) => this.base.n ** BigInt(d) * this.base.d ** BigInt(k - 1 - d));
    }
    return this._weightsMade;
  }
  get _totals() {
    if (this._totalsMade === undefined) {
      const weights = this._weights;
      const k = weights.length;
      let sum = 0n;
      const running = weights.map((w) => (sum += w));
      this._totalsMade = Array.from({ length: k }, (_, a) => running[a] + running[k - 1 - a] - weights[0]);
    }
    return this._totalsMade;
  }
  get _columns() {
    const k = this._answers.length;
    return Array.from({ length: k }, (_, a) => Array.from({ length: k }, (__, r) => frac(this._weights[Math.abs(r - a)], this._totals[a])));
  }
  set _columns(_ignored) {}
  _probability(report, answer) {
    const a = this._index.get(this.validateAnswer(answer));
    const r = this._index.get(this.validateReport(report));
    return frac(this._weights[Math.abs(r - a)], this._totals[a]);
  }
  _computeExpEpsilon() { return ONE.div(this.base).pow(this._answers.length - 1); }
  _sampler(a) {
    if (!this._samplers.has(a)) {
      const weights = this._answers.map((_, r) => this._weights[Math.abs(r - a)]);
      const common = weights.reduce(gcd, this._totals[a]);
      let running = 0n;
      const thresholds = weights.map((w) => (running += w / common));
      this._samplers.set(a, makeSampler(this._totals[a] / common, thresholds));
    }
    return this._samplers.get(a);
  }
}

export class UnaryMechanism extends Mechanism {
  constructor(design, params, options, keepOne, flipZero) {
    super();
    this.design = design;
    this.params = params;
    this.options = [...options];
    this.keepOne = keepOne;
    this.flipZero = flipZero;
  }
  /** [[P(0|0), P(0|1)], [P(1|0), P(1|1)]] shared by every option. */
  bitChannel() {
    return [[ONE.sub(this.flipZero), ONE.sub(this.keepOne)], [this.flipZero, this.keepOne]];
  }
  *_subsets() {
    for (let mask = 0; mask < 2 ** this.options.length; mask++) {
      yield this.options.filter((_, i) => (mask >> i) & 1);
    }
  }
  get answers() { return [...this._subsets()]; }
  get reports() { return [...this._subsets()]; }
  _bits(selection, what) {
    if (!Array.isArray(selection)) throw new RangeError(`${what} must be a list of options, got ${show(selection)}`);
    const chosen = new Set();
    for (const item of selection) {
      if (typeof item !== "string" || !this.options.includes(item)) {
        throw new RangeError(`${what} ${show(item)} is not one of the options ${show(this.options)}`);
      }
      if (chosen.has(item)) throw new RangeError(`${what} lists ${show(item)} twice`);
      chosen.add(item);
    }
    return this.options.map((o) => (chosen.has(o) ? 1 : 0));
  }
  validateAnswer(answer) {
    const bits = this._bits(answer, "answer");
    return this.options.filter((_, i) => bits[i]);
  }
  validateReport(report) {
    const bits = this._bits(report, "report");
    return this.options.filter((_, i) => bits[i]);
  }
  _probability(report, answer) {
    const channel = this.bitChannel();
    const answerBits = this._bits(answer, "answer");
    return this._bits(report, "report").reduce((p, r, i) => p.mul(channel[r][answerBits[i]]), ONE);
  }
  _computeExpEpsilon() {
    const perBit = worstRatio(this.bitChannel());
    return perBit === null ? null : perBit.pow(this.options.length);
  }
  randomize(answer, source = defaultSource) {
    const bits = this._bits(answer, "answer");
    return this.options.filter((_, i) => bernoulli(bits[i] ? this.keepOne : this.flipZero, source));
  }
}

export class LaplaceMechanism extends Mechanism {
  constructor(design, params, minimum, maximum, step, alpha) {
    super();
    this.design = design;
    this.params = params;
    this.minimum = minimum;
    this.maximum = maximum;
    this.step = step;
    this.points = Number(maximum.sub(minimum).div(step).floor());
    this.alpha = alpha; // null: no noise (a public question)
    this.reportRange = alpha === null ? [0, this.points] : [-this.points, 2 * this.points];
    this._floatMargin = 1e-6; // see _magnitude; tests set Infinity to take the exact path every time
  }
  _value(index) { return jsonNumber(this.minimum.add(this.step.mul(frac(BigInt(index))))); }
  get answers() { return Array.from({ length: this.points + 1 }, (_, i) => this._value(i)); }
  get reports() {
    const [low, high] = this.reportRange;
    return Array.from({ length: high - low + 1 }, (_, i) => this._value(low + i));
  }
  answerIndex(answer) {
    if (typeof answer !== "number" && typeof answer !== "string") throw new RangeError(`answer must be a number, got ${show(answer)}`);
    let value;
    try {
      value = parseFraction(answer, "answer");
    } catch {
      throw new RangeError(`answer must be a number, got ${show(answer)}`);
    }
    // refused, never clamped: 99 for a 0-20 question is a mistake, not a 20
    if (value.cmp(this.minimum) < 0 || value.cmp(this.maximum) > 0) {
      throw new RangeError(`answer ${show(answer)} is outside ${jsonNumber(this.minimum)} to ${jsonNumber(this.maximum)}`);
    }
    return Number(value.sub(this.minimum).div(this.step).add(frac(1n, 2n)).floor());
  }
  reportIndex(report) {
    if (typeof report !== "number") throw new RangeError(`report must be a number, got ${show(report)}`);
    const position = parseFraction(report, "report").sub(this.minimum).div(this.step);
    const [low, high] = this.reportRange;
    if (position.d !== 1n || position.n < BigInt(low) || position.n > BigInt(high)) {
      throw new RangeError(`report ${show(report)} is not on the grid ${this._value(low)}..${this._value(high)} step ${jsonNumber(this.step)}`);
    }
    return Number(position.n);
  }
  validateAnswer(answer) { return this._value(this.answerIndex(answer)); }
  validateReport(report) { return this._value(this.reportIndex(report)); }
  _indexProbability(r, a) {
    if (this.alpha === null) return r === a ? ONE : ZERO;
    const distance = Math.abs(r - a);
    const [low, high] = this.reportRange;
    if (r === low || r === high) return this.alpha.pow(distance).div(ONE.add(this.alpha));
    return ONE.sub(this.alpha).div(ONE.add(this.alpha)).mul(this.alpha.pow(distance));
  }
  _probability(report, answer) { return this._indexProbability(this.reportIndex(report), this.answerIndex(answer)); }
  _computeExpEpsilon() {
    // Every row's worst ratio is at most alpha^-N, reached at the ends (see the Python twin).
    if (this.alpha === null) return this.points > 0 ? null : ONE;
    return ONE.div(this.alpha).pow(this.points);
  }
  randomize(answer, source = defaultSource) {
    const index = this.answerIndex(answer);
    if (this.alpha === null) return this._value(index);
    const [low, high] = this.reportRange;
    const magnitude = this._magnitude(source);
    const noisy = magnitude > 0 && (wordOf(source) & 1) ? index - magnitude : index + magnitude;
    return this._value(Math.min(Math.max(noisy, low), high));
  }
  /**
   * |K| for noise K with P(K = k) ∝ α^|k|, by inversion of one uniform U: P(|K| >= m) = t(m) =
   * 2α^m / (1 + α) for m >= 1, so |K| = the largest m with U < t(m) (capped at 2N: any larger
   * magnitude clamps to the same report). A float estimate decides when U's first 64 bits put it
   * clearly between two thresholds (the margin is a thousand times the float error); otherwise exact
   * integer comparisons decide, reading more bits of U as needed. Constant cost at any range (the
   * twin of Python's LaplaceMechanism._magnitude).
   */
  _magnitude(source) {
    const cap = 2 * this.points;
    const high = wordOf(source);
    const low = wordOf(source);
    const u = high * TWO_32 + low; // U ∈ [u, u + 1) / 2^64
    if (this._logs === undefined) {
      const gap = Number(this.alpha.d - this.alpha.n) / Number(this.alpha.d); // 1 − α
      this._logs = { alpha: Math.log1p(-gap), half: Math.log1p(-gap / 2) }; // ln α, ln((1 + α)/2)
    }
    const x = (logU) => (logU + this._logs.half) / this._logs.alpha; // U < t(m) ⇔ m < x(U)
    if (u >= 1) {
      const most = x(Math.log(u) - 64 * Math.LN2); // the largest x over U's interval
      const least = x(Math.log(u + 1) - 64 * Math.LN2);
      const margin = this._floatMargin * (1 + Math.abs(most));
      if (least - margin > cap) return cap;
      const first = Math.ceil(most + margin) - 1;
      if (first === Math.ceil(least - margin) - 1) return Math.min(first, cap);
      return this._exactMagnitude(source, BigInt(high) * TWO_32_BIG + BigInt(low), Math.min(Math.max(first, 0), cap), cap);
    }
    return this._exactMagnitude(source, BigInt(high) * TWO_32_BIG + BigInt(low), cap, cap);
  }
  _exactMagnitude(source, prefix, guess, cap) {
    const { n: a, d: b } = this.alpha;
    let bits = prefix;
    let length = 64n;
    // U < t(m) = 2a^m / (b^(m−1)(a + b)), deciding with as many bits of U as it takes.
    const below = (m) => {
      if (m === 0) return true;
      const num = 2n * a ** BigInt(m);
      const den = b ** BigInt(m - 1) * (a + b);
      for (;;) {
        if ((bits + 1n) * den <= num << length) return true;
        if (bits * den >= num << length) return false;
        bits = (bits << 32n) | BigInt(wordOf(source));
        length += 32n;
      }
    };
    let m = guess;
    while (m < cap && below(m + 1)) m += 1;
    while (m > 0 && !below(m)) m -= 1;
    return m;
  }
}

// ---------------------------------------------------------------- designs

export const YES_NO = ["yes", "no"];

function probabilityParam(params, name, where) {
  if (!(name in params)) throw new SpecError(`${where}.${name}: missing`);
  const value = parseFraction(params[name], `${where}.${name}`);
  if (value.cmp(ZERO) < 0 || value.cmp(ONE) > 0) throw new SpecError(`${where}.${name}: must be between 0 and 1, got ${show(params[name])}`);
  return value;
}

function binary(design, params, yesGivenYes, yesGivenNo) {
  if (yesGivenYes.cmp(yesGivenNo) === 0) {
    throw new SpecError(`privacy: this ${design} design sends the same report whatever the answer; nothing about the population could be estimated`);
  }
  const columns = [[yesGivenYes, ONE.sub(yesGivenYes)], [yesGivenNo, ONE.sub(yesGivenNo)]];
  return new ChannelMechanism(design, params, YES_NO, YES_NO, columns);
}

function expBound(request, where, divisor = 1) {
  const bound = request.expLowerBound(divisor);
  if (bound.cmp(ONE) <= 0) {
    throw new SpecError(`${where}.epsilon: too small to give this question any signal; choose a larger epsilon`);
  }
  return bound;
}

function epsilonOr(params, where, alternative = null) {
  if ("epsilon" in params && alternative && alternative in params) {
    throw new SpecError(`${where}: give either epsilon or ${alternative}, not both`);
  }
  if ("epsilon" in params) return EpsilonRequest.parse(params.epsilon, `${where}.epsilon`);
  if (alternative && alternative in params) return null;
  throw new SpecError(`${where}: epsilon${alternative ? ` or ${alternative}` : ""} is required`);
}

const designBuilders = {
  forced_response(params, where) {
    const [truth, yes, no] = ["truth", "yes", "no"].map((n) => probabilityParam(params, n, where));
    const total = truth.add(yes).add(no);
    if (total.cmp(ONE) !== 0) throw new SpecError(`${where}: truth + yes + no must be 1, got ${truth} + ${yes} + ${no} = ${total}`);
    if (truth.isZero()) throw new SpecError(`${where}.truth: must be greater than 0, or the report carries no information`);
    const normalized = { design: "forced_response", truth: `${truth}`, yes: `${yes}`, no: `${no}` };
    return binary("forced_response", normalized, truth.add(yes), yes);
  },
  warner(params, where) {
    const p = probabilityParam(params, "p", where);
    if (p.cmp(frac(1n, 2n)) === 0) throw new SpecError(`${where}.p: 1/2 makes the report independent of the answer; choose p ≠ 1/2`);
    return binary("warner", { design: "warner", p: `${p}` }, p, ONE.sub(p));
  },
  unrelated_question(params, where) {
    const p = probabilityParam(params, "p", where);
    const innocuous = probabilityParam(params, "innocuous_yes", where);
    if (p.isZero()) throw new SpecError(`${where}.p: must be greater than 0, or the report carries no information`);
    const normalized = { design: "unrelated_question", p: `${p}`, innocuous_yes: `${innocuous}` };
    const yesGivenNo = ONE.sub(p).mul(innocuous);
    return binary("unrelated_question", normalized, p.add(yesGivenNo), yesGivenNo);
  },
  k_rr(params, where, options) {
    const k = options.length;
    const request = epsilonOr(params, where, "p_truth");
    let pTruth;
    let normalized;
    if (request) {
      const bound = expBound(request, where);
      pTruth = bound.div(bound.add(frac(BigInt(k - 1))));
      normalized = { design: "k_rr", epsilon: request.canonical() };
    } else {
      pTruth = probabilityParam(params, "p_truth", where);
      if (pTruth.cmp(frac(1n, BigInt(k))) <= 0) {
        throw new SpecError(`${where}.p_truth: must exceed 1/${k} (one over the number of options), got ${show(params.p_truth)}`);
      }
      normalized = { design: "k_rr", p_truth: `${pTruth}` };
    }
    return new SymmetricMechanism("k_rr", normalized, options, pTruth, ONE.sub(pTruth).div(frac(BigInt(k - 1))));
  },
  ordinal(params, where, options) {
    const request = epsilonOr(params, where);
    const bound = expBound(request, where);
    const degree = BigInt(options.length - 1);
    const scale = 1n << ORDINAL_BASE_BITS;
    // the smallest n with n^(k-1) * L >= scale^(k-1), L = bound as a fraction
    const wanted = scale ** degree * bound.d;
    const target = wanted / bound.n + (wanted % bound.n === 0n ? 0n : 1n);
    const root = integerRoot(target, degree);
    const n = root ** degree >= target ? root : root + 1n;
    const normalized = { design: "ordinal", epsilon: request.canonical() };
    return new OrdinalMechanism("ordinal", normalized, options, frac(n, scale));
  },
  unary(params, where, options) {
    const variant = params.variant ?? "symmetric";
    if (variant !== "symmetric" && variant !== "optimized") {
      throw new SpecError(`${where}.variant: must be 'symmetric' or 'optimized', got ${show(variant)}`);
    }
    const request = epsilonOr(params, where);
    const bound = expBound(request, where, options.length);
    let keepOne;
    let flipZero;
    if (variant === "symmetric") {
      keepOne = bound.div(ONE.add(bound));
      flipZero = ONE.sub(keepOne);
    } else {
      keepOne = frac(1n, 2n);
      flipZero = ONE.div(frac(2n).mul(bound));
    }
    const normalized = { design: "unary", epsilon: request.canonical(), variant };
    return new UnaryMechanism("unary", normalized, options, keepOne, flipZero);
  },
  laplace(params, where, options, grid) {
    const request = epsilonOr(params, where);
    const [minimum, maximum, step] = grid;
    const points = Number(maximum.sub(minimum).div(step).floor());
    const alpha = ONE.div(expBound(request, where, points));
    return new LaplaceMechanism("laplace", { design: "laplace", epsilon: request.canonical() }, minimum, maximum, step, alpha);
  },
};

/** design name -> [question types it serves, parameter names it accepts] */
export const DESIGNS = {
  forced_response: [["yes_no"], ["truth", "yes", "no"]],
  warner: [["yes_no"], ["p"]],
  unrelated_question: [["yes_no"], ["p", "innocuous_yes"]],
  k_rr: [["yes_no", "choice", "ordinal"], ["epsilon", "p_truth"]],
  ordinal: [["ordinal"], ["epsilon"]],
  unary: [["multi_select"], ["epsilon", "variant"]],
  laplace: [["number"], ["epsilon"]],
};

const DEFAULT_PRIVACY = { yes_no: { design: "forced_response", truth: "1/2", yes: "1/4", no: "1/4" } };

function publicMechanism(type, options, grid) {
  const params = { design: "none" };
  if (type === "yes_no") return new ChannelMechanism("none", params, YES_NO, YES_NO, [[ONE, ZERO], [ZERO, ONE]]);
  if (type === "choice" || type === "ordinal") {
    return new SymmetricMechanism("none", params, options, ONE, ZERO);
  }
  if (type === "multi_select") return new UnaryMechanism("none", params, options, ONE, ZERO);
  return new LaplaceMechanism("none", params, ...grid, null);
}

/** The mechanism a question's privacy field asks for. */
export function buildMechanism(type, privacy, where, options = null, grid = null) {
  if (privacy === "none") return publicMechanism(type, options, grid);
  if (privacy === null || typeof privacy !== "object" || Array.isArray(privacy)) {
    throw new SpecError(`${where}: expected 'none' or a mapping with a 'design', got ${show(privacy)}`);
  }
  const design = privacy.design;
  if (design === undefined || design === null) {
    // Usually a misspelt key ("desgin:"): name it rather than the design it failed to give.
    const others = Object.keys(privacy).filter((key) => key !== "design").sort();
    // difflib.get_close_matches: the best score at least 0.75, ties to the larger key.
    const close = others.map((key) => [similarity(key, "design"), key]).filter(([score]) => score >= 0.75)
      .sort(([a, x], [b, y]) => b - a || (y > x ? 1 : y < x ? -1 : 0)).map(([, key]) => key)[0];
    const hint = close ? `; is '${close}' a misspelling of 'design'?`
      : others.length ? ` (keys given: ${others.map((k) => `'${k}'`).join(", ")})` : "";
    throw new SpecError(`${where}.design: missing${hint} Choose one of ${Object.keys(DESIGNS).join(", ")} (or privacy: none)`);
  }
  if (!Object.hasOwn(DESIGNS, design)) {
    throw new SpecError(`${where}.design: unknown design ${show(design)}; choose one of ${Object.keys(DESIGNS).join(", ")} (or privacy: none)`);
  }
  const [types, accepted] = DESIGNS[design];
  if (!types.includes(type)) {
    throw new SpecError(`${where}.design: ${design} does not apply to ${type} questions (it serves ${types.join(", ")})`);
  }
  const unknown = Object.keys(privacy).filter((key) => key !== "design" && !accepted.includes(key)).sort();
  if (unknown.length) throw new SpecError(`${where}: unknown field '${unknown[0]}' for design ${design} (accepted: ${accepted.join(", ")})`);
  const mechanism = designBuilders[design](privacy, where, type === "yes_no" ? YES_NO : options, grid);
  // A requested ε is met from below (on a 2^-32 grid): 0.01 asked may come out a hair under 0.01.
  if (mechanism.expEpsilon !== null && mechanism.epsilon < MIN_EPSILON * (1 - 1e-3)) {
    throw new SpecError(`${where}: ε = ${Number(mechanism.epsilon.toPrecision(3))} is so close to 0 that a report says next to ` +
      `nothing about the answer; estimates would need millions of respondents. Use ε ≥ ${MIN_EPSILON} (0.5 to 3 is usual)`);
  }
  return mechanism;
}

/** Python's difflib ratio for two short keys: 2·matches / total length (matches by longest common blocks). */
function similarity(a, b) {
  const matches = (x, y) => {
    if (!x.length || !y.length) return 0;
    let best = 0, atX = 0, atY = 0;
    for (let i = 0; i < x.length; i++) {
      for (let j = 0; j < y.length; j++) {
        let k = 0;
        while (i + k < x.length && j + k < y.length && x[i + k] === y[j + k]) k++;
        if (k > best) { best = k; atX = i; atY = j; }
      }
    }
    if (!best) return 0;
    return best + matches(x.slice(0, atX), y.slice(0, atY)) + matches(x.slice(atX + best), y.slice(atY + best));
  };
  return (2 * matches(a, b)) / (a.length + b.length);
}

// ---------------------------------------------------------------- privacy for people

/** Below this epsilon a randomized question is refused (e^epsilon < 1.01: its reports carry next to nothing). */
export const MIN_EPSILON = 0.01;
/** Above this epsilon (ln 49) a question is flagged: a 2% prior can pass 50% after one report. */
export const WEAK_EPSILON = Math.log(49);

/** The largest posterior an observer can reach from `prior` after one report: q e^eps / (q e^eps + 1 - q). */
export function posteriorBound(prior, epsilon) {
  if (!(prior >= 0 && prior <= 1)) throw new RangeError(`prior must be between 0 and 1, got ${prior}`);
  if (epsilon === Infinity) return prior > 0 ? 1 : 0;
  const scaled = prior * Math.exp(epsilon);
  return scaled / (scaled + 1 - prior);
}

const percent = (x, digits) => `${(x * 100).toFixed(digits)}%`;

/** Plain-language privacy note for one question. */
export function privacyStatement(epsilon, prior = 0.02) {
  if (epsilon === Infinity) {
    return "This answer is sent exactly as you give it: it is not randomized, and anyone who sees the data sees your answer.";
  }
  return (
    `Your answer is randomized on your device before it is sent. Whatever anyone believed about you beforehand, ` +
    `your report can change the odds by a factor of at most ${Number(Math.exp(epsilon).toPrecision(3))} ` +
    `(ε = ${Number(epsilon.toPrecision(3))}): someone ${percent(prior, 0)} sure would become at most ` +
    `${percent(posteriorBound(prior, epsilon), 1)} sure.`
  );
}

// ---------------------------------------------------------------- skip logic

// The expression language of `relevant` (and conditional `required`), the twin of
// deniable/client/skiplogic.py: the same grammar, the same tree, the same canonical text,
// the same answers. Shared vectors (tests/vectors/skiplogic.json) keep them equal.
export class ExpressionError extends Error {
  constructor(message) {
    super(message);
    this.name = "ExpressionError";
  }
}

const KEYWORDS = new Set(["and", "or", "not", "selected"]);
const ORDERINGS = ["<", "<=", ">", ">="];
export const MAX_EXPRESSION_LENGTH = 2000;
const MAX_EXPRESSION_DEPTH = 40;
const MAX_NUMBER_LENGTH = 30;
const TOKEN = /\s*(?:('[^']*'|"[^"]*")|(<=|>=|!=|=|<|>)|([(),])|([A-Za-z0-9_.\-]+))/y;
const NUMBER = /^-?[0-9]+(?:\.[0-9]+)?$/;
const QUESTION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function reprText(value) {
  // Python's repr of a string, so that both twins word their errors alike.
  return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replaceAll("'", "\\'")}'`;
}

function tokenize(text) {
  const tokens = [];
  const end = text.trimEnd().length;
  let position = 0;
  while (position < end) {
    TOKEN.lastIndex = position;
    const match = TOKEN.exec(text);
    if (!match || TOKEN.lastIndex === position) {
      const start = position + (text.slice(position).length - text.slice(position).trimStart().length);
      throw new ExpressionError(`unexpected ${reprText(text[start])} at character ${start + 1}`);
    }
    const kinds = ["text", "op", "punct", "word"];
    const group = [1, 2, 3, 4].find((i) => match[i] !== undefined);
    const value = match[group];
    tokens.push([kinds[group - 1], value, match.index + match[0].length - value.length]);
    position = TOKEN.lastIndex;
  }
  return tokens;
}

const describeToken = ([kind, value, position]) => (kind === "end" ? "the end of the expression" : `${reprText(value)} at character ${position + 1}`);

/** `007.50` → `7.5`, `-0` → `0`: one spelling per decimal value (as in Python). */
export function canonicalNumber(literal) {
  const negative = literal.startsWith("-");
  const [wholeRaw, fractionRaw = ""] = literal.replace(/^-/, "").split(".");
  const whole = wholeRaw.replace(/^0+/, "") || "0";
  const fraction = fractionRaw.replace(/0+$/, "");
  const digits = whole + (fraction ? `.${fraction}` : "");
  return negative && digits !== "0" ? `-${digits}` : digits;
}

class ExpressionParser {
  constructor(text) {
    this.tokens = tokenize(text);
    this.index = 0;
    this.depth = 0;
  }
  peek() { return this.tokens[this.index] ?? ["end", "", -1]; }
  take() { const token = this.peek(); this.index += 1; return token; }
  expect(kind, value) {
    const token = this.take();
    if (token[0] !== kind || (value !== undefined && token[1] !== value)) throw new ExpressionError(`expected '${value}', found ${describeToken(token)}`);
    return token;
  }
  parse() {
    if (!this.tokens.length) throw new ExpressionError("empty expression");
    const tree = this.disjunction();
    if (this.peek()[0] !== "end") throw new ExpressionError(`unexpected ${describeToken(this.peek())}`);
    return tree;
  }
  nested(method) {
    this.depth += 1;
    if (this.depth > MAX_EXPRESSION_DEPTH) throw new ExpressionError(`nested more than ${MAX_EXPRESSION_DEPTH} levels deep`);
    try { return method(); } finally { this.depth -= 1; }
  }
  chain(keyword, operand) {
    const args = [operand()];
    while (this.peek()[0] === "word" && this.peek()[1] === keyword) {
      this.take();
      args.push(operand());
    }
    if (args.length === 1) return args[0];
    return { op: keyword, args: args.flatMap((arg) => (arg.op === keyword ? arg.args : [arg])) };
  }
  disjunction() { return this.nested(() => this.chain("or", () => this.conjunction())); }
  conjunction() { return this.chain("and", () => this.negation()); }
  negation() {
    const [kind, value] = this.peek();
    if (kind === "word" && value === "not") {
      this.take();
      return this.nested(() => ({ op: "not", arg: this.negation() }));
    }
    return this.atom();
  }
  atom() {
    const token = this.take();
    const [kind, value] = token;
    if (kind === "punct" && value === "(") {
      const tree = this.disjunction();
      this.expect("punct", ")");
      return tree;
    }
    if (kind === "word" && value === "selected") {
      this.expect("punct", "(");
      const question = questionToken(this.take());
      this.expect("punct", ",");
      const literal = this.take();
      if (literal[0] !== "text") throw new ExpressionError(`selected(...) takes a quoted option, found ${describeToken(literal)}`);
      this.expect("punct", ")");
      return { op: "selected", question, value: { text: literal[1].slice(1, -1) } };
    }
    const question = questionToken(token);
    const operator = this.take();
    if (operator[0] !== "op") throw new ExpressionError(`expected a comparison (=, !=, <, <=, >, >=) after ${question}, found ${describeToken(operator)}`);
    return { op: operator[1], question, value: literalToken(this.take()) };
  }
}

function questionToken(token) {
  const [kind, value] = token;
  if (kind !== "word" || KEYWORDS.has(value) || !QUESTION_ID.test(value)) throw new ExpressionError(`expected a question id, found ${describeToken(token)}`);
  return value;
}

function literalToken(token) {
  const [kind, value] = token;
  if (kind === "text") return { text: value.slice(1, -1) };
  if (kind === "word" && NUMBER.test(value)) {
    if (value.length > MAX_NUMBER_LENGTH) throw new ExpressionError(`number ${value.slice(0, 12)}... has more than ${MAX_NUMBER_LENGTH} characters`);
    return { number: canonicalNumber(value) };
  }
  throw new ExpressionError(`expected a quoted text or a number, found ${describeToken(token)}`);
}

/** Parse a skip-logic expression into its tree (plain objects, the same JSON as Python's). */
export function parseExpression(text) {
  if (typeof text !== "string") throw new ExpressionError(`must be a text expression, got ${show(text)}`);
  if (text.length > MAX_EXPRESSION_LENGTH) throw new ExpressionError(`longer than ${MAX_EXPRESSION_LENGTH} characters`);
  return new ExpressionParser(text).parse();
}

/** The canonical spelling of a tree. */
export function expressionText(tree) {
  const { op } = tree;
  if (op === "and" || op === "or") {
    return tree.args.map((arg) => (arg.op === "and" || arg.op === "or" ? `(${expressionText(arg)})` : expressionText(arg))).join(` ${op} `);
  }
  if (op === "not") {
    const inner = expressionText(tree.arg);
    return tree.arg.op === "and" || tree.arg.op === "or" ? `not (${inner})` : `not ${inner}`;
  }
  const { value } = tree;
  const literal = "text" in value ? (value.text.includes("'") ? `"${value.text}"` : `'${value.text}'`) : value.number;
  return op === "selected" ? `selected(${tree.question}, ${literal})` : `${tree.question} ${op} ${literal}`;
}

/** Every leaf (comparison or selected) of a tree. */
function* expressionLeaves(tree) {
  if (tree.op === "and" || tree.op === "or") for (const arg of tree.args) yield* expressionLeaves(arg);
  else if (tree.op === "not") yield* expressionLeaves(tree.arg);
  else yield tree;
}

/** Evaluate a tree against answers (an unanswered question: `!=` is true, everything else false). */
export function evaluateExpression(tree, answers) {
  const { op } = tree;
  if (op === "or") return tree.args.some((arg) => evaluateExpression(arg, answers));
  if (op === "and") return tree.args.every((arg) => evaluateExpression(arg, answers));
  if (op === "not") return !evaluateExpression(tree.arg, answers);
  const answer = Object.hasOwn(answers, tree.question) ? answers[tree.question] : null;
  const { value } = tree;
  if (answer === null || answer === undefined) return op === "!=";
  if (op === "selected") return Array.isArray(answer) ? answer.includes(value.text) : answer === value.text;
  if ("text" in value) {
    const equal = typeof answer === "string" && answer === value.text;
    return op === "=" ? equal : op === "!=" ? !equal : false;
  }
  let left;
  try {
    left = parseFraction(answer, tree.question);
  } catch {
    return op === "!=";
  }
  const order = left.cmp(parseFraction(value.number, "literal"));
  return { "=": order === 0, "!=": order !== 0, "<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0 }[op];
}

// ---------------------------------------------------------------- surveys

export const QUESTION_TYPES = ["yes_no", "choice", "ordinal", "multi_select", "number"];
const ITEM_TYPES = [...QUESTION_TYPES, "note"];
const LAYOUTS = ["auto", "paged", "single"];
export const MAX_ITEMS = 1000;
export const MAX_OPTIONS = 1000;
export const MAX_SECTIONS = 200;
const MAX_TEXT_LENGTH = 5000;
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const LANGUAGE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/;
const SURVEY_FIELDS = ["id", "title", "description", "version", "languages", "default_language", "layout", "questions", "sections"];
const SECTION_FIELDS = ["id", "title", "intro", "relevant", "questions"];
const QUESTION_FIELDS = ["id", "type", "text", "hint", "options", "min", "max", "step", "privacy", "required", "relevant", "constraint_message"];
const NOTE_FIELDS = ["id", "type", "text", "hint", "relevant"];
const RIGHT_TO_LEFT = new Set(["ar", "arc", "dv", "fa", "ha", "he", "khw", "ks", "ku", "ps", "sd", "ur", "yi"]);
const SUGGESTIONS = {
  choice: "{design: k_rr, epsilon: ln 3}",
  ordinal: "{design: ordinal, epsilon: 1}",
  multi_select: "{design: unary, epsilon: 2}",
  number: "{design: laplace, epsilon: 1}",
};

const isMapping = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
export const isRightToLeft = (language) => Boolean(language) && RIGHT_TO_LEFT.has(language.split("-")[0].toLowerCase());

function requireText(value, where) {
  if (typeof value !== "string" || !value.trim()) throw new SpecError(`${where}: must be a non-empty string, got ${show(value)}`);
  if (value.length > MAX_TEXT_LENGTH) throw new SpecError(`${where}: longer than ${MAX_TEXT_LENGTH} characters`);
  return value;
}

function requireId(value, where) {
  if (typeof value !== "string" || !ID.test(value)) {
    throw new SpecError(`${where}: must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit; got ${show(value)}`);
  }
  return value;
}

function readExpression(value, where) {
  if (value === undefined || value === null) return null;
  try {
    return parseExpression(value);
  } catch (error) {
    if (error instanceof ExpressionError) throw new SpecError(`${where}: ${error.message}`);
    throw error;
  }
}

/** A localized text in `language`, falling back to the default language. */
export function localize(text, language, defaultLanguage) {
  if (text === null || text === undefined || typeof text === "string") return text ?? null;
  return (language && text[language]) || text[defaultLanguage];
}

class Languages {
  constructor(languages, defaultLanguage) {
    this.declared = languages !== undefined && languages !== null;
    this.missing = [];
    if (!this.declared) {
      if (defaultLanguage !== undefined && defaultLanguage !== null) throw new SpecError("survey.default_language: needs a list of languages beside it");
      this.codes = [];
      this.default = null;
      return;
    }
    if (!Array.isArray(languages) || !languages.length) throw new SpecError(`survey.languages: must be a non-empty list of language codes, got ${show(languages)}`);
    languages.forEach((code, i) => {
      if (typeof code !== "string" || !LANGUAGE.test(code)) throw new SpecError(`survey.languages[${i}]: must be a language code such as 'en', 'es' or 'pt-BR', got ${show(code)}`);
    });
    if (new Set(languages).size !== languages.length) throw new SpecError("survey.languages: a language appears more than once");
    this.codes = [...languages];
    this.default = defaultLanguage ?? languages[0];
    if (!this.codes.includes(this.default)) throw new SpecError(`survey.default_language: ${show(this.default)} is not one of the languages (${this.codes.join(", ")})`);
  }
  text(value, where, required = true) {
    if ((value === undefined || value === null) && !required) return null;
    if (!isMapping(value)) return requireText(value, where);
    if (!this.declared) throw new SpecError(`${where}: a text in several languages needs 'languages' at the top of the survey`);
    const unknown = Object.keys(value).filter((code) => !this.codes.includes(code)).sort();
    if (unknown.length) throw new SpecError(`${where}: language '${unknown[0]}' is not one of the survey's languages (${this.codes.join(", ")})`);
    if (!Object.hasOwn(value, this.default)) throw new SpecError(`${where}: needs the default language '${this.default}' (the text shown where a translation is missing)`);
    const clean = {};
    for (const code of this.codes) {
      if (Object.hasOwn(value, code)) clean[code] = requireText(value[code], `${where}.${code}`);
      else this.missing.push([where, code]);
    }
    return clean;
  }
}

class Item {
  constructor(spec, position, languages, allowed) {
    this.id = requireId(spec.id, `questions[${position}].id`);
    this.where = `question '${this.id}'`;
    const unknown = Object.keys(spec).filter((key) => !allowed.includes(key)).sort();
    if (unknown.length) throw new SpecError(`${this.where}: unknown field '${unknown[0]}' (allowed: ${[...allowed].sort().join(", ")})`);
    this.languages = languages;
    this.texts = languages.text(spec.text, `${this.where}.text`);
    this.hints = languages.text(spec.hint, `${this.where}.hint`, false);
    this.relevant = readExpression(spec.relevant, `${this.where}.relevant`);
    this.section = null;
  }
  /** The text in the default language (`textIn` for another). */
  get text() { return localize(this.texts, null, this.languages.default); }
  textIn(language) { return localize(this.texts, language, this.languages.default); }
  hintIn(language) { return localize(this.hints, language, this.languages.default); }
}

/** Text shown between questions; never answered, never reported. */
export class Note extends Item {
  constructor(spec, position, languages) {
    super(spec, position, languages, NOTE_FIELDS);
    this.type = "note";
  }
  get isPrivate() { return false; }
}

export class Question extends Item {
  constructor(spec, position, languages = new Languages(null, null)) {
    if (!isMapping(spec)) throw new SpecError(`questions[${position}]: must be a mapping, got ${show(spec)}`);
    super(spec, position, languages, QUESTION_FIELDS);
    const where = this.where;
    this.type = spec.type;
    if (!QUESTION_TYPES.includes(this.type)) throw new SpecError(`${where}.type: must be one of ${ITEM_TYPES.join(", ")}, got ${show(this.type)}`);
    let required = spec.required ?? false;
    if (typeof required === "string") {
      try {
        required = parseExpression(required);
      } catch (error) {
        if (!(error instanceof ExpressionError)) throw error;
        throw new SpecError(`${where}.required: must be true, false or a skip-logic expression; ${show(spec.required)} is none of them (${error.message})`);
      }
    } else if (typeof required !== "boolean") {
      throw new SpecError(`${where}.required: must be true, false or a skip-logic expression, got ${show(required)}`);
    }
    this.required = required;
    this.optionLabels = {};
    this.options = this._readOptions(spec, where);
    this.grid = this._readGrid(spec, where);
    this.constraintMessages = languages.text(spec.constraint_message, `${where}.constraint_message`, false);
    if (this.constraintMessages !== null && this.type !== "number") throw new SpecError(`${where}.constraint_message: only number questions have a range to explain`);
    const privacy = spec.privacy ?? DEFAULT_PRIVACY[this.type];
    if (privacy === undefined) {
      throw new SpecError(`${where}.privacy: required for ${this.type} questions (a design such as ${SUGGESTIONS[this.type]}, or 'none' for a public question)`);
    }
    this.mechanism = buildMechanism(this.type, privacy, `${where}.privacy`, this.options, this.grid);
  }
  /** What the question accepts, in words (the Python twin says the same). */
  describeAnswers() {
    if (this.type === "number") {
      const [low, high, step] = this.grid.map(jsonNumber);
      return `a number from ${low} to ${high} in steps of ${step}`;
    }
    if (this.type === "multi_select") return `a list of some of ${this.options.map(show).join(", ")}`;
    return `one of ${this.mechanism.answers.map(show).join(", ")}`;
  }
  _readOptions(spec, where) {
    if (!["choice", "ordinal", "multi_select"].includes(this.type)) {
      if ("options" in spec) throw new SpecError(`${where}.options: ${this.type} questions take no options`);
      return null;
    }
    const options = spec.options;
    if (!Array.isArray(options) || options.length < 2) {
      throw new SpecError(`${where}.options: ${this.type} questions need a list of at least two options, got ${show(options)}`);
    }
    if (options.length > MAX_OPTIONS) throw new SpecError(`${where}.options: at most ${MAX_OPTIONS} options, got ${options.length}`);
    const values = options.map((option, i) => {
      if (!isMapping(option)) return requireText(option, `${where}.options[${i}]`);
      const unknown = Object.keys(option).filter((key) => key !== "value" && key !== "label").sort();
      if (unknown.length) throw new SpecError(`${where}.options[${i}]: unknown field '${unknown[0]}' (allowed: label, value)`);
      const value = requireText(option.value, `${where}.options[${i}].value`);
      this.optionLabels[value] = this.languages.text(option.label, `${where}.options[${i}].label`);
      return value;
    });
    const seen = new Set();
    const duplicate = values.find((value) => seen.has(value) || !seen.add(value));
    if (duplicate !== undefined) throw new SpecError(`${where}.options: '${duplicate}' appears more than once`);
    if (this.type === "multi_select" && values.length > MAX_MULTI_SELECT_OPTIONS) {
      throw new SpecError(`${where}.options: at most ${MAX_MULTI_SELECT_OPTIONS} options for multi_select`);
    }
    return values;
  }
  _readGrid(spec, where) {
    const fields = ["min", "max", "step"].filter((f) => f in spec);
    if (this.type !== "number") {
      if (fields.length) throw new SpecError(`${where}.${fields[0]}: only number questions take min, max and step`);
      return null;
    }
    const values = {};
    for (const field of ["min", "max", "step"]) {
      const raw = spec[field] ?? (field === "step" ? 1 : undefined);
      if (raw === undefined || raw === null) throw new SpecError(`${where}.${field}: required for number questions`);
      if (typeof raw !== "number") throw new SpecError(`${where}.${field}: must be a number, got ${show(raw)}`);
      values[field] = parseFraction(raw, `${where}.${field}`);
    }
    const { min, max, step } = values;
    if (min.cmp(max) >= 0) throw new SpecError(`${where}.min: must be less than max (${spec.min} ≥ ${spec.max})`);
    if (step.cmp(ZERO) <= 0) throw new SpecError(`${where}.step: must be greater than 0, got ${spec.step}`);
    const points = max.sub(min).div(step);
    if (points.d !== 1n) throw new SpecError(`${where}.step: (max − min) must be a whole number of steps, got ${points}`);
    if (points.n + 1n > BigInt(MAX_GRID_POINTS)) {
      throw new SpecError(`${where}.step: at most ${MAX_GRID_POINTS} grid points between min and max, got ${points.n + 1n}; choose a coarser step`);
    }
    return [min, max, step];
  }
  /** Randomized on the device (any design but `none`), even one whose epsilon is infinite. */
  get isPrivate() { return this.mechanism.design !== "none"; }
  get epsilon() { return this.mechanism.epsilon; }
  /** An option's label in `language` (its value when it has no label of its own). */
  optionLabel(value, language) { return localize(this.optionLabels[value] ?? value, language, this.languages.default); }
  constraintMessageIn(language) { return localize(this.constraintMessages, language, this.languages.default); }
  privacyStatement(prior = 0.02) { return privacyStatement(this.epsilon, prior); }
}

function readItem(spec, position, languages) {
  if (!isMapping(spec)) throw new SpecError(`questions[${position}]: must be a mapping, got ${show(spec)}`);
  return spec.type === "note" ? new Note(spec, position, languages) : new Question(spec, position, languages);
}

/** A titled group of questions (one screen on a phone). */
export class Section {
  constructor(spec, position, languages, firstPosition) {
    if (!isMapping(spec)) throw new SpecError(`sections[${position}]: must be a mapping, got ${show(spec)}`);
    this.id = requireId(spec.id, `sections[${position}].id`);
    const where = `section '${this.id}'`;
    const unknown = Object.keys(spec).filter((key) => !SECTION_FIELDS.includes(key)).sort();
    if (unknown.length) throw new SpecError(`${where}: unknown field '${unknown[0]}' (allowed: ${[...SECTION_FIELDS].sort().join(", ")})`);
    this.languages = languages;
    this.titles = languages.text(spec.title, `${where}.title`);
    this.intros = languages.text(spec.intro, `${where}.intro`, false);
    this.relevant = readExpression(spec.relevant, `${where}.relevant`);
    if (!Array.isArray(spec.questions) || !spec.questions.length) throw new SpecError(`${where}.questions: must be a non-empty list of questions`);
    this.items = spec.questions.map((item, i) => readItem(item, firstPosition + i, languages));
    for (const item of this.items) item.section = this;
  }
  titleIn(language) { return localize(this.titles, language, this.languages.default); }
  introIn(language) { return localize(this.intros, language, this.languages.default); }
}

/** The error of a skip-logic rule that reads a private question. */
export function leakMessage(where, itemId, privateId) {
  return (
    `${where}: refers to '${privateId}', a private (randomized) question. Whether '${itemId}' ${where.endsWith(".required") ? "must be answered" : "is shown"}, ` +
    `and so whether a report for it reaches the server, would reveal the true answer to '${privateId}'. ` +
    `Ask '${itemId}' of everyone instead, with an option such as 'does not apply' among its randomized answers.`
  );
}

export class Survey {
  constructor(spec) {
    if (!isMapping(spec)) throw new SpecError(`survey: must be a mapping, got ${show(spec)}`);
    const unknown = Object.keys(spec).filter((key) => !SURVEY_FIELDS.includes(key)).sort();
    if (unknown.length) throw new SpecError(`survey: unknown field '${unknown[0]}' (allowed: ${[...SURVEY_FIELDS].sort().join(", ")})`);
    this.id = requireId(spec.id, "survey.id");
    this.languages = new Languages(spec.languages, spec.default_language);
    this.titles = this.languages.text(spec.title, "survey.title");
    this.descriptions = this.languages.text(spec.description, "survey.description", false);
    this.version = spec.version == null ? null : requireText(spec.version, "survey.version");
    this.layout = spec.layout ?? "auto";
    if (!LAYOUTS.includes(this.layout)) throw new SpecError(`survey.layout: must be one of ${LAYOUTS.join(", ")}, got ${show(this.layout)}`);
    this.sections = this._readSections(spec);
    this.items = this.sections.flatMap((section) => section.items);
    if (this.items.length > MAX_ITEMS) throw new SpecError(`survey: at most ${MAX_ITEMS} questions and notes, got ${this.items.length}`);
    this.questions = {};
    const seen = new Set();
    this.items.forEach((item, position) => {
      if (seen.has(item.id)) throw new SpecError(`question '${item.id}'.id: duplicate id (questions[${position}])`);
      seen.add(item.id);
      if (item instanceof Question) this.questions[item.id] = item;
    });
    if (!Object.keys(this.questions).length) throw new SpecError("survey.questions: must hold at least one question (notes alone collect nothing)");
    this._checkSkipLogic();
  }
  _readSections(spec) {
    if ("sections" in spec) {
      if ("questions" in spec) throw new SpecError("survey: give either 'questions' or 'sections', not both");
      if (!Array.isArray(spec.sections) || !spec.sections.length) throw new SpecError("survey.sections: must be a non-empty list of sections");
      if (spec.sections.length > MAX_SECTIONS) throw new SpecError(`survey.sections: at most ${MAX_SECTIONS} sections, got ${spec.sections.length}`);
      let position = 0;
      const sections = spec.sections.map((sectionSpec, i) => {
        const section = new Section(sectionSpec, i, this.languages, position);
        position += section.items.length;
        return section;
      });
      const ids = sections.map((s) => s.id);
      const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
      if (duplicate !== undefined) throw new SpecError(`section '${duplicate}'.id: duplicate id`);
      return sections;
    }
    if (!Array.isArray(spec.questions) || spec.questions.length === 0) throw new SpecError("survey.questions: must be a non-empty list of questions");
    if (spec.questions.length > MAX_ITEMS) throw new SpecError(`survey: at most ${MAX_ITEMS} questions and notes, got ${spec.questions.length}`);
    const implicit = Object.create(Section.prototype);
    Object.assign(implicit, { id: null, titles: null, intros: null, relevant: null, languages: this.languages });
    implicit.items = spec.questions.map((item, i) => readItem(item, i, this.languages));
    for (const item of implicit.items) item.section = implicit;
    return [implicit];
  }
  _checkSkipLogic() {
    const earlier = {};
    for (const section of this.sections) {
      if (section.relevant) this._checkExpression(section.relevant, `section '${section.id}'.relevant`, section.id, earlier);
      for (const item of section.items) {
        if (item.relevant) this._checkExpression(item.relevant, `${item.where}.relevant`, item.id, earlier);
        if (item instanceof Question) {
          if (typeof item.required !== "boolean") this._checkExpression(item.required, `${item.where}.required`, item.id, earlier);
          earlier[item.id] = item;
        }
      }
    }
  }
  _checkExpression(tree, where, itemId, earlier) {
    for (const leaf of expressionLeaves(tree)) {
      const ref = leaf.question;
      const question = earlier[ref];
      if (question === undefined) {
        if (this.items.some((item) => item.id === ref)) throw new SpecError(`${where}: '${ref}' is not a question asked before this one (skip logic reads answers already given)`);
        throw new SpecError(`${where}: no question '${ref}' in this survey`);
      }
      if (question.isPrivate) throw new SpecError(leakMessage(where, itemId, ref));
      const { op, value } = leaf;
      if (question.type === "number") {
        if (op === "selected" || !("number" in value)) throw new SpecError(`${where}: '${ref}' is a number question; compare it with a number, as in ${ref} >= 18`);
        continue;
      }
      const allowed = question.type === "yes_no" ? ["yes", "no"] : question.options;
      if (question.type === "multi_select" && op !== "selected") throw new SpecError(`${where}: '${ref}' allows several answers; use selected(${ref}, 'option')`);
      if (ORDERINGS.includes(op) || !("text" in value)) throw new SpecError(`${where}: '${ref}' has named answers; use ${ref} = 'option' or selected(${ref}, 'option')`);
      if (!allowed.includes(value.text)) throw new SpecError(`${where}: ${reprText(value.text)} is not an answer of '${ref}' (answers: ${allowed.join(", ")})`);
    }
  }
  /** Build from a parsed spec object (the JSON the server serves, or your own). */
  static fromSpec(spec) { return new Survey(spec); }
  get title() { return localize(this.titles, null, this.languages.default); }
  get description() { return localize(this.descriptions, null, this.languages.default); }
  titleIn(language) { return localize(this.titles, language, this.languages.default); }
  descriptionIn(language) { return localize(this.descriptions, language, this.languages.default); }
  get defaultLanguage() { return this.languages.default; }
  get privateQuestions() { return Object.values(this.questions).filter((q) => q.isPrivate); }
  get publicQuestions() { return Object.values(this.questions).filter((q) => !q.isPrivate); }
  /** Total epsilon per respondent over the private questions (sequential composition). */
  get epsilon() { return this.privateQuestions.reduce((total, q) => total + q.epsilon, 0); }
  /** Ids of the questions and notes shown for these answers (answers to hidden questions do not count). */
  shown(answers) {
    const visible = {};
    const shown = [];
    for (const section of this.sections) {
      if (section.relevant && !evaluateExpression(section.relevant, visible)) continue;
      for (const item of section.items) {
        if (item.relevant && !evaluateExpression(item.relevant, visible)) continue;
        shown.push(item.id);
        if (Object.hasOwn(this.questions, item.id) && answers[item.id] !== undefined && answers[item.id] !== null) visible[item.id] = answers[item.id];
      }
    }
    return shown;
  }
  /** Ids of the shown questions that must be answered, given these answers. */
  requiredNow(answers, shown = this.shown(answers)) {
    const visible = {};
    for (const id of shown) if (Object.hasOwn(this.questions, id) && answers[id] !== undefined && answers[id] !== null) visible[id] = answers[id];
    return shown.filter((id) => {
      const question = this.questions[id];
      if (!question) return false;
      return typeof question.required === "boolean" ? question.required : evaluateExpression(question.required, visible);
    });
  }
  /** Reports for the shown, answered questions; answers to hidden questions are left out. */
  randomize(answers, source = defaultSource) {
    if (!isMapping(answers)) throw new TypeError("answers must be an object of question id to answer");
    const unknown = Object.keys(answers).filter((id) => !Object.hasOwn(this.questions, id)).sort();
    if (unknown.length) throw new AnswerError(unknown[0], "no such question in this survey", Object.keys(this.questions).join(", "));
    for (const [id, answer] of Object.entries(answers)) { // every answer checked before any is randomized
      if (answer === undefined || answer === null) continue;
      const question = this.questions[id];
      try {
        question.mechanism.validateAnswer(answer);
      } catch (error) {
        if (!(error instanceof RangeError || error instanceof SpecError || error instanceof TypeError)) throw error;
        throw new AnswerError(id, error.message, question.describeAnswers());
      }
    }
    const shown = new Set(this.shown(answers));
    const reports = {};
    for (const [id, question] of Object.entries(this.questions)) {
      if (shown.has(id) && answers[id] !== undefined && answers[id] !== null) reports[id] = question.mechanism.randomize(answers[id], source);
    }
    return reports;
  }
}

// ---------------------------------------------------------------- sending reports

/** A response the server refused, or could not be reached after retries. */
export class SubmitError extends Error {
  constructor(message, { status = null, field = null } = {}) {
    super(message);
    this.name = "SubmitError";
    this.status = status;
    this.field = field;
  }
}

/** A random idempotency key: a retry with the same key is stored once. */
export function newIdempotencyKey() {
  const bytes = new Uint8Array(16);
  cryptoSource.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** 404: no survey with this id. */
export class SurveyNotFound extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "SurveyNotFound"; }
}
/** 410: the survey no longer accepts responses. */
export class SurveyClosed extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "SurveyClosed"; }
}
/** 409: this respondent token has answered already. */
export class TokenAlreadyUsed extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "TokenAlreadyUsed"; }
}
/** 4xx: a report or field is invalid; `field` names it. */
export class ResponseRejected extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "ResponseRejected"; }
}

const TRANSIENT = new Set([408, 425, 429, 500, 502, 503, 504]);
const BY_STATUS = { 404: SurveyNotFound, 410: SurveyClosed, 409: TokenAlreadyUsed };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function refusal(status, payload, url) {
  const Kind = BY_STATUS[status] ?? (status >= 400 && status < 500 ? ResponseRejected : SubmitError);
  return new Kind(payload?.error?.message ?? `${url}: HTTP ${status}`, { status, field: payload?.error?.field ?? null });
}

/** One request with the Python twin's policy: network failures and transient statuses are retried
 * (exponential backoff, the same body and so the same idempotency key); refusals are typed. */
async function withRetries(url, init, { fetch: fetcher = globalThis.fetch, retries = 4, backoffMs = 250 } = {}) {
  let last = null;
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt) await sleep(backoffMs * 2 ** (attempt - 1));
    let response;
    try {
      response = await fetcher(url, init);
    } catch (error) {
      last = new SubmitError(`could not reach ${url}: ${error.message}`);
      continue;
    }
    const payload = await response.json().catch(() => null);
    if (response.ok) return { status: response.status, payload };
    const error = refusal(response.status, payload, url);
    if (!TRANSIENT.has(response.status)) throw error;
    last = error;
  }
  throw last;
}

/** Fetch a survey's served spec and build it: {survey, hash, payload}. Retried like postResponse
 * (3 retries by default, as in Python); a missing survey is SurveyNotFound. */
export async function fetchSurvey(baseUrl, surveyId, { retries = 3, ...options } = {}) {
  const url = `${baseUrl.replace(/\/$/, "")}/api/v1/surveys/${encodeURIComponent(surveyId)}`;
  const { payload } = await withRetries(url, { headers: { Accept: "application/json" } }, { retries, ...options });
  return { survey: Survey.fromSpec(payload.spec), hash: payload.hash, payload };
}

/**
 * POST one already-randomized response ({spec_hash, idempotency_key, token?, reports}), retrying
 * transient failures with the same idempotency key. Resolves to the server's acknowledgement.
 */
export async function postResponse(baseUrl, surveyId, body, options = {}) {
  const url = `${baseUrl.replace(/\/$/, "")}/api/v1/surveys/${encodeURIComponent(surveyId)}/responses`;
  const init = { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(body) };
  return (await withRetries(url, init, options)).payload;
}

/**
 * Fetch the spec, randomize `answers` on this device, and send only the reports.
 * Resolves to {acknowledgement, reports, queued}: the reports are exactly what left (or will leave)
 * the device. With an `outbox`, a send that fails for want of a connection keeps the randomized body
 * there (queued: true, acknowledgement: null) for `outbox.flush()` to deliver later.
 */
export async function submit(baseUrl, surveyId, answers, { token = null, outbox = null, ...options } = {}) {
  const { survey, hash } = await fetchSurvey(baseUrl, surveyId, options);
  const reports = survey.randomize(answers);
  const body = { spec_hash: hash, idempotency_key: newIdempotencyKey(), reports };
  if (token) body.token = token;
  try {
    const acknowledgement = await postResponse(baseUrl, surveyId, body, options);
    return { acknowledgement, reports, queued: false };
  } catch (error) {
    if (!outbox || !isUnreachable(error)) throw error;
    await outbox.add(baseUrl, surveyId, body);
    return { acknowledgement: null, reports, queued: true };
  }
}

/** True for a send that never got an answer from the server (no connection, DNS, a dropped socket). */
export function isUnreachable(error) {
  return error instanceof SubmitError && error.status === null;
}

/** An in-memory stand-in for localStorage (Node, tests, apps that persist some other way). */
export class MemoryStorage {
  constructor() { this._items = new Map(); }
  getItem(key) { return this._items.has(key) ? this._items.get(key) : null; }
  setItem(key, value) { this._items.set(key, String(value)); }
  removeItem(key) { this._items.delete(key); }
}

const OUTBOX_FIELDS = ["spec_hash", "idempotency_key", "reports", "token"];

/**
 * Responses that could not be sent yet: already randomized bodies (reports, spec hash, idempotency key,
 * the invitation token if any), never a true answer, kept in `storage` (localStorage in a browser; any
 * object with getItem/setItem/removeItem) under `key`. `flush` sends each with its own idempotency key,
 * so a body that did arrive before the connection dropped is stored once however often it is sent.
 */
export class Outbox {
  constructor({ storage = globalThis.localStorage ?? new MemoryStorage(), key = "deniable-outbox" } = {}) {
    this.storage = storage;
    this.key = key;
  }
  /** Every kept entry: {baseUrl, surveyId, body}. */
  entries() {
    let entries;
    try {
      entries = JSON.parse(this.storage.getItem(this.key) ?? "[]");
    } catch {
      return [];
    }
    return Array.isArray(entries) ? entries : [];
  }
  _write(entries) {
    if (entries.length) this.storage.setItem(this.key, JSON.stringify(entries));
    else this.storage.removeItem(this.key);
  }
  /** Keep a randomized body to send later (only the fields a response has: nothing else is stored). */
  async add(baseUrl, surveyId, body) {
    const kept = Object.fromEntries(OUTBOX_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]));
    if (typeof kept.idempotency_key !== "string") throw new TypeError("an outbox entry needs the body's idempotency_key");
    const entries = this.entries();
    const entry = { baseUrl, surveyId, body: kept };
    const same = entries.findIndex((e) => e.body.idempotency_key === kept.idempotency_key);
    if (same >= 0) entries[same] = entry; // one entry per response
    else entries.push(entry);
    this._write(entries);
  }
  /**
   * Send every kept entry (or those of `surveyId`). Delivered and refused entries leave the outbox;
   * unreachable ones stay. Resolves to {sent: [acknowledgement], refused: [SubmitError], kept: count}.
   */
  async flush({ surveyId = null, ...options } = {}) {
    const sent = [];
    const refused = [];
    for (const entry of this.entries()) {
      if (surveyId !== null && entry.surveyId !== surveyId) continue;
      try {
        sent.push(await postResponse(entry.baseUrl, entry.surveyId, entry.body, options));
      } catch (error) {
        if (isUnreachable(error) || TRANSIENT.has(error.status)) continue; // try again at the next flush
        if (!(error instanceof SubmitError)) throw error;
        refused.push(error); // refused for good (a closed survey, a spent invitation): retrying cannot help
      }
      this._write(this.entries().filter((e) => e.body.idempotency_key !== entry.body.idempotency_key));
    }
    return { sent, refused, kept: this.entries().filter((e) => surveyId === null || e.surveyId === surveyId).length };
  }
}
