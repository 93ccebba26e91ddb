// Mechanisms: exact channels, how they randomize and validate reports (Python: mechanisms.py).
// Part of deniable.js; no dependencies.

import { show } from "./errors.js";
import { Fraction, ONE, ZERO, epsilonOf, fmax, fmin, frac, gcd, jsonNumber, parseFraction } from "./exact.js";
import { TWO_32, TWO_32_BIG, bernoulli, defaultSource, drawIndex, makeSampler, wordOf } from "./randomness.js";

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

/** The answers, and the plain reports, of a yes/no question. */
export const YES_NO = ["yes", "no"];

class Mechanism {
  /** True when the respondent randomizes (crosswise, triangular, a natural randomizer): the page takes
   * their choice, already a report; `randomize` then simulates a respondent. */
  respondentRandomizes = false;
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
  /** Where `answer` sits in the answer alphabet (what a panel memo keys a permanent report on). */
  answerPosition(answer) {
    const canonical = JSON.stringify(this.validateAnswer(answer));
    return this.answers.findIndex((a) => JSON.stringify(a) === canonical);
  }
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
  answerPosition(answer) { return this._answerIndex(this.validateAnswer(answer)); }
  _answerIndex(answer) {
    if (this._answerPositions === undefined) this._answerPositions = new Map(this._answers.map((a, i) => [a, i]));
    return this._answerPositions.get(answer);
  }
}

/** The report index an integer draw gives in k-ary randomized response: `other` for each index before `position`,
 * `keep` for it, `other` for each after (Numbers, or BigInts for wide denominators; Python: symmetric_index). */
export function symmetricIndex(draw, position, keep, other) {
  const big = typeof draw === "bigint";
  const divide = (x, y) => Number(big ? x / y : Math.floor(x / y));
  const before = (big ? BigInt(position) : position) * other;
  if (draw < before) return divide(draw, other);
  if (draw < before + keep) return position;
  return position + 1 + divide(draw - before - keep, other);
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
      return this._reports[symmetricIndex(source.below(limit), a, keep, other)];
    }
    return this._reports[symmetricIndex(source.randomBelow(this._denominator), a, this._keepWidth, this._otherWidth)];
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
  /** The bitmask of the selected options (option i is bit i). */
  answerPosition(answer) { return this._bits(answer, "answer").reduce((mask, bit, i) => mask + bit * 2 ** i, 0); }
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
  answerPosition(answer) { return this.answerIndex(answer); }
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
