// JS randomization throughput per design (answers per second), single answers and whole surveys.
//   node benchmarks/randomize.mjs [seconds]
import { Survey } from "../src/deniable/client/js/deniable.js";

const seconds = Number(process.argv[2] ?? 1);
const cases = [
  ["forced_response (coin flip)", { type: "yes_no" }, "yes"],
  ["warner p=3/4", { type: "yes_no", privacy: { design: "warner", p: "3/4" } }, "yes"],
  ["unrelated_question", { type: "yes_no", privacy: { design: "unrelated_question", p: "2/3", innocuous_yes: "1/12" } }, "yes"],
  ["k_rr k=4 eps=ln3", { type: "choice", options: ["a", "b", "c", "d"], privacy: { design: "k_rr", epsilon: "ln 3" } }, "c"],
  ["ordinal k=5 eps=1", { type: "ordinal", options: ["1", "2", "3", "4", "5"], privacy: { design: "ordinal", epsilon: 1 } }, "3"],
  ["unary m=4 eps=2 symmetric", { type: "multi_select", options: ["a", "b", "c", "d"], privacy: { design: "unary", epsilon: 2 } }, ["a", "c"]],
  ["unary m=4 eps=2 optimized", { type: "multi_select", options: ["a", "b", "c", "d"], privacy: { design: "unary", epsilon: 2, variant: "optimized" } }, ["a", "c"]],
  ["laplace 0..40 step 5 eps=1", { type: "number", min: 0, max: 40, step: 5, privacy: { design: "laplace", epsilon: 1 } }, 15],
  ["laplace 0..100 step 1 eps=1", { type: "number", min: 0, max: 100, privacy: { design: "laplace", epsilon: 1 } }, 37],
];

function rate(fn) {
  fn();
  let count = 0;
  const start = performance.now();
  let elapsed = 0;
  while ((elapsed = performance.now() - start) < seconds * 1000) {
    for (let i = 0; i < 100; i++) fn();
    count += 100;
  }
  return count / (elapsed / 1000);
}

const fmt = (x) => Math.round(x).toLocaleString("en-US").padStart(12);
console.log(`${"design".padEnd(32)} ${"answers/s".padStart(12)}`);
for (const [name, question, answer] of cases) {
  const mechanism = Survey.fromSpec({ id: "b", title: "b", questions: [{ id: "q", text: "?", ...question }] }).questions.q.mechanism;
  console.log(`${name.padEnd(32)} ${fmt(rate(() => mechanism.randomize(answer)))}`);
}
const { execFileSync } = await import("node:child_process");
// The demo survey, in the canonical JSON the server would serve (the Python client reads the YAML).
const canonical = execFileSync(process.env.PYTHON ?? ".venv/bin/python",
  ["-c", "from deniable.client import Survey; print(Survey.from_file('examples/tax.yaml').canonical_json())"]).toString();
const survey = Survey.fromSpec(JSON.parse(canonical));
const answers = { dodged: "yes", region: "North", cash: "Cash in hand", fairness: "Agree", undeclared: ["Tips"], hours: 10 };
console.log(`${"whole demo survey (6 questions)".padEnd(32)} ${fmt(rate(() => survey.randomize(answers)))}  surveys/s`);
