// A survey's privacy budget (max_epsilon), the twin of tests/client/test_budget.py: the same specs are accepted
// and refused, the boundary decided exactly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SpecError, Survey } from "../deniable.js";

const COIN = { design: "forced_response", truth: "1/2", yes: "1/4", no: "1/4" };
const twoCoins = (top = {}) => ({
  id: "s", title: "S", questions: ["a", "b"].map((id) => ({ id, type: "yes_no", text: "?", privacy: COIN })), ...top,
});

for (const [budget, allowed] of [["ln(9)", true], ["ln(8.999)", false], [2.1972245773362196, true],
  [2.197224577336219, false], [3, true], [1, false]]) {
  test(`max_epsilon ${budget} is ${allowed ? "met" : "exceeded"} by two coin questions (e^epsilon = 9)`, () => {
    if (allowed) {
      const survey = Survey.fromSpec(twoCoins({ max_epsilon: budget }));
      assert.equal(String(survey.expEpsilon), "9");
    } else {
      assert.throws(() => Survey.fromSpec(twoCoins({ max_epsilon: budget })),
        (error) => error instanceof SpecError && /survey\.max_epsilon: the private questions spend ε = 2\.197 per respondent/.test(error.message));
    }
  });
}

test("an infinite epsilon never fits, a malformed budget is refused", () => {
  const spec = twoCoins({ max_epsilon: 100 });
  spec.questions.push({ id: "c", type: "yes_no", text: "?", privacy: { design: "triangular", p: "1/4", companion: "Sunday?" } });
  assert.throws(() => Survey.fromSpec(spec), /over the budget of 100/);
  for (const budget of [0, "ln(1)", "plenty"]) assert.throws(() => Survey.fromSpec(twoCoins({ max_epsilon: budget })), SpecError);
});
