// The JS twin must build exactly the channels the Python client wrote into tests/vectors/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Memo, Survey } from "../deniable.js";
import ar from "../src/words/ar.js";
import de from "../src/words/de.js";
import es from "../src/words/es.js";
import fr from "../src/words/fr.js";
import pt from "../src/words/pt.js";

const WORDS = { ar, de, es, fr, pt };

const cases = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/channels.json", import.meta.url), "utf8"));
const text = ([n, d]) => (d === 1n ? `${n}` : `${n}/${d}`);

for (const vector of cases) {
  test(`survey ${vector.spec.id}: same channels, epsilon and normalized parameters`, () => {
    const survey = Survey.fromSpec(vector.spec);
    assert.deepEqual(Object.keys(survey.questions), Object.keys(vector.questions));
    for (const [id, expected] of Object.entries(vector.questions)) {
      const mechanism = survey.questions[id].mechanism;
      assert.equal(mechanism.design, expected.design, id);
      assert.deepEqual(mechanism.params, expected.params, id);
      assert.equal(mechanism.respondentRandomizes, expected.respondent_randomizes, `${id}: who randomizes`);
      if (expected.latent_classes) {
        assert.deepEqual(mechanism.latentClasses.map(([label, column]) => [label, column.map(String)]), expected.latent_classes, `${id}: latent classes`);
      }
      assert.deepEqual(mechanism.answers, expected.answers, id);
      assert.deepEqual(mechanism.reports, expected.reports, id);
      const channel = expected.reports.map((r) => expected.answers.map((a) => text(mechanism.probability(r, a))));
      assert.deepEqual(channel, expected.channel, `${id}: channel`);
      const ratio = mechanism.expEpsilon === null ? null : mechanism.expEpsilon.toString();
      assert.equal(ratio, expected.exp_epsilon, `${id}: exact e^epsilon`);
      if (expected.epsilon === null) assert.equal(mechanism.epsilon, Infinity);
      else assert.ok(Math.abs(mechanism.epsilon - expected.epsilon) <= 1e-12 * Math.max(1, expected.epsilon), id);
      assert.equal(survey.questions[id].privacyStatement(), expected.statement, `${id}: privacy statement`);
      assert.deepEqual(Object.keys(expected.statements).sort(), Object.keys(WORDS).sort(), `${id}: every shipped language`);
      for (const [code, statement] of Object.entries(expected.statements)) {
        assert.equal(survey.questions[id].privacyStatement(0.02, WORDS[code]), statement, `${id}: privacy statement in ${code}`);
      }
      const split = survey.questions[id].splitBallot;
      if (expected.split_ballot) {
        assert.equal(String(split.direct), expected.split_ballot.direct, `${id}: direct share`);
        assert.deepEqual(survey.questions[id].reportSpace.reports, expected.split_ballot.reports, `${id}: both arms' reports`);
        const arms = [...Array(Number(split.direct.d)).keys()].map((draw) => split.assignArm({ randomBelow: () => BigInt(draw) }));
        assert.deepEqual(arms, expected.split_ballot.arm_by_draw, `${id}: the arm each draw gives`);
      } else assert.equal(split, null, id);
      const question = survey.questions[id];
      if (expected.panel) {  // a repeated survey: the same layers, and the same permanent reports from the same memo
        const memo = Memo.fromSecret(Uint8Array.from({ length: 32 }, (_, i) => i));
        const { permanent, instant } = question.mechanism;
        assert.deepEqual([String(instant.keep), String(instant.other), instant.size, instant.perBit],
          [expected.panel.instant.keep, expected.panel.instant.other, expected.panel.instant.size, expected.panel.instant.per_bit], `${id}: instantaneous layer`);
        if (expected.panel.epsilon_all_waves === null) assert.equal(question.epsilonAllWaves, Infinity, id);
        else assert.ok(Math.abs(question.epsilonAllWaves - expected.panel.epsilon_all_waves) <= 1e-12, `${id}: epsilon over all waves`);
        for (const [answer, report] of expected.panel.permanent) {
          const stream = memo.stream(survey.id, id, "report", permanent.answerPosition(answer));
          assert.deepEqual(permanent.randomize(answer, stream), report, `${id}: the permanent report of ${JSON.stringify(answer)}`);
        }
        if (expected.panel.arm) assert.equal(survey.armFor(id, memo), expected.panel.arm, `${id}: the memo's arm`);
        if (expected.panel.group) assert.equal(survey.groupFor(id, memo), expected.panel.group, `${id}: the memo's group`);
      } else assert.equal(question.permanent, question.mechanism, id);
    }
    assert.deepEqual(survey.repeated === null ? null : survey.repeated.canonical(), vector.repeated?.canonical ?? null);
    if (vector.repeated) {
      if (vector.repeated.epsilon_per_wave === null) assert.equal(survey.epsilonPerWave, Infinity);
      else assert.ok(Math.abs(survey.epsilonPerWave - vector.repeated.epsilon_per_wave) <= 1e-12, "epsilon per wave");
    }
    if (vector.epsilon === null) assert.equal(survey.epsilon, Infinity);
    else assert.ok(Math.abs(survey.epsilon - vector.epsilon) <= 1e-12 * Math.max(1, vector.epsilon));
  });
}
