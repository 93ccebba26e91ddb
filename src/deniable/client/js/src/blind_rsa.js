// RSA blind signatures, the respondent's side (RFC 9474, RSABSSA-SHA384-PSS-Randomized): twin of Python's
// client/blind_rsa.py, checked by the same test vector. The device blinds a random serial, the server signs it without
// seeing it, and the device unblinds an ordinary RSA-PSS signature (SHA-384, MGF1-SHA-384, 48-byte salt).
// Asynchronous: SHA-384 is WebCrypto's (crypto.subtle), which the network round trip around it waits on anyway.

export const HASH_LENGTH = 48;
export const SALT_LENGTH = 48;
export const PREFIX_LENGTH = 32;

/** A blind signature that does not verify, or a key or message it cannot be made with (`field` names which). */
export class BlindSignatureError extends Error {
  constructor(message, field) {
    super(message);
    this.name = "BlindSignatureError";
    this.field = field;
  }
}

const sha384 = async (bytes) => new Uint8Array(await globalThis.crypto.subtle.digest("SHA-384", bytes));
const randomBytes = (count) => globalThis.crypto.getRandomValues(new Uint8Array(count));

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) { out.set(part, at); at += part.length; }
  return out;
}

export function bytesToInt(bytes) {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

export function intToBytes(value, length) {
  const out = new Uint8Array(length);
  for (let i = length - 1; i >= 0; i--) { out[i] = Number(value & 0xffn); value >>= 8n; }
  if (value !== 0n) throw new BlindSignatureError("a number too large for its length", "value");
  return out;
}

function modPow(base, exponent, modulus) {
  let result = 1n;
  base %= modulus;
  for (; exponent > 0n; exponent >>= 1n) {
    if (exponent & 1n) result = (result * base) % modulus;
    base = (base * base) % modulus;
  }
  return result;
}

function modInverse(value, modulus) {
  let [a, b, x, y] = [value % modulus, modulus, 1n, 0n];
  while (b !== 0n) {
    const q = a / b;
    [a, b, x, y] = [b, a - q * b, y, x - q * y];
  }
  if (a !== 1n) return null;
  return ((x % modulus) + modulus) % modulus;
}

const bitLength = (n) => n.toString(2).length;

/** The signer's public key: modulus `n`, exponent `e` (BigInt). */
export class PublicKey {
  constructor(n, e) {
    this.n = BigInt(n);
    this.e = BigInt(e);
    this.length = Math.ceil(bitLength(this.n) / 8);
  }
}

/** The message as signed: 32 random bytes, then the message (the Randomized variant). */
export function prepare(message) {
  return concat(randomBytes(PREFIX_LENGTH), message);
}

async function mgf1(seed, length) {
  const blocks = [];
  for (let counter = 0; counter * HASH_LENGTH < length; counter++) {
    blocks.push(await sha384(concat(seed, intToBytes(BigInt(counter), 4))));
  }
  return concat(...blocks).slice(0, length);
}

const xor = (left, right) => left.map((byte, i) => byte ^ right[i]);

/** EMSA-PSS-ENCODE (RFC 8017, 9.1.1) of `message` into `bits` bits with SHA-384 and this `salt`. */
export async function encode(message, bits, salt) {
  const length = Math.ceil(bits / 8);
  if (length < HASH_LENGTH + salt.length + 2) {
    throw new BlindSignatureError("the key is too short for SHA-384 with a 48-byte salt", "key");
  }
  const digest = await sha384(concat(new Uint8Array(8), await sha384(message), salt));
  const block = concat(new Uint8Array(length - salt.length - HASH_LENGTH - 2), new Uint8Array([1]), salt);
  const masked = xor(block, await mgf1(digest, length - HASH_LENGTH - 1));
  masked[0] &= 0xff >> (8 * length - bits);
  return concat(masked, digest, new Uint8Array([0xbc]));
}

async function decoded(message, encoded, bits) {
  const length = Math.ceil(bits / 8);
  if (encoded.length !== length || length < HASH_LENGTH + SALT_LENGTH + 2 || encoded[length - 1] !== 0xbc) return false;
  const masked = encoded.slice(0, length - HASH_LENGTH - 1);
  const digest = encoded.slice(length - HASH_LENGTH - 1, length - 1);
  const unused = 8 * length - bits;
  if (unused && masked[0] >> (8 - unused)) return false;
  const block = xor(masked, await mgf1(digest, masked.length));
  block[0] &= 0xff >> unused;
  const padding = length - HASH_LENGTH - SALT_LENGTH - 2;
  if (block.slice(0, padding).some((byte) => byte !== 0) || block[padding] !== 1) return false;
  const salt = block.slice(block.length - SALT_LENGTH);
  const expected = await sha384(concat(new Uint8Array(8), await sha384(message), salt));
  return expected.every((byte, i) => byte === digest[i]);
}

/** {blinded, inverse}: the blinded message for the signer and the inverse that unblinds its answer, for the prepared
 *  `message`. `salt` and `inverse` are drawn here (given only to reproduce a test vector). */
export async function blind(key, message, { salt = null, inverse = null } = {}) {
  const encoded = await encode(message, bitLength(key.n) - 1, salt ?? randomBytes(SALT_LENGTH));
  const m = bytesToInt(encoded);
  if (modInverse(m, key.n) === null) throw new BlindSignatureError("the message shares a factor with the modulus", "message");
  while (inverse === null) {
    const r = bytesToInt(randomBytes(key.length + 8)) % (key.n - 1n) + 1n; // 64 spare bits: the bias is below 2^-64
    inverse = modInverse(r, key.n);
  }
  const r = modInverse(BigInt(inverse), key.n);
  return { blinded: intToBytes((m * modPow(r, key.e, key.n)) % key.n, key.length), inverse: BigInt(inverse) };
}

/** The signature on the prepared `message` from the signer's `blindSignature`: unblinded, then verified. */
export async function finalize(key, message, blindSignature, inverse) {
  if (blindSignature.length !== key.length) {
    throw new BlindSignatureError(`a blind signature is ${key.length} bytes, got ${blindSignature.length}`, "blind_signature");
  }
  const signature = intToBytes((bytesToInt(blindSignature) * BigInt(inverse)) % key.n, key.length);
  if (!(await verify(key, message, signature))) {
    throw new BlindSignatureError("the blind signature does not unblind to a valid signature", "blind_signature");
  }
  return signature;
}

/** RSASSA-PSS-VERIFY (SHA-384, MGF1-SHA-384, 48-byte salt): whether `signature` is the key's on `message`. */
export async function verify(key, message, signature) {
  if (signature.length !== key.length) return false;
  const s = bytesToInt(signature);
  if (s >= key.n) return false;
  const bits = bitLength(key.n) - 1;
  return decoded(message, intToBytes(modPow(s, key.e, key.n), Math.ceil(bits / 8)), bits);
}
