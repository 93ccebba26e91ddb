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

test("submit exchanges a token survey's token for a credential that verifies, and sends it instead", async () => {
  const { submit, obtainCredential, TokenAlreadyUsed } = await import("../deniable.js");
  const spec = { id: "tax", title: "Taxes", questions: [{ id: "dodged", type: "yes_no", text: "Dodged?" }] };
  const hex = (data) => Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
  const calls = [];
  let failOnce = true;
  const fetch = async (url, init = {}) => {
    const body = init.body ? JSON.parse(init.body) : null;
    calls.push({ url, body });
    const answer = (status, payload) => ({ ok: status < 400, status, json: async () => payload, headers: new Map() });
    if (url.endsWith("/credential-key")) return answer(200, { key: "k1", modulus: vector.n, exponent: Number(number("e")) });
    if (url.endsWith("/credentials")) {
      if (failOnce) { failOnce = false; return answer(503, null); } // the retry sends the same blinded message
      return answer(200, { key: "k1", blind_signature: hex(sign(Uint8Array.from(body.blinded.match(/../g), (p) => parseInt(p, 16)))) });
    }
    if (url.endsWith("/responses")) return answer(201, { id: "r1" });
    return answer(200, { spec, hash: "h1", access: "token" });
  };
  const { acknowledgement } = await submit("http://x", "tax", { dodged: "yes" }, { fetch, token: "t".repeat(22), backoffMs: 1 });
  assert.equal(acknowledgement.id, "r1");
  const issued = calls.filter((c) => c.url.endsWith("/credentials"));
  assert.equal(issued.length, 2);
  assert.equal(issued[0].body.blinded, issued[1].body.blinded);
  const sent = calls.at(-1).body;
  assert.equal(sent.token, undefined);
  assert.deepEqual(Object.keys(sent.credential).sort(), ["key", "serial", "signature"]);
  const unhex = (text) => Uint8Array.from(text.match(/../g), (p) => parseInt(p, 16));
  assert.ok(await verifyBlind(key, unhex(sent.credential.serial), unhex(sent.credential.signature)));
  assert.equal(sent.credential.serial.length, 128); // the 32-byte prefix and the 32-byte serial
  // a server without credentials (no such route) gets the token itself, as before
  const older = async (url) => ({ ok: false, status: 404, headers: new Map(),
    json: async () => ({ error: { status: 404, field: null, message: "not found" } }) });
  assert.equal(await obtainCredential("http://x", "tax", "t".repeat(22), { fetch: older }), null);
  // a second credential for one invitation is refused as a used token is
  const refused = async () => ({ ok: false, status: 409, headers: new Map(),
    json: async () => ({ error: { status: 409, field: "token", message: "token: has its credential" } }) });
  await assert.rejects(obtainCredential("http://x", "tax", "t".repeat(22), { fetch: refused }), TokenAlreadyUsed);
});

test("with a storage, a reload sends the same blinded message and then reuses the credential", async () => {
  const { obtainCredential, credentialSlot, MemoryStorage } = await import("../deniable.js");
  const hex = (data) => Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
  const storage = new MemoryStorage();
  const blindedSent = [];
  let answer = false; // the first page's request is lost with the page
  const fetch = async (url, init = {}) => {
    const body = init.body ? JSON.parse(init.body) : null;
    const reply = (status, payload) => ({ ok: status < 400, status, json: async () => payload, headers: new Map() });
    if (url.endsWith("/credential-key")) return reply(200, { key: "k1", modulus: vector.n, exponent: Number(number("e")) });
    blindedSent.push(body.blinded);
    if (!answer) throw new TypeError("the page was closed");
    return reply(200, { key: "k1", blind_signature: hex(sign(Uint8Array.from(body.blinded.match(/../g), (p) => parseInt(p, 16)))) });
  };
  const token = "t".repeat(22);
  await assert.rejects(obtainCredential("http://x", "tax", token, { fetch, storage, retries: 0 }));
  answer = true;
  const credential = await obtainCredential("http://x", "tax", token, { fetch, storage, retries: 0 });
  assert.equal(blindedSent.length, 2);
  assert.equal(blindedSent[0], blindedSent[1]);
  const kept = storage.getItem(await credentialSlot("tax", token));
  assert.ok(!kept.includes(token) && !kept.includes("inverse") && kept.includes(credential.signature));
  assert.deepEqual(await obtainCredential("http://x", "tax", token, { fetch, storage }), credential);
  assert.equal(blindedSent.length, 2); // reused: nothing asked again
});

test("RFC 9474's RSABSSA-SHA384-PSS-Randomized vector, its prefix included, as the Python twin reproduces it", async () => {
  const rfc = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/rfc9474_randomized.json", import.meta.url), "utf8"));
  const data = (name) => Uint8Array.from(rfc[name].match(/../g).map((pair) => parseInt(pair, 16)));
  const value = (name) => BigInt(`0x${rfc[name]}`);
  const prepared = new Uint8Array([...data("msg_prefix"), ...data("msg")]);
  assert.deepEqual(prepared, data("input_msg"));
  const rfcKey = new PublicKey(value("n"), value("e"));
  const { blinded, inverse } = await blind(rfcKey, prepared, { salt: data("salt"), inverse: value("inv") });
  assert.deepEqual(blinded, data("blinded_msg"));
  assert.deepEqual(await finalizeBlind(rfcKey, prepared, data("blind_sig"), inverse), data("sig"));
  assert.ok(await verifyBlind(rfcKey, prepared, data("sig")));
});

test("a request refused for good is not kept: nothing of it stays in the storage", async () => {
  const { obtainCredential, MemoryStorage, TokenAlreadyUsed } = await import("../deniable.js");
  const storage = new MemoryStorage();
  const fetch = async (url) => {
    const reply = (status, payload) => ({ ok: status < 400, status, json: async () => payload, headers: new Map() });
    if (url.endsWith("/credential-key")) return reply(200, { key: "k1", modulus: vector.n, exponent: Number(number("e")) });
    return reply(409, { error: { status: 409, field: "token", message: "token: already used" } }); // spent meanwhile
  };
  await assert.rejects(obtainCredential("http://x", "tax", "t".repeat(22), { fetch, storage, retries: 0 }), TokenAlreadyUsed);
  assert.equal(storage._items.size, 0);
});

test("the outbox keeps a response's credential, as it keeps a token", async () => {
  const { Outbox, MemoryStorage } = await import("../deniable.js");
  const outbox = new Outbox({ storage: new MemoryStorage() });
  const credential = { key: "k1", serial: "ab".repeat(64), signature: "cd".repeat(256) };
  await outbox.add("http://x", "tax", { spec_hash: "h", idempotency_key: "k".repeat(16), reports: { dodged: "no" }, credential });
  assert.deepEqual(outbox.entries()[0].body.credential, credential);
});
