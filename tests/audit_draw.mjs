// The JS client's side of the ε audit (scripts/epsilon_audit.py): draws reports through the public API,
// Survey.randomize, with a seeded source offering the same fast paths as crypto.getRandomValues's pool
// (randomness.wordSource: word, below, randomBelow), and prints the counts per answer and report as JSON.
import { readFileSync } from "node:fs";
import { Memo, Survey } from "../src/deniable/client/js/deniable.js";
import { wordSource } from "../src/deniable/client/js/src/randomness.js";

const { seed, jobs } = JSON.parse(readFileSync(0, "utf8"));

// sfc32: a small, fast, well-tested 32-bit generator; reproducible from the seed.
function generator(start) {
  let [a, b, c, d] = [0x9e3779b9, 0x243f6a88, 0xb7e15162, start >>> 0];
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

const canonical = (value) => JSON.stringify(value);
const results = jobs.map((job, position) => {
  const survey = Survey.fromSpec(job.spec);
  const next = generator(seed * 7919 + position);
  const source = wordSource(next); // the crypto pool's fast paths, over seeded words
  const counts = {};
  for (const answer of job.pair) {
    const seen = {};
    for (let i = 0; i < job.draws; i++) {
      const memo = survey.repeated ? Memo.fromSecret(Uint8Array.from({ length: 32 }, () => next() & 0xff)) : null;
      const report = canonical(survey.randomize({ q: answer }, { source, memo }).q);
      seen[report] = (seen[report] ?? 0) + 1;
    }
    counts[canonical(answer)] = seen;
  }
  return counts;
});
process.stdout.write(JSON.stringify(results));
