// The device's cost of one credential: the client module blinds a serial, then unblinds and verifies the signature
// (made here, untimed, with the throwaway key's private exponent); ms per credential. One function for both places it
// runs: evaluated in a page of a running server (module "/js/deniable.js") and in Node (benchmarks/credentials.mjs,
// the module's file URL). The argument: {key: {n, e, d} in hexadecimal, count, module}.
async ({ key, count, module }) => {
  const { PublicKey, blind, finalizeBlind, prepareBlind } = await import(module);
  const publicKey = new PublicKey(BigInt(`0x${key.n}`), BigInt(`0x${key.e}`));
  const d = BigInt(`0x${key.d}`);
  const toInt = (bytes) => BigInt(`0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("") || "0"}`);
  const toBytes = (value) => Uint8Array.from(value.toString(16).padStart(2 * publicKey.length, "0").match(/../g),
    (pair) => parseInt(pair, 16));
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
    const { blinded, inverse } = await blind(publicKey, serial);
    spent += performance.now() - start;
    const signed = toBytes(modPow(toInt(blinded), d, publicKey.n));
    start = performance.now();
    await finalizeBlind(publicKey, serial, signed, inverse);
    spent += performance.now() - start;
  }
  return spent / count;
}
