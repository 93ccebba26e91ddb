// A panel respondent's memo: one random secret kept on the device; the permanent report of each
// (survey, question, true answer) is drawn from HMAC-SHA256(secret, message ‖ counter) words (Python: memo.py).
// Part of deniable.js; no dependencies: SHA-256 is written out here because WebCrypto's is asynchronous and
// randomizing is not.

import { cryptoSource, wordSource } from "./randomness.js";

/** Bytes of the secret; stored as 64 lowercase hex digits. */
export const SECRET_BYTES = 32;
const DOMAIN = "deniable memo v1";

/** A memo that cannot serve as one (twin of Python's MemoError); `field` is "memo". */
export class MemoError extends Error {
  constructor(message) {
    super(message);
    this.name = "MemoError";
    this.field = "memo";
  }
}

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256 of a Uint8Array (FIPS 180-4), as 32 bytes. */
export function sha256(bytes) {
  const length = bytes.length;
  const padded = new Uint8Array(Math.ceil((length + 9) / 64) * 64);
  padded.set(bytes);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(length / 0x20000000));
  view.setUint32(padded.length - 4, (length * 8) >>> 0);
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  const rotate = (x, n) => (x >>> n) | (x << (32 - n));
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(offset + 4 * t);
    for (let t = 16; t < 64; t++) {
      const s0 = rotate(w[t - 15], 7) ^ rotate(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotate(w[t - 2], 17) ^ rotate(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, k] = h;
    for (let t = 0; t < 64; t++) {
      const t1 = (k + (rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t]) >>> 0;
      const t2 = ((rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      k = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  h.forEach((word, i) => outView.setUint32(4 * i, word));
  return out;
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) { out.set(part, at); at += part.length; }
  return out;
}

/** HMAC-SHA256 (RFC 2104) with a key of at most 64 bytes. */
export function hmacSha256(key, message) {
  const block = new Uint8Array(64);
  block.set(key.length > 64 ? sha256(key) : key);
  const inner = block.map((byte) => byte ^ 0x36);
  const outer = block.map((byte) => byte ^ 0x5c);
  return sha256(concat(outer, sha256(concat(inner, message))));
}

const encoder = new TextEncoder();

/** What one stream is keyed on (the twin of memo.message in Python): purpose and positions only. */
export function memoMessage(surveyId, questionId, purpose, position = null) {
  const parts = [DOMAIN, surveyId, questionId, purpose];
  if (position !== null && position !== undefined) parts.push(String(BigInt(position)));
  return encoder.encode(parts.join("\u0000"));
}

/** 32-bit words (big-endian) of HMAC-SHA256(secret, message ‖ counter), counter 0, 1, …, drawn by rejection
 * exactly as the operating system's words are (randomness.wordSource), so Python and JS derive the same reports. */
export class MemoStream {
  constructor(secret, message) {
    let counter = 0;
    let words = [];
    let at = 0;
    const next = () => {
      if (at === words.length) {
        const suffix = new Uint8Array(4);
        new DataView(suffix.buffer).setUint32(0, counter++);
        const view = new DataView(hmacSha256(secret, concat(message, suffix)).buffer);
        words = Array.from({ length: 8 }, (_, i) => view.getUint32(4 * i));
        at = 0;
      }
      return words[at++];
    };
    Object.assign(this, wordSource(next));
  }
}

const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** The device's panel secret, kept in `storage` (localStorage, or anything with getItem/setItem) under `key`:
 * created when missing; refused when what is stored there is not a secret. No answer is ever stored. */
export class Memo {
  constructor(storage, key = "deniable.memo") {
    if (!storage || typeof storage.getItem !== "function" || typeof storage.setItem !== "function") {
      throw new MemoError("memo: needs a storage with getItem and setItem (localStorage, or your own)");
    }
    let text = storage.getItem(key);
    if (text === null || text === undefined) {
      const secret = new Uint8Array(SECRET_BYTES);
      cryptoSource.getRandomValues(secret);
      storage.setItem(key, toHex(secret));
      text = storage.getItem(key);
    }
    if (typeof text !== "string" || !/^[0-9a-f]{64}$/.test(text)) {
      throw new MemoError(`memo ${key}: holds ${typeof text === "string" ? text.length : typeof text} characters, not the 64 hex digits of a memo secret; it is not a memo (remove it to start a new one: the permanent reports then change)`);
    }
    this._secret = Uint8Array.from(text.match(/../g), (pair) => parseInt(pair, 16));
  }
  /** A memo held in memory (simulations, tests). `secret`: 32 bytes, or 64 hex digits. */
  static fromSecret(secret) {
    const text = typeof secret === "string" ? secret : toHex(secret);
    const store = new Map([["memo", text]]);
    return new Memo({ getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) }, "memo");
  }
  stream(surveyId, questionId, purpose, position = null) {
    return new MemoStream(this._secret, memoMessage(surveyId, questionId, purpose, position));
  }
}
