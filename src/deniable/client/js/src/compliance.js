// Designs that measure whether respondents complied: cheating detection and the stochastic lie detector
// (Python: compliance.py). The device assigns a public group with a CSPRNG; the respondent draws with the
// group's natural randomizer and types the result; a report carries its group: {group: "a", report: "yes"}.
// Part of deniable.js; no dependencies.

import { SpecError, isMapping, show } from "./errors.js";
import { ONE, ZERO, frac, parseFraction } from "./exact.js";
import { requireId } from "./identifiers.js";
import { ChannelMechanism, YES_NO } from "./mechanisms.js";
import { defaultSource } from "./randomness.js";


/** A yes/no channel whose reports carry the respondent's public group. Groups are equally likely;
 * `latentClasses` are the analysis channel's columns ([label, column]). */
export class GroupedMechanism extends ChannelMechanism {
  constructor(design, params, groups, columns, latentClasses) {
    super(design, params, YES_NO, groups.flatMap((group) => YES_NO.map((report) => ({ group, report }))), columns);
    this.groups = [...groups];
    this.latentClasses = latentClasses;
    this.respondentRandomizes = true;
  }
  get reports() { return this._reports.map((r) => ({ ...r })); }
  validateReport(report) {
    if (!isMapping(report) || Object.keys(report).sort().join() !== "group,report") {
      throw new RangeError(`report ${show(report)} must be an object with a 'group' (${this.groups.join(", ")}) and the 'report' typed in it (yes or no)`);
    }
    const found = this._reports.find((r) => r.group === report.group && r.report === report.report);
    if (!found) {
      if (!this.groups.includes(report.group)) throw new RangeError(`group ${show(report.group)} is not one of this question's groups (${this.groups.join(", ")})`);
      throw new RangeError(`report ${show(report.report)} is not one of ${show(YES_NO)}`);
    }
    return found;
  }
  randomize(answer, source = defaultSource) { return { ...super.randomize(answer, source) }; }
  /** The group a new respondent is shown: uniform over the groups, from crypto.getRandomValues. */
  assignGroup(source = defaultSource) { return this.groups[Number(source.randomBelow(BigInt(this.groups.length)))]; }
  instruction(group) { return this.params.groups[group].randomizer; }
}

function groupProbability(spec, name, where) {
  if (!(name in spec)) return ZERO;
  const value = parseFraction(spec[name], `${where}.${name}`);
  if (value.cmp(ZERO) < 0 || value.cmp(ONE) >= 0) throw new SpecError(`${where}.${name}: must be at least 0 and below 1, got ${show(spec[name])}`);
  return value;
}

function readGroups(params, where, accepted) {
  const groups = params.groups;
  if (!isMapping(groups) || Object.keys(groups).length < 2) {
    throw new SpecError(`${where}.groups: at least two groups, each a mapping such as {a: {${accepted[0]}: 1/3, randomizer: "…"}, b: …}, got ${show(groups)}`);
  }
  if (Object.keys(groups).length > 26) throw new SpecError(`${where}.groups: at most 26 groups, got ${Object.keys(groups).length}`);
  for (const [name, group] of Object.entries(groups)) {
    requireId(name, `${where}.groups`);
    const at = `${where}.groups.${name}`;
    if (!isMapping(group)) throw new SpecError(`${at}: must be a mapping with ${accepted.join(" or ")} and randomizer, got ${show(group)}`);
    const unknown = Object.keys(group).filter((key) => ![...accepted, "randomizer"].includes(key)).sort();
    if (unknown.length) throw new SpecError(`${at}: unknown field '${unknown[0]}' (accepted: ${[...accepted, "randomizer"].join(", ")})`);
    if (!("randomizer" in group)) throw new SpecError(`${at}.randomizer: required, the instruction this group's respondents follow`);
  }
  return groups;
}

/** A text the respondent reads to randomize (a companion question, a randomizer's instruction): a string, or
 * a map of languages when the survey declares them (`text` checks those). */
export function respondentText(value, where, text = null) {
  if (text) return text(value, where);
  if (typeof value !== "string" || !value.trim()) throw new SpecError(`${where}: required, the text the respondent reads (a non-empty string), got ${show(value)}`);
  return value;
}

function columnOf(names, weight, yesGiven) {
  return names.flatMap((g) => [weight.mul(yesGiven(g)), weight.mul(ONE.sub(yesGiven(g)))]);
}

export function cheatingDetection(params, where, text = null) {
  const groups = readGroups(params, where, ["yes", "no"]);
  const names = Object.keys(groups);
  const weight = frac(1n, BigInt(names.length));
  const forced = {};
  const normalizedGroups = {};
  for (const [name, group] of Object.entries(groups)) {
    const at = `${where}.groups.${name}`;
    const yes = groupProbability(group, "yes", at);
    const no = groupProbability(group, "no", at);
    if (yes.add(no).cmp(ONE) >= 0) throw new SpecError(`${at}: yes + no must be below 1 (some respondents must answer truthfully), got ${yes} + ${no}`);
    forced[name] = [yes, no];
    normalizedGroups[name] = "no" in group ? { yes: `${yes}`, no: `${no}` } : { yes: `${yes}` };
    normalizedGroups[name].randomizer = respondentText(group.randomizer, `${at}.randomizer`, text);
  }
  const [yes1, no1] = forced[names[0]];
  if (names.slice(1).every((o) => ONE.sub(no1).mul(forced[o][0]).cmp(ONE.sub(forced[o][1]).mul(yes1)) === 0)) {
    throw new SpecError(`${where}.groups: every group forces 'yes' and 'no' in the same proportion, so honest answers and cheating ` +
      "cannot be told apart; give the groups different 'yes' shares (e.g. 1/3 and 2/3)");
  }
  const honestYes = columnOf(names, weight, (g) => ONE.sub(forced[g][1]));
  const honestNo = columnOf(names, weight, (g) => forced[g][0]);
  const cheater = columnOf(names, weight, () => ZERO);
  return new GroupedMechanism("cheating_detection", { design: "cheating_detection", groups: normalizedGroups }, names,
    [honestYes, honestNo], [["yes", honestYes], ["no", honestNo], ["cheater", cheater]]);
}

export function stochasticLieDetector(params, where, text = null) {
  const groups = readGroups(params, where, ["p"]);
  const names = Object.keys(groups);
  const weight = frac(1n, BigInt(names.length));
  const share = {};
  const normalizedGroups = {};
  for (const [name, group] of Object.entries(groups)) {
    const at = `${where}.groups.${name}`;
    if (!("p" in group)) throw new SpecError(`${at}.p: required, the chance the randomizer tells a non-carrier to answer no`);
    const p = parseFraction(group.p, `${at}.p`);
    if (p.cmp(ZERO) <= 0 || p.cmp(ONE) > 0) throw new SpecError(`${at}.p: must be above 0 and at most 1, got ${show(group.p)}`);
    share[name] = p;
    normalizedGroups[name] = { p: `${p}`, randomizer: respondentText(group.randomizer, `${at}.randomizer`, text) };
  }
  if (new Set(Object.values(share).map(String)).size === 1) {
    throw new SpecError(`${where}.groups: every group has the same p, so the carriers' share and their honesty cannot be told apart; ` +
      "give the groups different p (e.g. 2/12 and 10/12)");
  }
  const truthful = columnOf(names, weight, () => ONE);
  const lying = columnOf(names, weight, () => ZERO);
  const nonCarrier = columnOf(names, weight, (g) => ONE.sub(share[g]));
  return new GroupedMechanism("stochastic_lie_detector", { design: "stochastic_lie_detector", groups: normalizedGroups }, names,
    [truthful, nonCarrier], [["truthful carrier", truthful], ["lying carrier", lying], ["non-carrier", nonCarrier]]);
}
