// The JS twin of the skip-logic language and questionnaire format: the same trees, canonical
// texts, errors, shown questions and refusals as the Python client wrote into tests/vectors/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Survey, SpecError, ExpressionError, parseExpression, expressionText } from "../deniable.js";

const vectors = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/skiplogic.json", import.meta.url), "utf8"));

test("expressions parse to Python's trees and print to its canonical text", () => {
  for (const { text, tree, canonical } of vectors.expressions) {
    const parsed = parseExpression(text);
    assert.deepEqual(parsed, tree, text);
    assert.equal(expressionText(parsed), canonical, text);
    assert.deepEqual(parseExpression(canonical), tree, `${text}: printing and parsing again gives the same tree`);
  }
});

test("malformed expressions are refused with Python's message", () => {
  for (const { text, error } of vectors.bad_expressions) {
    assert.throws(() => parseExpression(text), (thrown) => thrown instanceof ExpressionError && thrown.message === error, text);
  }
});

test("random questionnaires show the same questions as in Python", () => {
  let cases = 0;
  for (const { spec, cases: expected } of vectors.surveys) {
    const survey = Survey.fromSpec(spec);
    for (const { answers, shown, required, reported } of expected) {
      assert.deepEqual(survey.shown(answers), shown, `${spec.id} ${JSON.stringify(answers)}`);
      assert.deepEqual(survey.requiredNow(answers), required, `${spec.id}: required`);
      assert.deepEqual(Object.keys(survey.randomize(answers)).sort(), reported, `${spec.id}: reported`);
      cases += 1;
    }
  }
  assert.ok(cases >= 400);
});

test("specs Python refuses (leaking skip logic among them) are refused with the same message", () => {
  for (const { spec, error } of vectors.refused) {
    assert.throws(() => Survey.fromSpec(spec), (thrown) => thrown instanceof SpecError && thrown.message === error, error);
  }
});

// A small seeded generator (mulberry32) so that the property test is reproducible.
function seeded(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomAnswer(random, question) {
  if (random() < 0.15) return null;
  if (question.type === "number") {
    const [low, high, step] = question.grid.map((f) => f.toNumber());
    return low + step * Math.floor(random() * (Math.round((high - low) / step) + 1));
  }
  if (question.type === "yes_no") return random() < 0.5 ? "yes" : "no";
  if (question.type === "multi_select") return question.options.filter(() => random() < 0.5);
  return question.options[Math.floor(random() * question.options.length)];
}

test("property: the keys sent are a function of the public answers alone", () => {
  const random = seeded(7);
  let checked = 0;
  for (const { spec } of vectors.surveys) {
    const survey = Survey.fromSpec(spec);
    for (let trial = 0; trial < 25; trial++) {
      const answers = {};
      for (const question of Object.values(survey.questions)) answers[question.id] = randomAnswer(random, question);
      const keys = Object.keys(survey.randomize(answers)).sort();
      for (let variant = 0; variant < 8; variant++) {
        const varied = { ...answers };
        // Every private question answered (present or not is the respondent's choice, not the truth).
        for (const question of survey.privateQuestions) {
          if (answers[question.id] === null) continue;
          let answer = null;
          while (answer === null) answer = randomAnswer(random, question);
          varied[question.id] = answer;
        }
        assert.deepEqual(Object.keys(survey.randomize(varied)).sort(), keys, spec.id);
        checked += 1;
      }
    }
  }
  assert.ok(checked >= 8000);
});
