// Randomness: crypto.getRandomValues words and exact rejection sampling (Python: randomness.py).
// Part of deniable.js; no dependencies.

// No top-level await (so require() of this ES module works on Node >= 20.19): every browser and Node >= 20 has
// globalThis.crypto; where it is missing, importing fails rather than fall back to a non-cryptographic source.
export const cryptoSource = globalThis.crypto;
if (typeof cryptoSource?.getRandomValues !== "function") {
  throw new Error("deniable needs crypto.getRandomValues (every browser, Node >= 20, or react-native-get-random-values " +
    "imported first); it never falls back to a non-cryptographic generator");
}


// Random words come from a pool that one crypto.getRandomValues call fills: drawing one word per
// call made the call itself most of the cost of a report. The pool lives in this module only.
const POOL_WORDS = 2048;
const pool = new Uint32Array(POOL_WORDS);
let poolNext = POOL_WORDS;
export const TWO_32 = 0x100000000;
export const TWO_32_BIG = 0x100000000n;

function nextWord() {
  if (poolNext === POOL_WORDS) {
    cryptoSource.getRandomValues(pool);
    poolNext = 0;
  }
  return pool[poolNext++];
}

/** Exact uniform draws from a stream of 32-bit words (`next()`), by rejection: the one algorithm behind
 * crypto.getRandomValues's pool here and a panel memo's derived stream (memo.js), and the twin of Python's
 * randomness.WordSource, so the same words give the same draws in both clients. */
export function wordSource(next) {
  /** A uniform Number in [0, limit) for a whole 1 <= limit <= 2^32 (no modulo bias). */
  const below = (limit) => {
    const ceiling = TWO_32 - (TWO_32 % limit);
    for (;;) {
      const word = next();
      if (word < ceiling) return word % limit;
    }
  };
  /** A uniform BigInt in [0, n). */
  const randomBelow = (n) => {
    n = BigInt(n);
    if (n <= 0n) throw new RangeError("randomBelow needs n > 0");
    if (n <= TWO_32_BIG) return BigInt(below(Number(n)));
    const bits = BigInt((n - 1n).toString(2).length);
    const words = Number((bits + 31n) / 32n);
    const excess = BigInt(words) * 32n - bits;
    for (;;) {
      let value = 0n;
      for (let i = 0; i < words; i++) value = (value << 32n) | BigInt(next());
      value >>= excess;
      if (value < n) return value;
    }
  };
  return { word: next, below, randomBelow };
}

const pooled = wordSource(nextWord);
/** A uniform BigInt in [0, n) from crypto.getRandomValues (rejection sampling, no modulo bias). */
export const randomBelow = pooled.randomBelow;

// `below` is the fast path for denominators that fit in 32 bits; a source without it (a test's
// scripted source) is asked for BigInts, and every sampler gives the same distribution either way.
export const defaultSource = pooled;

/** Integer thresholds over a common denominator, for drawing an index: Numbers when they fit in 32 bits. */
export function makeSampler(denominator, thresholds) {
  const small = denominator <= TWO_32_BIG;
  return { denominator, thresholds, limit: small ? Number(denominator) : 0, smallThresholds: small ? thresholds.map(Number) : null };
}

export function drawIndex(sampler, source) {
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
export function wordOf(source) {
  return source.word ? source.word() : Number(source.randomBelow(TWO_32_BIG));
}

/** True with probability p = n/d (a Fraction), exactly, from as few 32-bit words as it takes (usually one): U's
 * first 32 bits decide unless p falls inside the interval they leave open, and then the next word refines U
 * (the twin of Python's randomness.bernoulli: the same words give the same answer). */
export function bernoulli(p, source) {
  let value = BigInt(wordOf(source));
  let scale = TWO_32_BIG;
  for (;;) {
    const threshold = p.n * scale;
    if ((value + 1n) * p.d <= threshold) return true;
    if (value * p.d >= threshold) return false;
    value = value * TWO_32_BIG + BigInt(wordOf(source));
    scale *= TWO_32_BIG;
  }
}
