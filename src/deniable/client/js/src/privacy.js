// Privacy for people: posterior bounds and plain-words statements (Python: privacy.py and catalogue.py).
// Part of deniable.js; no dependencies. The statements are the page words' templates (client/words/<code>.json,
// as modules in ./words/): English by default, any shipped language with its table.
import ENGLISH from "./words/en.js";

/** The prior a privacy statement assumes unless told otherwise: an observer 2% sure beforehand (Python: DEFAULT_PRIOR). */
export const DEFAULT_PRIOR = 0.02;
/** Below this epsilon a randomized question is refused (e^epsilon < 1.01: its reports carry next to nothing). */
export const MIN_EPSILON = 0.01;
/** Above this epsilon (ln 49) a question is flagged: a 2% prior can pass 50% after one report. */
export const WEAK_EPSILON = Math.log(49);

/** The largest posterior an observer can reach from `prior` after one report: q e^eps / (q e^eps + 1 - q). */
export function posteriorBound(prior, epsilon) {
  if (!(prior >= 0 && prior <= 1)) throw new RangeError(`prior must be between 0 and 1, got ${prior}`);
  if (epsilon === Infinity) return prior > 0 ? 1 : 0;
  const scaled = prior * Math.exp(epsilon);
  return scaled / (scaled + 1 - prior);
}

/** A page-words template filled with `values` (`{{` and `}}` stand for braces, as in Python's str.format). */
const fill = (template, values) => template.replace(/\{\{|\}\}|\{(\w+)\}/g, (match, key) => (key === undefined ? match[0] : String(values[key])));
/** x to three significant digits, with the words' decimal mark (Python: catalogue._number). */
const number = (x, words) => String(Number(x.toPrecision(3))).replace(".", words.decimal_mark);
/** A share as a percentage with `decimals` places (Python: catalogue._percent). */
const percent = (share, decimals, words) => fill(words.percent, { value: (share * 100).toFixed(decimals).replace(".", words.decimal_mark) });
/** A share as a percentage to three significant digits (Python: catalogue._share). */
const share = (x, words) => fill(words.percent, { value: number(x * 100, words) });

function figures(epsilon, prior, words) {
  return { factor: number(Math.exp(epsilon), words), epsilon: number(epsilon, words), prior: percent(prior, 0, words),
    posterior: percent(posteriorBound(prior, epsilon), 1, words) };
}

/** Plain-language privacy note for one question; in another language with `words` (a table from "deniable/words/fr" and
 * the like): one template per language, the same figures (Python: catalogue.privacy_statement). */
export function privacyStatement(epsilon, prior = DEFAULT_PRIOR, words = ENGLISH) {
  if (epsilon === Infinity) return words.public_statement;
  return fill(words.private_statement, figures(epsilon, prior, words));
}

/** For a randomized answer whose epsilon is infinite (one-sided designs such as Safely Report's garbling), in English. */
export const ONE_SIDED_STATEMENT = ENGLISH.one_sided_statement;

/** Per respondent-side design: the words for how the respondent randomizes, and for the fact the guarantee assumes unknown. */
const BY_RESPONDENT = {
  crosswise: ["respondent_combined", "respondent_companion_fact"],
  triangular: ["respondent_combined", "respondent_companion_fact"],
  forced_response: ["respondent_instruction", "respondent_draw_fact"],
  cheating_detection: ["respondent_instruction", "respondent_draw_fact"],
  stochastic_lie_detector: ["respondent_instruction", "respondent_draw_fact"],
};

/** The privacy note of a design in which the respondent randomizes: the device never sees the true answer,
 * and the guarantee rests on one assumption, said in words (twin of Python's respondent statement). */
export function respondentStatement(epsilon, design, prior = DEFAULT_PRIOR, words = ENGLISH) {
  const [how, fact] = BY_RESPONDENT[design].map((key) => words[key]);
  if (epsilon === Infinity) return fill(words.respondent_one_sided_statement, { how, fact });
  return fill(words.respondent_statement, { how, fact, ...figures(epsilon, prior, words) });
}

/** What a split ballot means for the respondent, said after the question's own statement (Python:
 * catalogue.split_ballot_statement). `direct`: the share asked directly, a Fraction. */
export function splitBallotStatement(direct, words = ENGLISH) {
  return fill(words.split_ballot_statement, { share: share(Number(direct.n) / Number(direct.d), words) });
}

/** What a repeated survey's memo means for the respondent, after the question's statement (which gives one
 * report's epsilon); `epsilonAll`: over all waves (Python: catalogue.repeated_statement). */
export function repeatedStatement(epsilonAll, words = ENGLISH) {
  if (epsilonAll === Infinity) return words.repeated_one_sided_statement;
  return fill(words.repeated_statement, { factor_all: number(Math.exp(epsilonAll), words), epsilon_all: number(epsilonAll, words) });
}
