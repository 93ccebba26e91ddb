// The device's cost of one credential in Node (the npm module): benchmarks/credentials_page.js, the function the
// browser runs too. Prints {"ms": per credential, "bits": the key's}.
//   node benchmarks/credentials.mjs [count] < key.json    ({n, e, d} in hexadecimal; without it, RFC 9474's vector key)
import { readFileSync } from "node:fs";

const count = Number(process.argv[2] ?? 20);
const given = await new Promise((resolve) => {
  if (process.stdin.isTTY) return resolve("");
  let text = "";
  process.stdin.on("data", (chunk) => { text += chunk; }).on("end", () => resolve(text));
});
// The RFC 9474 vector's key (4096 bits) is the one key this repository holds with its private exponent.
const key = given.trim() ? JSON.parse(given)
  : JSON.parse(readFileSync(new URL("../tests/vectors/rfc9474_blind_rsa.json", import.meta.url), "utf8"));
const measure = (0, eval)(readFileSync(new URL("./credentials_page.js", import.meta.url), "utf8"));
const module = new URL("../src/deniable/client/js/deniable.js", import.meta.url).href;
const ms = await measure({ key, count, module });
console.log(JSON.stringify({ ms, bits: BigInt(`0x${key.n}`).toString(2).length }));
