// Sample reports with the JS client for the Python goodness-of-fit test:
//   node sample.mjs '<survey spec JSON>' <question id> <draws per answer> [fast|bigint|exact]
// prints {"<answer as JSON>": {"<report as JSON>": count, ...}, ...}
// fast: the default source (32-bit Number draws where the denominator fits); bigint: a source that
// offers only randomBelow (BigInt draws everywhere); exact: numbers decided by exact integer
// comparisons every time, never by the float estimate.
import { Survey, randomBelow } from "../deniable.js";

const [specJson, questionId, draws, mode = "fast"] = process.argv.slice(2);
const mechanism = Survey.fromSpec(JSON.parse(specJson)).questions[questionId].mechanism;
if (mode === "exact") mechanism._floatMargin = Infinity;
const source = mode === "bigint" ? { randomBelow } : undefined;
const counts = {};
for (const answer of mechanism.answers) {
  const tally = {};
  for (let i = 0; i < Number(draws); i++) {
    const key = JSON.stringify(mechanism.randomize(answer, source));
    tally[key] = (tally[key] ?? 0) + 1;
  }
  counts[JSON.stringify(answer)] = tally;
}
process.stdout.write(JSON.stringify(counts));
