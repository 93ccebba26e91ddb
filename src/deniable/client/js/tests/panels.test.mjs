// Repeated surveys in the JS client: the memo, its SHA-256, the layers, and what a majority vote recovers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { AnswerError, Memo, MemoError, MemoryStorage, Survey, hmacSha256, sha256 } from "../deniable.js";

const COIN = { design: "forced_response", truth: "1/2", yes: "1/4", no: "1/4" };
const panel = (questions, repeated = true) => Survey.fromSpec({ id: "pulse", title: "Pulse", repeated, questions });
const question = (id = "q", extra = {}) => ({ id, type: "yes_no", text: `${id}?`, privacy: COIN, ...extra });

test("SHA-256 and HMAC-SHA256 equal node:crypto's at every padding boundary", () => {
  for (const length of [0, 1, 31, 55, 56, 57, 63, 64, 65, 119, 120, 200, 4096]) {
    const data = randomBytes(length);
    assert.equal(Buffer.from(sha256(data)).toString("hex"), createHash("sha256").update(data).digest("hex"), `${length}`);
    const key = randomBytes(32);
    assert.equal(Buffer.from(hmacSha256(key, data)).toString("hex"), createHmac("sha256", key).update(data).digest("hex"));
  }
});

test("a memo is created once in its storage, holds no answer, and refuses what is not a secret", () => {
  const storage = new MemoryStorage();
  const memo = new Memo(storage);
  const secret = storage.getItem("deniable.memo");
  assert.match(secret, /^[0-9a-f]{64}$/);
  new Memo(storage);
  assert.equal(storage.getItem("deniable.memo"), secret);
  const survey = panel([question()]);
  for (let i = 0; i < 20; i++) survey.randomize({ q: "yes" }, { memo });
  assert.deepEqual([...storage._items.keys()], ["deniable.memo"]); // randomizing stores nothing more
  assert.equal(storage.getItem("deniable.memo"), secret);
  for (const bad of ["abc", "Z".repeat(64), "0".repeat(65)]) {
    const store = new MemoryStorage();
    store.setItem("deniable.memo", bad);
    assert.throws(() => new Memo(store), (error) => error instanceof MemoError && error.field === "memo" && /64 hex digits/.test(error.message));
    assert.equal(store.getItem("deniable.memo"), bad); // never overwritten
  }
  assert.throws(() => new Memo(null), MemoError);
});

test("a repeated survey needs a memo, a survey asked once refuses one, and arms and groups are the memo's", () => {
  const survey = panel([question("q", { split_ballot: { direct: "1/2" } }), question("c", { privacy: {
    design: "cheating_detection", groups: { a: { yes: "1/3", randomizer: "Jan-Apr: yes." }, b: { yes: "2/3", randomizer: "Jan-Aug: yes." } } } })]);
  assert.throws(() => survey.randomize({ q: "yes" }), (error) => error instanceof MemoError && /repeated: pass memo/.test(error.message));
  const once = Survey.fromSpec({ id: "once", title: "Once", questions: [question()] });
  assert.throws(() => once.randomize({ q: "yes" }, { memo: Memo.fromSecret("00".repeat(32)) }), /not repeated/);
  const memo = Memo.fromSecret("ab".repeat(32));
  const arm = survey.armFor("q", memo);
  const group = survey.groupFor("c", memo);
  assert.throws(() => survey.randomize({ q: "yes" }, { memo, arms: { q: arm === "direct" ? "randomized" : "direct" } }), AnswerError);
  assert.throws(() => survey.randomize({ c: { group: group === "a" ? "b" : "a", report: "yes" } }, { memo }), AnswerError);
  const reports = survey.randomize({ q: "yes", c: { group, report: "no" } }, { memo });
  assert.equal(reports.q.arm, arm);
  assert.equal(reports.c.group, group);
});

test("the composite channel is the instantaneous layer times the permanent one", () => {
  const survey = panel([question(), { id: "k", type: "choice", text: "k?", options: ["a", "b", "c"], privacy: { design: "k_rr", epsilon: "ln 3" } }],
    { instant_epsilon: "ln 9" });
  for (const id of ["q", "k"]) {
    const { permanent, instant } = survey.questions[id].mechanism;
    const reports = permanent.reports;
    const layer = reports.map((after) => reports.map((before) => (after === before ? instant.keep : instant.other)));
    const channel = permanent.channel();
    const product = layer.map((row) => permanent.answers.map((_, a) => row.reduce((sum, p, j) => sum.add(p.mul(channel[j][a])), channel[0][0].sub(channel[0][0]))));
    assert.deepEqual(survey.questions[id].mechanism.channel().map((row) => row.map(String)), product.map((row) => row.map(String)), id);
  }
});

test("over forty waves a majority vote recovers answers without a memo and not with one", () => {
  const fresh = Survey.fromSpec({ id: "pulse", title: "Pulse", questions: [question()] });
  const remembered = panel([question()]);
  let plain = 0;
  let memoized = 0;
  const people = 1000;
  for (let person = 0; person < people; person++) {
    const truth = person % 2 ? "yes" : "no";
    const memo = Memo.fromSecret(randomBytes(32));
    let yesPlain = 0;
    let yesMemo = 0;
    for (let wave = 0; wave < 40; wave++) {
      if (fresh.randomize({ q: truth }).q === "yes") yesPlain++;
      if (remembered.randomize({ q: truth }, { memo }).q === "yes") yesMemo++;
    }
    const guess = (yes) => (yes > 20 ? "yes" : yes < 20 ? "no" : "tie");
    plain += guess(yesPlain) === truth ? 1 : guess(yesPlain) === "tie" ? 0.5 : 0;
    memoized += guess(yesMemo) === truth ? 1 : guess(yesMemo) === "tie" ? 0.5 : 0;
  }
  assert.ok(plain / people >= 0.99, `without a memo ${plain / people}`);
  // e^ε∞/(1 + e^ε∞) = 3/4, plus five standard errors (this test draws from the OS: no seed)
  assert.ok(memoized / people <= 0.75 + 5 * Math.sqrt(0.75 * 0.25 / people), `with a memo ${memoized / people}`);
});
