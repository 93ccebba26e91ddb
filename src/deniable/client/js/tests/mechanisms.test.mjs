import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  EpsilonRequest, Fraction, SpecError, Survey, integerRoot, parseFraction, posteriorBound, privacyStatement, randomBelow,
} from "../deniable.js";
import { ONE, gcd } from "../src/exact.js";

const cases = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/channels.json", import.meta.url), "utf8"));

// Every cell's count must lie within Z standard deviations of n·p. With Z = 6.5 a false
// failure has probability below 1e-10 per cell, so below 1e-6 over this whole file.
const Z = 6.5;

function assertFrequencies(mechanism, answer, draws, label) {
  const tally = new Map();
  for (let i = 0; i < draws; i++) {
    const key = JSON.stringify(mechanism.randomize(answer));
    tally.set(key, (tally.get(key) ?? 0) + 1);
  }
  let total = 0;
  for (const report of mechanism.reports) {
    const [n, d] = mechanism.probability(report, answer);
    const p = Number(n) / Number(d);
    const observed = tally.get(JSON.stringify(report)) ?? 0;
    total += observed;
    if (p === 0) {
      assert.equal(observed, 0, `${label}: report ${JSON.stringify(report)} has probability 0`);
      continue;
    }
    const sd = Math.sqrt(draws * p * (1 - p));
    assert.ok(Math.abs(observed - draws * p) <= Z * sd + 1e-9, `${label}: report ${JSON.stringify(report)} seen ${observed} times, expected ${draws * p}`);
  }
  assert.equal(total, draws, `${label}: a report outside the alphabet was drawn`);
}

for (const vector of cases) {
  test(`sampled frequencies match the exact channel: ${vector.spec.id}`, () => {
    const survey = Survey.fromSpec(vector.spec);
    for (const [id, question] of Object.entries(survey.questions)) {
      for (const answer of question.mechanism.answers) assertFrequencies(question.mechanism, answer, 4000, `${id} answer ${JSON.stringify(answer)}`);
    }
  });
}

test("the coin-flip design of the seeds: 3/4 and 1/4, epsilon = ln 3, posterior 0.058", () => {
  const survey = Survey.fromSpec({ id: "tax", title: "Taxes", questions: [{ id: "dodged", type: "yes_no", text: "Dodged?" }] });
  const mechanism = survey.questions.dodged.mechanism;
  assert.deepEqual(mechanism.probability("yes", "yes"), [3n, 4n]);
  assert.deepEqual(mechanism.probability("yes", "no"), [1n, 4n]);
  assert.equal(mechanism.expEpsilon.toString(), "3");
  assert.ok(Math.abs(survey.epsilon - Math.log(3)) < 1e-15);
  assert.ok(Math.abs(posteriorBound(0.02, Math.log(3)) - 0.0576) < 5e-4);
  assert.match(privacyStatement(Math.log(3)), /at most 3 .*at most 5\.8% sure/);
  assert.match(privacyStatement(Infinity), /not randomized/);
});

test("a requested epsilon is never exceeded", () => {
  for (const epsilon of [0.1, 0.5, 1, Math.log(3), 2, 3.7, 8]) {
    for (const privacy of [
      { type: "choice", options: ["a", "b", "c", "d"], privacy: { design: "k_rr", epsilon } },
      { type: "ordinal", options: ["1", "2", "3", "4"], privacy: { design: "ordinal", epsilon } },
      { type: "multi_select", options: ["a", "b", "c"], privacy: { design: "unary", epsilon } },
      { type: "multi_select", options: ["a", "b"], privacy: { design: "unary", epsilon, variant: "optimized" } },
      { type: "number", min: 0, max: 6, privacy: { design: "laplace", epsilon } },
    ]) {
      const survey = Survey.fromSpec({ id: "s", title: "t", questions: [{ id: "q", text: "?", ...privacy }] });
      const mechanism = survey.questions.q.mechanism;
      assert.ok(mechanism.epsilon <= epsilon + 1e-12, `${privacy.type} at ${epsilon}: got ${mechanism.epsilon}`);
      assert.ok(mechanism.epsilon >= epsilon * 0.99 - 1e-6, `${privacy.type} at ${epsilon}: spends only ${mechanism.epsilon}`);
    }
  }
});

test("spec mistakes are rejected with the question and field named", () => {
  const base = (question) => ({ id: "s", title: "t", questions: [{ id: "q", text: "?", ...question }] });
  const cases = [
    [base({ type: "maybe" }), /question 'q'\.type/],
    [base({ type: "yes_no", privacy: { design: "coin" } }), /question 'q'\.privacy\.design: unknown design/],
    [base({ type: "yes_no", privacy: { design: "forced_response", truth: "1/2", yes: "1/4", no: "1/2" } }), /truth \+ yes \+ no must be 1/],
    [base({ type: "choice", options: ["a", "b"], privacy: { design: "k_rr", epsilon: 0 } }), /privacy\.epsilon: must be greater than 0/],
    [base({ type: "choice", options: ["a"], privacy: "none" }), /question 'q'\.options/],
    [base({ type: "choice", options: ["a", "a"], privacy: "none" }), /'a' appears more than once/],
    [base({ type: "number", min: 5, max: 5, privacy: "none" }), /question 'q'\.min: must be less than max/],
    [base({ type: "choice", options: ["a", "b"] }), /question 'q'\.privacy: required/],
    [{ id: "s", title: "t", questions: [{ id: "q", type: "yes_no", text: "?" }, { id: "q", type: "yes_no", text: "?" }] }, /duplicate id/],
  ];
  for (const [spec, message] of cases) assert.throws(() => Survey.fromSpec(spec), (error) => error instanceof SpecError && message.test(error.message));
});

test("exact helpers agree with their definitions", () => {
  assert.equal(integerRoot(10n ** 40n, 2), 10n ** 20n);
  assert.equal(integerRoot(10n ** 40n - 1n, 2), 10n ** 20n - 1n);
  assert.equal(parseFraction("0.25", "f").toString(), "1/4");
  assert.equal(parseFraction(0.1, "f").toString(), "1/10");
  assert.equal(parseFraction("-3/6", "f").toString(), "-1/2");
  assert.equal(parseFraction(1e-7, "f").toString(), "1/10000000");
  assert.throws(() => parseFraction("1e9999", "f"), SpecError);
  const three = EpsilonRequest.parse("ln 3", "e");
  assert.equal(three.expLowerBound().toString(), "3");
  const one = EpsilonRequest.parse(1, "e").expLowerBound();
  assert.ok(one.toNumber() <= Math.E && one.toNumber() > Math.E - 2 ** -31);
  assert.ok(new Fraction(1n, 3n).add(new Fraction(1n, 6n)).cmp(new Fraction(1n, 2n)) === 0);
});

test("randomBelow is uniform and stays in range", () => {
  for (const n of [2n, 3n, 7n, 2n ** 40n + 3n]) {
    const draws = 6000;
    const low = [0, 0];
    for (let i = 0; i < draws; i++) {
      const x = randomBelow(n);
      assert.ok(x >= 0n && x < n);
      low[x < n / 2n ? 0 : 1] += 1;
    }
    const p = Number(n / 2n) / Number(n);
    assert.ok(Math.abs(low[0] - draws * p) <= Z * Math.sqrt(draws * p * (1 - p)));
  }
});

test("the largest channels within the limits are built in O(k): epsilon from the closed forms", () => {
  const options = Array.from({ length: 1000 }, (_, i) => `o${i}`);
  const survey = Survey.fromSpec({
    id: "big", title: "Big", questions: [
      { id: "k", text: "?", type: "choice", options, privacy: { design: "k_rr", epsilon: 1 } },
      { id: "o", text: "?", type: "ordinal", options, privacy: { design: "ordinal", epsilon: 1 } },
      { id: "n", text: "?", type: "number", min: 0, max: 10000, step: 1, privacy: { design: "laplace", epsilon: 1 } },
      { id: "p", text: "?", type: "choice", options, privacy: "none" },
    ],
  });
  const started = process.cpuUsage();
  const { k, o, n, p } = survey.questions;
  const kary = k.mechanism;
  assert.equal(kary.expEpsilon.toString(), kary.keep.div(kary.other).toString());
  assert.equal(o.mechanism.expEpsilon.toString(), new Fraction(1n).div(o.mechanism.base).pow(999).toString());
  // 10,001 points: e^ε = (1/α)^10000, 320,000 bits over 320,000 (Euclid's gcd on them took 25 s)
  const { n: top, d: bottom } = n.mechanism.alpha;
  assert.equal(n.mechanism.expEpsilon.n, bottom ** 10000n);
  assert.equal(n.mechanism.expEpsilon.d, top ** 10000n);
  assert.equal(p.mechanism.expEpsilon, null);
  for (const question of [k, o, p]) assert.ok(options.includes(question.mechanism.randomize("o500")));
  const spent = process.cpuUsage(started);
  assert.ok((spent.user + spent.system) / 1e6 < 5);  // CPU seconds: holds on a busy machine
  // the worst ratio of the written-out matrix agrees on a scale small enough to enumerate
  const small = Survey.fromSpec({ id: "s", title: "S", questions: [
    { id: "o", text: "?", type: "ordinal", options: ["1", "2", "3", "4", "5", "6"], privacy: { design: "ordinal", epsilon: 0.8 } },
  ] }).questions.o.mechanism;
  let worst = new Fraction(1n);
  for (const row of small.channel()) {
    for (const a of row) for (const b of row) if (a.div(b).cmp(worst) > 0) worst = a.div(b);
  }
  assert.equal(worst.toString(), small.expEpsilon.toString());
});

test("numbers are parsed with bounded length and exponent before any exact arithmetic", () => {
  for (const text of ["1e5000000", "1".repeat(82), "1e1000", "0." + "1".repeat(41)]) {
    const started = performance.now();
    assert.throws(() => parseFraction(text, "n"), SpecError);
    assert.ok(performance.now() - started < 50, text);
  }
  assert.equal(parseFraction("1e999", "n").toString(), `1${"0".repeat(999)}`);
});

test("answers outside a question are refused with AnswerError, never clamped (the Python twin's words)", async () => {
  const { AnswerError } = await import("../deniable.js");
  const survey = Survey.fromSpec({
    id: "d", title: "t", questions: [
      { id: "hours", text: "?", type: "number", min: 0, max: 60, step: 5, privacy: { design: "laplace", epsilon: 1 } },
      { id: "dodged", text: "?", type: "yes_no" },
      { id: "undeclared", text: "?", type: "multi_select", options: ["Tips", "Side jobs"], privacy: { design: "unary", epsilon: 1 } }],
  });
  const expect = (answers, pattern, question) => {
    assert.throws(() => survey.randomize(answers), (error) => error instanceof AnswerError && pattern.test(error.message)
      && error.question === question);
  };
  expect({ hours: 999 }, /^answers\.hours: answer 999 is outside -?\d+ to \d+; allowed: a number from/, "hours");
  expect({ dodged: "maybe" }, /^answers\.dodged: .*'maybe'.*; allowed: one of 'yes', 'no'$/, "dodged");
  expect({ undeclared: ["Lottery"] }, /^answers\.undeclared: .*'Lottery'.*; allowed: a list of some of/, "undeclared");
  expect({ nope: "yes" }, /^answers\.nope: no such question in this survey/, "nope");
  assert.ok("dodged" in survey.randomize({ dodged: "yes" }));
});

test("the numeric sampler's float estimate decides only where exact comparison agrees", () => {
  // U a hair either side of thresholds t(m) = 2α^m/(1 + α), and uniform ones: the magnitude must be
  // the largest m ≤ 2N with U < t(m), U = (prefix + 1/3)/2^64 (the scripted bits after the first 64).
  for (const [max, epsilon] of [[100, 1], [1000, 0.02], [2, 8], [10000, 0.01]]) {
    const spec = { id: "s", title: "t", questions: [{ id: "q", text: "?", type: "number", min: 0, max, step: 1, privacy: { design: "laplace", epsilon } }] };
    const mechanism = Survey.fromSpec(spec).questions.q.mechanism;
    const { n: a, d: b } = mechanism.alpha;
    const cap = 2 * mechanism.points;
    const TWO_64 = 1n << 64n;
    const limits = new Map();  // m → the largest integer below 6a^m·2^64 / (b^(m−1)(a + b)), worked out once
    const exact = (prefix) => {
      const below = (m) => {
        if (m === 0) return true;
        if (!limits.has(m)) limits.set(m, (2n * a ** BigInt(m) * 3n * TWO_64 - 1n) / (b ** BigInt(m - 1) * (a + b)));
        return 3n * prefix + 1n <= limits.get(m);
      };
      let [low, high] = [0, cap];
      while (low < high) {
        const middle = Math.floor((low + high + 1) / 2);
        if (below(middle)) low = middle;
        else high = middle - 1;
      }
      return low;
    };
    const checked = new Set([cap]);
    for (let m = 1; m <= Math.min(cap, 40); m++) checked.add(m);
    for (let m = 1; m <= cap; m += Math.max(1, Math.floor(cap / 60))) checked.add(m);
    const prefixes = [1n, 2n, TWO_64 - 1n];
    for (const m of checked) {
      const threshold = (2n * a ** BigInt(m) * TWO_64) / (b ** BigInt(m - 1) * (a + b));
      for (const offset of [-2n, -1n, 0n, 1n, 2n]) prefixes.push(threshold + offset);
    }
    const bytes = new Uint32Array(2000);
    crypto.getRandomValues(bytes);
    for (let i = 0; i < 2000; i += 2) prefixes.push((BigInt(bytes[i]) << 32n) | BigInt(bytes[i + 1]));
    for (const prefix of prefixes.filter((p) => p > 0n && p < TWO_64)) {
      const words = [Number(prefix >> 32n), Number(prefix & 0xffffffffn)];
      const source = { word: () => (words.length ? words.shift() : 0x55555555), randomBelow: () => { throw new Error("unused"); } };
      assert.equal(mechanism._magnitude(source), exact(prefix), `max ${max}, ε ${epsilon}, prefix ${prefix}`);
    }
  }
});

test("exact arithmetic is the plain definitions': a gcd that takes out factors of two first, products reduced crosswise", () => {
  const slowGcd = (a, b) => { a = a < 0n ? -a : a; b = b < 0n ? -b : b; while (b) [a, b] = [b, a % b]; return a; };
  let seed = 12345;
  const next = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
  const draw = () => BigInt(next()) * (next() % 3 === 0 ? 2n ** BigInt(next() % 40) : 1n) * (next() % 2 ? -1n : 1n);
  for (let i = 0; i < 5000; i++) {
    const [a, b, c, d, e] = [draw(), draw(), draw(), draw() || 1n, draw() || 1n];
    assert.equal(gcd(a, b), slowGcd(a, b));
    const x = new Fraction(a, d), y = new Fraction(c, e);
    assert.equal(x.mul(y).toString(), new Fraction(a * c, d * e).toString());
    if (c !== 0n) assert.equal(x.div(y).toString(), new Fraction(a * e, d * c).toString());
    assert.equal(x.pow(3).toString(), new Fraction(a ** 3n, d ** 3n).toString());
  }
  assert.throws(() => ONE.div(new Fraction(0n)), RangeError);
  assert.equal(new Fraction(0n).mul(new Fraction(3n, 7n)).toString(), "0");
});

test("a budget over many 10,001-point numbers is decided by floats when clear of it, not by their exact product", () => {
  const questions = Array.from({ length: 200 }, (_, i) => ({ id: `n${i}`, text: "?", type: "number", min: 0, max: 10000,
    step: 1, privacy: { design: "laplace", epsilon: 1 + i / 1000 } }));
  const started = process.cpuUsage();
  const survey = Survey.fromSpec({ id: "b", title: "B", max_epsilon: 5000, questions });
  const spent = process.cpuUsage(started);
  assert.ok(survey.epsilon < 5000 && (spent.user + spent.system) / 1e6 < 5);
  assert.throws(() => Survey.fromSpec({ id: "b", title: "B", max_epsilon: 100, questions }), /over the budget of 100/);
});
