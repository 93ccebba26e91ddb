// The randomized-order twin: the same specs accepted, the same errors, and the same order from the same random words
// as Python's (the cases are tests/client/test_order.py's, read from the shared file it writes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { SpecError, Survey, drawOrder } from "../deniable.js";
import { wordSource } from "../src/randomness.js";

const CASES = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/order.json", import.meta.url), "utf8"));

test("every order case reads and draws as Python does", () => {
  for (const { spec, error, orders } of CASES) {
    if (error !== null) {
      assert.throws(() => Survey.fromSpec(spec), (thrown) => thrown instanceof SpecError && thrown.message === error, JSON.stringify(spec).slice(0, 200));
      continue;
    }
    const survey = Survey.fromSpec(spec);
    assert.equal(survey.hasRandomOrder, true);
    for (const { words, order } of orders) {
      let next = 0;
      assert.deepEqual(drawOrder(survey, wordSource(() => words[next++])), order);
    }
  }
});

test("an order drawn with the CSPRNG is a permutation of each part", () => {
  const survey = Survey.fromSpec(CASES[0].spec);
  const order = drawOrder(survey);
  assert.deepEqual([...order.sections].sort(), survey.sections.map((s) => s.id).sort());
  assert.deepEqual([...order.options.region].sort(), [...survey.questions.region.options].sort());
  assert.equal(order.sections[0], "about");
});

test("a section without a title is told, as Python tells it, that the title is its heading", () => {
  const spec = { id: "s", title: "t", sections: [{ id: "end", questions: [{ id: "q4", type: "yes_no", text: "4?" }] }] };
  assert.throws(() => Survey.fromSpec(spec), (thrown) => thrown instanceof SpecError &&
    thrown.message === "section 'end'.title: required: the section's heading, one text or one per language");
});
