// Privacy for people: posterior bounds and plain-words statements (Python: privacy.py).
// Part of deniable.js; no dependencies.

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

const percent = (x, digits) => `${(x * 100).toFixed(digits)}%`;

/** Plain-language privacy note for one question. */
export function privacyStatement(epsilon, prior = 0.02) {
  if (epsilon === Infinity) {
    return "This answer is sent exactly as you give it: it is not randomized, and anyone who sees the data sees your answer.";
  }
  return (
    `Your answer is randomized on your device before it is sent. Whatever anyone believed about you beforehand, ` +
    `your report can change the odds by a factor of at most ${Number(Math.exp(epsilon).toPrecision(3))} ` +
    `(ε = ${Number(epsilon.toPrecision(3))}): someone ${percent(prior, 0)} sure would become at most ` +
    `${percent(posteriorBound(prior, epsilon), 1)} sure.`
  );
}

/** For a randomized answer whose epsilon is infinite (one-sided designs such as Safely Report's garbling). */
export const ONE_SIDED_STATEMENT = "Your answer is randomized on your device before it is sent, but only one way: one of the " +
  "reports is only ever sent for one particular true answer, and then reveals it.";

/** Per respondent-side design: how the respondent randomizes, and the fact the guarantee assumes unknown. */
const BY_RESPONDENT = {
  crosswise: ["You give one combined answer to this question and a second one", "your answer to the second question"],
  triangular: ["You give one combined answer to this question and a second one", "your answer to the second question"],
  forced_response: ["You follow the instruction yourself", "the outcome of the instruction's draw (such as a birthday)"],
  cheating_detection: ["You follow the instruction yourself", "the outcome of the instruction's draw (such as a birthday)"],
  stochastic_lie_detector: ["You follow the instruction yourself", "the outcome of the instruction's draw (such as a birthday)"],
};

/** The privacy note of a design in which the respondent randomizes: the device never sees the true answer,
 * and the guarantee rests on one assumption, said in words (twin of Python's respondent_statement). */
export function respondentStatement(epsilon, design, prior = 0.02) {
  const [how, fact] = BY_RESPONDENT[design];
  const opening = `${how}, so this device never sees your true answer and sends only what you choose. `;
  const assumption = ` This holds as long as the researcher cannot know ${fact}, and it has nothing to do with your answer to this question.`;
  if (epsilon === Infinity) {
    return opening + "One choice is only ever made by someone whose true answer is no, so choosing it reveals that answer; " +
      "the other hides your answer among everyone who made it." + assumption;
  }
  return opening + `Whatever anyone believed about you beforehand, what you send can change the odds by a factor of at most ` +
    `${Number(Math.exp(epsilon).toPrecision(3))} (ε = ${Number(epsilon.toPrecision(3))}): someone ${percent(prior, 0)} sure ` +
    `would become at most ${percent(posteriorBound(prior, epsilon), 1)} sure.` + assumption;
}

/** What a split ballot means for the respondent, said after the question's own statement (Python:
 * catalogue.split_ballot_statement). `direct`: the share asked directly, a Fraction. */
export function splitBallotStatement(direct) {
  const share = `${Number((Number(direct.n) / Number(direct.d) * 100).toPrecision(3))}%`;
  return `${share} of respondents, chosen at random by the device before the question is shown, are asked it directly ` +
    "instead: they are told so, and their answer is sent exactly as they give it.";
}

/** What a repeated survey's memo means for the respondent, after the question's statement (which gives one
 * report's epsilon); `epsilonAll`: over all waves (Python: catalogue.repeated_statement). */
export function repeatedStatement(epsilonAll) {
  if (epsilonAll === Infinity) {
    return "This survey is asked again in later waves. Your device keeps one random secret (never an answer) so that the " +
      "same answer is randomized the same way underneath in every wave, then randomized afresh on top for each report; the " +
      "reports of all waves together protect what the statement above says for one design report, no less and no more. " +
      "If your answer changes, the new answer gets a report of its own.";
  }
  const factor = Number(Math.exp(epsilonAll).toPrecision(3));
  return "This survey is asked again in later waves. Your device keeps one random secret (never an answer) so that the " +
    "same answer is randomized the same way underneath in every wave, and then randomized afresh on top for each report: " +
    `all your reports together, in every wave, change the odds by a factor of at most ${factor} ` +
    `(ε = ${Number(epsilonAll.toPrecision(3))}) as long as your answer stays the same; if it changes, the new answer gets ` +
    `a randomized report of its own, and the factor can be up to ${factor} again.`;
}
