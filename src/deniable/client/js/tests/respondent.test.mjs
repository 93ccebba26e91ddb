// Designs in which the respondent randomizes: the twin of tests/client/test_respondent_designs.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AnswerError, SpecError, Survey } from "../deniable.js";

const COMPANION = "Is your mother's birthday in January, February or March?";
const spec = (privacy, extra = {}) => ({ id: "s", title: "S", ...extra, questions: [{ id: "q", type: "yes_no", text: "Did you?", privacy }] });
const question = (privacy, extra) => Survey.fromSpec(spec(privacy, extra)).questions.q;

test("crosswise: same/different, exact channel, epsilon = |ln(p/(1-p))|", () => {
  const { mechanism, epsilon } = question({ design: "crosswise", companion: COMPANION, p: "1/4" });
  assert.deepEqual(mechanism.reports, ["same", "different"]);
  assert.deepEqual(mechanism.probability("same", "yes"), [1n, 4n]);
  assert.deepEqual(mechanism.probability("same", "no"), [3n, 4n]);
  assert.equal(mechanism.expEpsilon.toString(), "3");
  assert.ok(Math.abs(epsilon - Math.log(3)) < 1e-15);
  assert.equal(mechanism.respondentRandomizes, true);
});

test("triangular is one-sided; a natural randomizer keeps the forced-response channel", () => {
  const tri = question({ design: "triangular", companion: COMPANION, p: "1/4" });
  assert.deepEqual(tri.mechanism.probability("no_to_both", "yes"), [0n, 1n]);
  assert.equal(tri.epsilon, Infinity);
  assert.match(tri.privacyStatement(), /choosing it reveals that answer/);
  const natural = question({ design: "forced_response", truth: "3/4", yes: "1/6", no: "1/12", randomizer: { text: "If…" } });
  const device = question({ design: "forced_response", truth: "3/4", yes: "1/6", no: "1/12" });
  assert.deepEqual(natural.mechanism.channel().map((r) => r.map(String)), device.mechanism.channel().map((r) => r.map(String)));
  assert.equal(natural.mechanism.respondentRandomizes, true);
  assert.equal(device.mechanism.respondentRandomizes, false);
});

test("the respondent's choice is sent as it is; a true answer is refused", () => {
  const survey = Survey.fromSpec({ id: "s", title: "S", questions: [
    { id: "cw", type: "yes_no", text: "A?", privacy: { design: "crosswise", companion: COMPANION, p: "1/4" } },
    { id: "tri", type: "yes_no", text: "B?", privacy: { design: "triangular", companion: COMPANION, p: "1/4" } }] });
  for (let i = 0; i < 50; i++) assert.deepEqual(survey.randomize({ cw: "different", tri: "other" }), { cw: "different", tri: "other" });
  assert.throws(() => survey.randomize({ cw: "yes" }), (error) => error instanceof AnswerError && /respondent's own randomized report/.test(error.message));
  const simulated = Array.from({ length: 300 }, () => survey.simulate({ cw: "yes", tri: "yes" }));
  assert.ok(simulated.every((r) => r.tri === "other"));
  const same = simulated.filter((r) => r.cw === "same").length / simulated.length;
  assert.ok(same > 0.15 && same < 0.35, `P(same | yes) = 1/4, drew ${same}`);
});

test("bad parameters name the field, as in Python", () => {
  const refused = [
    [{ design: "crosswise", companion: COMPANION, p: "1/2" }, /privacy\.p: 1\/2 makes/],
    [{ design: "crosswise", companion: COMPANION, p: 0 }, /privacy\.p: must be strictly between 0 and 1/],
    [{ design: "triangular", p: "1/4" }, /privacy\.companion/],
    [{ design: "forced_response", truth: "1/2", yes: "1/4", no: "1/4", randomizer: "flip" }, /privacy\.randomizer:/],
  ];
  for (const [privacy, message] of refused) assert.throws(() => question(privacy), (e) => e instanceof SpecError && message.test(e.message));
});

test("a wide number's bins are read as the server wrote them; a question that is not a number refuses them", () => {
  const survey = (question) => ({ id: "b", title: "b", questions: [question] });
  const hours = { id: "h", type: "number", text: "Hours?", min: 0, max: 100, bins: [0, 1, 5, 10, 20, 50], privacy: { design: "laplace", epsilon: 1 } };
  assert.equal(Survey.fromSpec(survey(hours)).questions.h.type, "number");
  const yesNo = { id: "y", type: "yes_no", text: "?", bins: [0], privacy: { design: "warner", p: 0.75 } };
  assert.throws(() => Survey.fromSpec(survey(yesNo)), (e) => e instanceof SpecError && /y'?\.bins: only number questions/.test(e.message));
});
