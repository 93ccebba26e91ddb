// Randomized order: a section's questions, a survey's sections, a question's options, shuffled on the respondent's
// device and never sent. Twin of Python's deniable.client.order: the same specs accepted, the same errors, and the
// same order from the same random words (tests/vectors/order.json).

import { SpecError, show } from "./errors.js";
import { defaultSource } from "./randomness.js";

/** The question types whose options can be shuffled. */
export const SHUFFLED_OPTION_TYPES = ["choice", "multi_select"];

export function readFlag(value, where) {
  if (typeof value !== "boolean") throw new SpecError(`${where}: true or false, got ${show(value)}`);
  return value;
}

export function readOptionFlag(value, questionType, where) {
  const shuffled = readFlag(value, where);
  if (shuffled && !SHUFFLED_OPTION_TYPES.includes(questionType)) {
    const reason = { ordinal: "an ordinal scale's order is its meaning", yes_no: "yes and no keep their places" }[questionType]
      ?? "it has no options to shuffle";
    throw new SpecError(`${where}: only a choice or multi_select question's options are shuffled; ${reason}`);
  }
  return shuffled;
}

/** randomize_sections: true (every section) or a list of section ids, as the ids in the survey's order. */
export function readShuffledSections(value, sectionIds) {
  const where = "survey.randomize_sections";
  if (value === undefined || value === null || value === false) return [];
  if (sectionIds.length === 1 && sectionIds[0] === null) {
    throw new SpecError(`${where}: the survey has no sections to shuffle; put its questions in sections, or give a section randomize: true to shuffle its questions`);
  }
  let named;
  if (value === true) named = [...sectionIds];
  else if (Array.isArray(value) && value.every((s) => typeof s === "string")) {
    const unknown = value.filter((s) => !sectionIds.includes(s));
    if (unknown.length) throw new SpecError(`${where}: '${unknown[0]}' is not a section of this survey (${sectionIds.join(", ")})`);
    if (new Set(value).size !== value.length) throw new SpecError(`${where}: a section named twice`);
    named = sectionIds.filter((s) => value.includes(s));
  } else throw new SpecError(`${where}: true (every section) or a list of section ids, got ${show(value)}`);
  if (named.length < 2) throw new SpecError(`${where}: at least two sections to shuffle, got ${named.length}`);
  return named;
}

/** For each section in order, [section, the question ids asked before its items in every order] (Python:
 * order.asked_before). */
export function askedBefore(survey) {
  const shuffled = new Set(survey.shuffledSections);
  let lastShuffled = -1;
  survey.sections.forEach((section, i) => { if (shuffled.has(section.id)) lastShuffled = i; });
  const fixed = new Set();
  const pending = new Set();
  const found = [];
  survey.sections.forEach((section, position) => {
    found.push([section, new Set(fixed)]);
    for (const item of section.items) if (item.id in survey.questions) (shuffled.has(section.id) ? pending : fixed).add(item.id);
    if (position === lastShuffled) for (const id of pending) fixed.add(id);
  });
  return found;
}

function shuffle(values, source) {
  const shuffled = [...values];
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = source.below ? source.below(i + 1) : Number(source.randomBelow(i + 1));
    [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
  }
  return shuffled;
}

/** The order one respondent is asked in: {sections, items (per randomized section), options (per shuffled
 * question)}, drawn as Python's draw_order draws it. */
export function drawOrder(survey, source = defaultSource) {
  const ids = survey.sections.map((section) => section.id);
  const places = ids.flatMap((id, i) => (survey.shuffledSections.includes(id) ? [i] : []));
  shuffle(places.map((i) => ids[i]), source).forEach((id, k) => { ids[places[k]] = id; });
  const items = {};
  for (const section of survey.sections) if (section.randomize) items[section.id] = shuffle(section.items.map((item) => item.id), source);
  const options = {};
  for (const question of Object.values(survey.questions)) if (question.randomize) options[question.id] = shuffle(question.options, source);
  return { sections: ids, items, options };
}
