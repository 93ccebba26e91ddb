// Sample reports with the JS client for the Python goodness-of-fit test:
//   node sample.mjs '<survey spec JSON>' <question id> <draws per answer>
// prints {"<answer as JSON>": {"<report as JSON>": count, ...}, ...}
import { Survey } from "../deniable.js";

const [specJson, questionId, draws] = process.argv.slice(2);
const mechanism = Survey.fromSpec(JSON.parse(specJson)).questions[questionId].mechanism;
const counts = {};
for (const answer of mechanism.answers) {
  const tally = {};
  for (let i = 0; i < Number(draws); i++) {
    const key = JSON.stringify(mechanism.randomize(answer));
    tally[key] = (tally[key] ?? 0) + 1;
  }
  counts[JSON.stringify(answer)] = tally;
}
process.stdout.write(JSON.stringify(counts));
