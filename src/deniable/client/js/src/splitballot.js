// Split ballot: a share of respondents answers a private yes/no question directly, the rest through its
// design (Python: splitballot.py). The device draws the arm with crypto.getRandomValues before the question
// is shown; a report carries it: {arm: "direct", report: "yes"}, or {arm: "randomized", ...} with the
// design's own fields. The mechanism, channel and epsilon are the randomized arm's.
// Part of deniable.js; no dependencies.

import { SpecError, isMapping, show } from "./errors.js";
import { ONE, ZERO, parseFraction } from "./exact.js";
import { defaultSource } from "./randomness.js";

export const ARMS = ["direct", "randomized"];

export class SplitBallot {
  constructor(spec, where, questionType, mechanism) {
    if (questionType !== "yes_no") {
      throw new SpecError(`${where}: only yes/no questions have a split ballot (the direct arm's share is compared with the randomized arm's), got a ${questionType} question`);
    }
    if (mechanism.design === "none") {
      throw new SpecError(`${where}: a public question is asked directly already; a split ballot compares a randomized design with asking directly`);
    }
    if (!isMapping(spec) || Object.keys(spec).join() !== "direct") {
      throw new SpecError(`${where}: a mapping with the one key 'direct' (the share of respondents asked directly, e.g. {direct: 1/4}), got ${show(spec)}`);
    }
    this.direct = parseFraction(spec.direct, `${where}.direct`);
    if (this.direct.cmp(ZERO) <= 0 || this.direct.cmp(ONE) >= 0) {
      throw new SpecError(`${where}.direct: must be above 0 and below 1 (both arms need respondents), got ${show(spec.direct)}`);
    }
    this.mechanism = mechanism;
    this.answers = mechanism.answers;
  }
  toDict() { return { direct: String(this.direct) }; }
  /** The arm a new respondent is shown: "direct" with probability `direct` (the same integer draw as Python). */
  assignArm(source = defaultSource) {
    return source.randomBelow(this.direct.d) < this.direct.n ? "direct" : "randomized";
  }
  static wrap(arm, report) { return isMapping(report) ? { arm, ...report } : { arm, report }; }
  static unwrap(report) {
    const { arm, ...rest } = report;
    return [arm, Object.keys(rest).join() === "report" ? rest.report : rest];
  }
  get reports() {
    return [...this.answers.map((answer) => SplitBallot.wrap("direct", answer)),
      ...this.mechanism.reports.map((report) => SplitBallot.wrap("randomized", report))];
  }
  validateReport(report) {
    if (!isMapping(report) || !("arm" in report)) {
      throw new RangeError(`report ${show(report)} must be an object with the respondent's 'arm' (direct or randomized) beside the report, e.g. {"arm": "direct", "report": "yes"}`);
    }
    const { arm, ...rest } = report;
    if (!ARMS.includes(arm)) throw new RangeError(`arm ${show(arm)} is not one of ${ARMS.join(", ")}`);
    const onlyReport = Object.keys(rest).join() === "report";
    if (arm === "direct") {
      if (!onlyReport) throw new RangeError("a direct-arm report holds only 'arm' and 'report' (the answer as given)");
      if (!this.answers.includes(rest.report)) throw new RangeError(`direct answer ${show(rest.report)} is not one of ${this.answers.join(", ")}`);
      return { arm, report: rest.report };
    }
    return SplitBallot.wrap("randomized", this.mechanism.validateReport(onlyReport ? rest.report : rest));
  }
}
