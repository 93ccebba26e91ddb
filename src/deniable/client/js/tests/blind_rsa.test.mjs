// The JS twin of client/blind_rsa.py on the same RFC 9474 vector (tests/vectors/rfc9474_blind_rsa.json), step by step.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { BlindSignatureError, PublicKey, blind, finalizeBlind, prepareBlind, verifyBlind } from "../deniable.js";
import { bytesToInt, encode, intToBytes } from "../src/blind_rsa.js";

const vector = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/rfc9474_blind_rsa.json", import.meta.url), "utf8"));
const bytes = (name) => Uint8Array.from(vector[name].match(/../g).map((pair) => parseInt(pair, 16)));
const number = (name) => BigInt(`0x${vector[name]}`);
const key = new PublicKey(number("n"), number("e"));
const sign = (blinded) => {
  let [result, base, exponent] = [1n, bytesToInt(blinded) % key.n, number("d")];
  for (; exponent > 0n; exponent >>= 1n) {
    if (exponent & 1n) result = (result * base) % key.n;
    base = (base * base) % key.n;
  }
  return intToBytes(result, key.length);
};

test("the vector step by step, as the Python twin reproduces it", async () => {
  const message = bytes("msg");
  assert.deepEqual(await encode(message, key.n.toString(2).length - 1, bytes("salt")), bytes("encoded_message"));
  const { blinded, inverse } = await blind(key, message, { salt: bytes("salt"), inverse: number("inv") });
  assert.deepEqual(blinded, bytes("blinded_message"));
  assert.deepEqual(sign(blinded), bytes("blind_sig"));
  assert.deepEqual(await finalizeBlind(key, message, bytes("blind_sig"), inverse), bytes("sig"));
  assert.equal(await verifyBlind(key, message, bytes("sig")), true);
});

test("a fresh serial round-trips, and two blindings of it look unrelated", async () => {
  const serial = prepareBlind(new Uint8Array(32));
  assert.equal(serial.length, 64);
  const first = await blind(key, serial);
  const second = await blind(key, serial);
  assert.notDeepEqual(first.blinded, second.blinded);
  const signature = await finalizeBlind(key, serial, sign(first.blinded), first.inverse);
  assert.equal(await verifyBlind(key, serial, signature), true);
});

test("what is not the key's signature is refused", async () => {
  const message = bytes("msg");
  const flipped = bytes("sig");
  flipped[0] ^= 1;
  assert.equal(await verifyBlind(key, message, flipped), false);
  assert.equal(await verifyBlind(key, new Uint8Array([...message, 33]), bytes("sig")), false);
  assert.equal(await verifyBlind(key, message, bytes("sig").slice(1)), false);
  await assert.rejects(finalizeBlind(key, message, bytes("blind_sig"), number("inv") + 1n),
    (error) => error instanceof BlindSignatureError && error.field === "blind_signature");
});
