// The device's cost of one credential in Node: blind a prepared serial, then unblind and verify the signature (the
// signature itself made here with a throwaway key's private exponent, untimed). Prints {"ms": per credential}.
//   node benchmarks/credentials.mjs [count]
import { PublicKey, blind, finalizeBlind, prepareBlind } from "../src/deniable/client/js/deniable.js";
import { bytesToInt, intToBytes } from "../src/deniable/client/js/src/blind_rsa.js";
import { readFileSync } from "node:fs";

const count = Number(process.argv[2] ?? 20);
// The key: {n, e, d} in hexadecimal on standard input (benchmarks/credentials.py makes a 2048-bit one), else the
// RFC 9474 vector's (4096 bits), the one key this repository holds with its private exponent.
const given = await new Promise((resolve) => {
  if (process.stdin.isTTY) return resolve("");
  let text = "";
  process.stdin.on("data", (chunk) => { text += chunk; }).on("end", () => resolve(text));
});
const source = given.trim() ? JSON.parse(given)
  : JSON.parse(readFileSync(new URL("../tests/vectors/rfc9474_blind_rsa.json", import.meta.url), "utf8"));
const key = new PublicKey(BigInt(`0x${source.n}`), BigInt(`0x${source.e}`));
const d = BigInt(`0x${source.d}`);
const modPow = (base, exponent, modulus) => {
  let result = 1n;
  for (base %= modulus; exponent > 0n; exponent >>= 1n) {
    if (exponent & 1n) result = (result * base) % modulus;
    base = (base * base) % modulus;
  }
  return result;
};
let spent = 0;
for (let i = 0; i < count; i++) {
  const serial = prepareBlind(crypto.getRandomValues(new Uint8Array(32)));
  let start = performance.now();
  const { blinded, inverse } = await blind(key, serial);
  spent += performance.now() - start;
  const signed = intToBytes(modPow(bytesToInt(blinded), d, key.n), key.length);
  start = performance.now();
  await finalizeBlind(key, serial, signed, inverse);
  spent += performance.now() - start;
}
console.log(JSON.stringify({ ms: spent / count, bits: key.n.toString(2).length }));
