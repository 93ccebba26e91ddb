// Surveys: questions, sections, languages, validation and randomization (Python: survey.py).
// Part of deniable.js; no dependencies.

import { AnswerError, SpecError, isMapping, show } from "./errors.js";
import { EpsilonRequest, MAX_GRID_POINTS, MAX_MULTI_SELECT_OPTIONS, ONE, ZERO, frac, jsonNumber, parseFraction } from "./exact.js";
import { defaultSource } from "./randomness.js";
import { DEFAULT_PRIVACY, buildMechanism } from "./designs.js";
import { requireId } from "./identifiers.js";
import { DEFAULT_PRIOR, ONE_SIDED_STATEMENT, privacyStatement, repeatedStatement, respondentStatement, splitBallotStatement } from "./privacy.js";
import { Repeated, memoized } from "./panels.js";
import { Memo, MemoError } from "./memo.js";
import { SplitBallot } from "./splitballot.js";
import { Schedule } from "./schedule.js";
import { Completion } from "./completion.js";
import { askedBefore, readFlag, readOptionFlag, readShuffledSections } from "./order.js";
import { ExpressionError, ORDERINGS, evaluateExpression, expressionLeaves, parseExpression, reprText } from "./skiplogic.js";

export const QUESTION_TYPES = ["yes_no", "choice", "ordinal", "multi_select", "number"];
const ITEM_TYPES = [...QUESTION_TYPES, "note"];
const LAYOUTS = ["auto", "paged", "single"];
export const MAX_ITEMS = 1000;
export const MAX_OPTIONS = 1000;
export const MAX_SECTIONS = 200;
const MAX_TEXT_LENGTH = 5000;
const LANGUAGE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/;
const SURVEY_FIELDS = ["id", "title", "description", "version", "languages", "default_language", "layout", "questions", "sections", "max_epsilon", "repeated", "page_words", "sample", "opens", "closes", "completion", "consent", "quotas", "randomize_sections", "invitations", "quality"];
const SECTION_FIELDS = ["id", "title", "intro", "relevant", "questions", "randomize"];
const QUESTION_FIELDS = ["id", "type", "text", "hint", "options", "min", "max", "step", "privacy", "required", "relevant", "constraint_message", "control", "split_ballot", "randomize", "check", "bins"];
const NOTE_FIELDS = ["id", "type", "text", "hint", "relevant"];
const RIGHT_TO_LEFT = new Set(["ar", "arc", "dv", "fa", "ha", "he", "khw", "ks", "ku", "ps", "sd", "ur", "yi"]);
const SUGGESTIONS = {
  choice: "{design: k_rr, epsilon: ln 3}",
  ordinal: "{design: ordinal, epsilon: 1}",
  multi_select: "{design: unary, epsilon: 2}",
  number: "{design: laplace, epsilon: 1}",
};

/** A source of randomness (tests pass one where the options object would go; the old second argument). */
const isSource = (value) => isMapping(value) && typeof value.randomBelow === "function";

export const isRightToLeft = (language) => Boolean(language) && RIGHT_TO_LEFT.has(language.split("-")[0].toLowerCase());

function requireText(value, where) {
  if (typeof value !== "string" || !value.trim()) throw new SpecError(`${where}: must be a non-empty string, got ${show(value)}`);
  if (value.length > MAX_TEXT_LENGTH) throw new SpecError(`${where}: longer than ${MAX_TEXT_LENGTH} characters`);
  return value;
}

function readExpression(value, where) {
  if (value === undefined || value === null) return null;
  try {
    return parseExpression(value);
  } catch (error) {
    if (error instanceof ExpressionError) throw new SpecError(`${where}: ${error.message}`);
    throw error;
  }
}

/** A localized text in `language`, falling back to the default language. */
export function localize(text, language, defaultLanguage) {
  if (text === null || text === undefined || typeof text === "string") return text ?? null;
  return (language && text[language]) || text[defaultLanguage];
}

class Languages {
  constructor(languages, defaultLanguage) {
    this.declared = languages !== undefined && languages !== null;
    this.missing = [];
    if (!this.declared) {
      if (defaultLanguage !== undefined && defaultLanguage !== null) throw new SpecError("survey.default_language: needs a list of languages beside it");
      this.codes = [];
      this.default = null;
      return;
    }
    if (!Array.isArray(languages) || !languages.length) throw new SpecError(`survey.languages: must be a non-empty list of language codes, got ${show(languages)}`);
    languages.forEach((code, i) => {
      if (typeof code !== "string" || !LANGUAGE.test(code)) throw new SpecError(`survey.languages[${i}]: must be a language code such as 'en', 'es' or 'pt-BR', got ${show(code)}`);
    });
    if (new Set(languages).size !== languages.length) throw new SpecError("survey.languages: a language appears more than once");
    this.codes = [...languages];
    this.default = defaultLanguage ?? languages[0];
    if (!this.codes.includes(this.default)) throw new SpecError(`survey.default_language: ${show(this.default)} is not one of the languages (${this.codes.join(", ")})`);
  }
  text(value, where, required = true) {
    if ((value === undefined || value === null) && !required) return null;
    if (!isMapping(value)) return requireText(value, where);
    if (!this.declared) throw new SpecError(`${where}: a text in several languages needs 'languages' at the top of the survey`);
    const unknown = Object.keys(value).filter((code) => !this.codes.includes(code)).sort();
    if (unknown.length) throw new SpecError(`${where}: language '${unknown[0]}' is not one of the survey's languages (${this.codes.join(", ")})`);
    if (!Object.hasOwn(value, this.default)) throw new SpecError(`${where}: needs the default language '${this.default}' (the text shown where a translation is missing)`);
    const clean = {};
    for (const code of this.codes) {
      if (Object.hasOwn(value, code)) clean[code] = requireText(value[code], `${where}.${code}`);
      else this.missing.push([where, code]);
    }
    return clean;
  }
}

class Item {
  constructor(spec, position, languages, allowed) {
    this.id = requireId(spec.id, `questions[${position}].id`);
    this.where = `question '${this.id}'`;
    const unknown = Object.keys(spec).filter((key) => !allowed.includes(key)).sort();
    if (unknown.length) throw new SpecError(`${this.where}: unknown field '${unknown[0]}' (allowed: ${[...allowed].sort().join(", ")})`);
    this.languages = languages;
    this.texts = languages.text(spec.text, `${this.where}.text`);
    this.hints = languages.text(spec.hint, `${this.where}.hint`, false);
    this.relevant = readExpression(spec.relevant, `${this.where}.relevant`);
    this.section = null;
  }
  /** The text in the default language (`textIn` for another). */
  get text() { return localize(this.texts, null, this.languages.default); }
  textIn(language) { return localize(this.texts, language, this.languages.default); }
  hintIn(language) { return localize(this.hints, language, this.languages.default); }
}

/** Text shown between questions; never answered, never reported. */
export class Note extends Item {
  constructor(spec, position, languages) {
    super(spec, position, languages, NOTE_FIELDS);
    this.type = "note";
  }
  get isPrivate() { return false; }
}

export class Question extends Item {
  constructor(spec, position, languages = new Languages(null, null)) {
    if (!isMapping(spec)) throw new SpecError(`questions[${position}]: must be a mapping, got ${show(spec)}`);
    super(spec, position, languages, QUESTION_FIELDS);
    const where = this.where;
    this.type = spec.type;
    if (!QUESTION_TYPES.includes(this.type)) throw new SpecError(`${where}.type: must be one of ${ITEM_TYPES.join(", ")}, got ${show(this.type)}`);
    let required = spec.required ?? false;
    if (typeof required === "string") {
      try {
        required = parseExpression(required);
      } catch (error) {
        if (!(error instanceof ExpressionError)) throw error;
        throw new SpecError(`${where}.required: must be true, false or a skip-logic expression; ${show(spec.required)} is none of them (${error.message})`);
      }
    } else if (typeof required !== "boolean") {
      throw new SpecError(`${where}.required: must be true, false or a skip-logic expression, got ${show(required)}`);
    }
    this.required = required;
    this.optionLabels = {};
    this.options = this._readOptions(spec, where);
    this.randomize = readOptionFlag(spec.randomize ?? false, this.type, `${where}.randomize`);
    this.grid = this._readGrid(spec, where);
    this.constraintMessages = languages.text(spec.constraint_message, `${where}.constraint_message`, false);
    if (this.constraintMessages !== null && this.type !== "number") throw new SpecError(`${where}.constraint_message: only number questions have a range to explain`);
    // A wide number's bins shape its publication, not its page: the server checks them; the page only refuses them elsewhere.
    if (spec.bins != null && this.type !== "number") throw new SpecError(`${where}.bins: only number questions are published over bins`);
    const privacy = spec.privacy ?? DEFAULT_PRIVACY[this.type];
    if (privacy === undefined) {
      throw new SpecError(`${where}.privacy: required for ${this.type} questions (a design such as ${SUGGESTIONS[this.type]}, or 'none' for a public question)`);
    }
    this.mechanism = buildMechanism(this.type, privacy, `${where}.privacy`, this.options, this.grid,
      (value, at) => languages.text(value, at));
    this.control = this._readControl(spec.control, `${where}.control`);
    const split = spec.split_ballot;
    this.splitBallot = split === undefined || split === null ? null : new SplitBallot(split, `${where}.split_ballot`, this.type, this.mechanism);
  }
  /** What a report of this question may be: the mechanism's reports, or with a split ballot both arms'. */
  get reportSpace() { return this.splitBallot ?? this.mechanism; }
  validateReport(report) { return this.reportSpace.validateReport(report); }
  /** control: {share: 0}: an item whose true "yes" share is known, so the analysis can check the design recovered it. */
  _readControl(control, where) {
    if (control === undefined || control === null) return null;
    if (this.type !== "yes_no") throw new SpecError(`${where}: only yes/no questions can be known-share controls`);
    if (!isMapping(control) || Object.keys(control).join() !== "share") {
      throw new SpecError(`${where}: a mapping with the one key 'share' (the known share of 'yes', e.g. 0), got ${show(control)}`);
    }
    const share = parseFraction(control.share, `${where}.share`);
    if (share.cmp(ZERO) < 0 || share.cmp(frac(1n)) > 0) throw new SpecError(`${where}.share: must be between 0 and 1, got ${show(control.share)}`);
    return share;
  }
  /** What the question accepts, in words (the Python twin says the same). */
  describeAnswers() {
    if (this.type === "number") {
      const [low, high, step] = this.grid.map(jsonNumber);
      return `a number from ${low} to ${high} in steps of ${step}`;
    }
    if (this.type === "multi_select") return `a list of some of ${this.options.map(show).join(", ")}`;
    if (this.mechanism.respondentRandomizes) {
      return `the respondent's own randomized report, one of ${this.mechanism.reports.map(show).join(", ")}`;
    }
    return `one of ${this.mechanism.answers.map(show).join(", ")}`;
  }
  _readOptions(spec, where) {
    if (this.type === "yes_no" && "options" in spec) {
      // Its own labels for yes and no (an XLSForm's list); without them the page says the catalogue's Yes/No.
      const options = spec.options;
      if (!Array.isArray(options) || options.length !== 2 || !options.every(isMapping)) {
        throw new SpecError(`${where}.options: a yes/no question takes only labels for its answers, as [{value: yes, label: …}, {value: no, label: …}], got ${show(options)}`);
      }
      options.forEach((option, i) => {
        const unknown = Object.keys(option).filter((key) => key !== "value" && key !== "label").sort();
        if (unknown.length) throw new SpecError(`${where}.options[${i}]: unknown field '${unknown[0]}' (allowed: label, value)`);
        const wanted = ["yes", "no"][i];
        if (option.value !== wanted) throw new SpecError(`${where}.options[${i}].value: must be '${wanted}' (yes first), got ${show(option.value)}`);
        this.optionLabels[wanted] = this.languages.text(option.label, `${where}.options[${i}].label`);
      });
      return null;
    }
    if (!["choice", "ordinal", "multi_select"].includes(this.type)) {
      if ("options" in spec) throw new SpecError(`${where}.options: ${this.type} questions take no options`);
      return null;
    }
    const options = spec.options;
    if (!Array.isArray(options) || options.length < 2) {
      throw new SpecError(`${where}.options: ${this.type} questions need a list of at least two options, got ${show(options)}`);
    }
    if (options.length > MAX_OPTIONS) throw new SpecError(`${where}.options: at most ${MAX_OPTIONS} options, got ${options.length}`);
    const values = options.map((option, i) => {
      if (!isMapping(option)) return requireText(option, `${where}.options[${i}]`);
      const unknown = Object.keys(option).filter((key) => key !== "value" && key !== "label").sort();
      if (unknown.length) throw new SpecError(`${where}.options[${i}]: unknown field '${unknown[0]}' (allowed: label, value)`);
      const value = requireText(option.value, `${where}.options[${i}].value`);
      this.optionLabels[value] = this.languages.text(option.label, `${where}.options[${i}].label`);
      return value;
    });
    const seen = new Set();
    const duplicate = values.find((value) => seen.has(value) || !seen.add(value));
    if (duplicate !== undefined) throw new SpecError(`${where}.options: '${duplicate}' appears more than once`);
    if (this.type === "multi_select" && values.length > MAX_MULTI_SELECT_OPTIONS) {
      throw new SpecError(`${where}.options: at most ${MAX_MULTI_SELECT_OPTIONS} options for multi_select`);
    }
    return values;
  }
  _readGrid(spec, where) {
    const fields = ["min", "max", "step"].filter((f) => f in spec);
    if (this.type !== "number") {
      if (fields.length) throw new SpecError(`${where}.${fields[0]}: only number questions take min, max and step`);
      return null;
    }
    const values = {};
    for (const field of ["min", "max", "step"]) {
      const raw = spec[field] ?? (field === "step" ? 1 : undefined);
      if (raw === undefined || raw === null) throw new SpecError(`${where}.${field}: required for number questions`);
      if (typeof raw !== "number") throw new SpecError(`${where}.${field}: must be a number, got ${show(raw)}`);
      values[field] = parseFraction(raw, `${where}.${field}`);
    }
    const { min, max, step } = values;
    if (min.cmp(max) >= 0) throw new SpecError(`${where}.min: must be less than max (${spec.min} ≥ ${spec.max})`);
    if (step.cmp(ZERO) <= 0) throw new SpecError(`${where}.step: must be greater than 0, got ${spec.step}`);
    const points = max.sub(min).div(step);
    if (points.d !== 1n) throw new SpecError(`${where}.step: (max − min) must be a whole number of steps, got ${points}`);
    if (points.n + 1n > BigInt(MAX_GRID_POINTS)) {
      throw new SpecError(`${where}.step: at most ${MAX_GRID_POINTS} grid points between min and max, got ${points.n + 1n}; choose a coarser step`);
    }
    return [min, max, step];
  }
  /** Randomized on the device (any design but `none`), even one whose epsilon is infinite. */
  get isPrivate() { return this.mechanism.design !== "none"; }
  /** Epsilon of one report: in a repeated survey, of one wave's (the composite channel's). */
  get epsilon() { return this.mechanism.epsilon; }
  /** The design as the spec gives it: in a repeated survey, the permanent layer under the instantaneous one. */
  get permanent() { return this.mechanism.permanent ?? this.mechanism; }
  /** Epsilon of every report of every wave together for an unchanged answer (the permanent layer's). */
  get epsilonAllWaves() { return this.permanent.epsilon; }
  /** Turn this private question into a panel's: the composite channel becomes its mechanism. */
  makeRepeated(repeated) {
    this.mechanism = memoized(this.mechanism, repeated.layer(this.mechanism));
    if (this.splitBallot) this.splitBallot.mechanism = this.mechanism;
  }
  /** An option's label in `language` (its value when it has no label of its own). */
  optionLabel(value, language) { return localize(this.optionLabels[value] ?? value, language, this.languages.default); }
  constraintMessageIn(language) { return localize(this.constraintMessages, language, this.languages.default); }
  /** What this question's report can reveal, in plain words: English, or the language of `words` (a table from
   * "deniable/words/fr" and the like; Python: Question.privacy_statement(words=…)). */
  privacyStatement(prior = DEFAULT_PRIOR, words = undefined) {
    let statement;
    if (this.mechanism.respondentRandomizes) statement = respondentStatement(this.epsilon, this.mechanism.design, prior, words);
    else if (this.isPrivate && this.epsilon === Infinity) statement = words ? words.one_sided_statement : ONE_SIDED_STATEMENT;
    else statement = privacyStatement(this.epsilon, prior, words);
    if (this.splitBallot) statement += ` ${splitBallotStatement(this.splitBallot.direct, words)}`;
    if (this.permanent !== this.mechanism) statement += ` ${repeatedStatement(this.epsilonAllWaves, words)}`;
    return statement;
  }
}

function readItem(spec, position, languages) {
  if (!isMapping(spec)) throw new SpecError(`questions[${position}]: must be a mapping, got ${show(spec)}`);
  return spec.type === "note" ? new Note(spec, position, languages) : new Question(spec, position, languages);
}

/** A titled group of questions (one screen on a phone). */
export class Section {
  constructor(spec, position, languages, firstPosition) {
    if (!isMapping(spec)) throw new SpecError(`sections[${position}]: must be a mapping, got ${show(spec)}`);
    this.id = requireId(spec.id, `sections[${position}].id`);
    const where = `section '${this.id}'`;
    const unknown = Object.keys(spec).filter((key) => !SECTION_FIELDS.includes(key)).sort();
    if (unknown.length) throw new SpecError(`${where}: unknown field '${unknown[0]}' (allowed: ${[...SECTION_FIELDS].sort().join(", ")})`);
    this.languages = languages;
    if (spec.title == null) throw new SpecError(`${where}.title: required: the section's heading, one text or one per language`);
    this.titles = languages.text(spec.title, `${where}.title`);
    this.intros = languages.text(spec.intro, `${where}.intro`, false);
    this.relevant = readExpression(spec.relevant, `${where}.relevant`);
    this.randomize = readFlag(spec.randomize ?? false, `${where}.randomize`); // its items shuffled
    if (!Array.isArray(spec.questions) || !spec.questions.length) throw new SpecError(`${where}.questions: must be a non-empty list of questions`);
    this.items = spec.questions.map((item, i) => readItem(item, firstPosition + i, languages));
    for (const item of this.items) item.section = this;
  }
  titleIn(language) { return localize(this.titles, language, this.languages.default); }
  introIn(language) { return localize(this.intros, language, this.languages.default); }
}

/** The error of a skip-logic rule that reads a private question. */
export function leakMessage(where, itemId, privateId) {
  return (
    `${where}: refers to '${privateId}', a private (randomized) question. Whether '${itemId}' ${where.endsWith(".required") ? "must be answered" : "is shown"}, ` +
    `and so whether a report for it reaches the server, would reveal the true answer to '${privateId}'. ` +
    `Ask '${itemId}' of everyone instead, with an option such as 'does not apply' among its randomized answers.`
  );
}

export class Survey {
  constructor(spec) {
    if (!isMapping(spec)) throw new SpecError(`survey: must be a mapping, got ${show(spec)}`);
    const unknown = Object.keys(spec).filter((key) => !SURVEY_FIELDS.includes(key)).sort();
    if (unknown.length) throw new SpecError(`survey: unknown field '${unknown[0]}' (allowed: ${[...SURVEY_FIELDS].sort().join(", ")})`);
    this.id = requireId(spec.id, "survey.id");
    this.languages = new Languages(spec.languages, spec.default_language);
    this.titles = this.languages.text(spec.title, "survey.title");
    this.descriptions = this.languages.text(spec.description, "survey.description", false);
    this.consents = this.languages.text(spec.consent, "survey.consent", false);
    this.version = spec.version == null ? null : requireText(spec.version, "survey.version");
    this.layout = spec.layout ?? "auto";
    if (!LAYOUTS.includes(this.layout)) throw new SpecError(`survey.layout: must be one of ${LAYOUTS.join(", ")}, got ${show(this.layout)}`);
    this.sections = this._readSections(spec);
    this.items = this.sections.flatMap((section) => section.items);
    if (this.items.length > MAX_ITEMS) throw new SpecError(`survey: at most ${MAX_ITEMS} questions and notes, got ${this.items.length}`);
    this.questions = {};
    const seen = new Set();
    this.items.forEach((item, position) => {
      if (seen.has(item.id)) throw new SpecError(`question '${item.id}'.id: duplicate id (questions[${position}])`);
      seen.add(item.id);
      if (item instanceof Question) this.questions[item.id] = item;
    });
    if (!Object.keys(this.questions).length) throw new SpecError("survey.questions: must hold at least one question (notes alone collect nothing)");
    this.shuffledSections = readShuffledSections(spec.randomize_sections, this.sections.map((s) => s.id));
    this._checkSkipLogic();
    this.repeated = Repeated.parse(spec.repeated);
    if (this.repeated !== null) for (const question of this.privateQuestions) question.makeRepeated(this.repeated);
    this.maxEpsilon = this._readBudget(spec.max_epsilon);
    if (spec.page_words != null && !isMapping(spec.page_words)) throw new SpecError(`survey.page_words: a mapping of language to {word: text}, got ${show(spec.page_words)}`);
    /** Page words the survey completes or overrides per language (checked in full by the Python twin, which fields it). */
    this.pageWords = spec.page_words ?? {};
    // The sample design the analysis uses (public questions only); nothing on the device depends on it.
    if (spec.sample != null && !isMapping(spec.sample)) throw new SpecError(`survey.sample: a mapping of weights, strata, clusters, fpc to public question ids, got ${show(spec.sample)}`);
    this.sample = spec.sample ?? {};
    this.schedule = Schedule.read(spec.opens, spec.closes);
    this.completion = Completion.read(spec.completion);
    /** Attention and speed checks (checked in full by the Python twin): whether the page sends its section times. */
    this.quality = isMapping(spec.quality) ? spec.quality : null;
  }
  _readSections(spec) {
    if ("sections" in spec) {
      if ("questions" in spec) throw new SpecError("survey: give either 'questions' or 'sections', not both");
      if (!Array.isArray(spec.sections) || !spec.sections.length) throw new SpecError("survey.sections: must be a non-empty list of sections");
      if (spec.sections.length > MAX_SECTIONS) throw new SpecError(`survey.sections: at most ${MAX_SECTIONS} sections, got ${spec.sections.length}`);
      let position = 0;
      const sections = spec.sections.map((sectionSpec, i) => {
        const section = new Section(sectionSpec, i, this.languages, position);
        position += section.items.length;
        return section;
      });
      const ids = sections.map((s) => s.id);
      const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
      if (duplicate !== undefined) throw new SpecError(`section '${duplicate}'.id: duplicate id`);
      return sections;
    }
    if (!Array.isArray(spec.questions) || spec.questions.length === 0) throw new SpecError("survey.questions: must be a non-empty list of questions");
    if (spec.questions.length > MAX_ITEMS) throw new SpecError(`survey: at most ${MAX_ITEMS} questions and notes, got ${spec.questions.length}`);
    const implicit = Object.create(Section.prototype);
    Object.assign(implicit, { id: null, titles: null, intros: null, relevant: null, randomize: false, languages: this.languages });
    implicit.items = spec.questions.map((item, i) => readItem(item, i, this.languages));
    for (const item of implicit.items) item.section = implicit;
    return [implicit];
  }
  /** max_epsilon: the most a respondent may spend over the private questions; a spec over it is refused. */
  _readBudget(raw) {
    if (raw === undefined || raw === null) return null;
    const budget = EpsilonRequest.parse(raw, "survey.max_epsilon", null);
    if (!budget.allows(() => this.expEpsilon, this.epsilon)) {
      const costly = [...this.privateQuestions].sort((a, b) => b.epsilonAllWaves - a.epsilonAllWaves).slice(0, 3);
      const listed = costly.map((q) => `${q.id} ${Number(q.epsilonAllWaves.toPrecision(4))}`).join(", ");
      throw new SpecError(`survey.max_epsilon: the private questions spend ε = ${Number(this.epsilon.toPrecision(4))} per respondent, ` +
        `over the budget of ${Number(budget.toNumber().toPrecision(4))} (the largest: ${listed}); lower their ε, drop a question, or raise the budget`);
    }
    return budget;
  }
  /** The exact e^epsilon of the whole survey (the product of the private questions', over all waves of a
   * repeated one), null when infinite. */
  get expEpsilon() {
    let total = ONE;
    for (const question of this.privateQuestions) {
      if (question.permanent.expEpsilon === null) return null;
      total = total.mul(question.permanent.expEpsilon);
    }
    return total;
  }
  /** Whether some sections, questions or options are shown in an order drawn on the device (order.js). */
  get hasRandomOrder() {
    return this.shuffledSections.length > 0 || this.sections.some((s) => s.randomize) || Object.values(this.questions).some((q) => q.randomize);
  }
  _checkSkipLogic() {
    for (const [section, before] of askedBefore(this)) {
      const earlier = Object.fromEntries([...before].map((id) => [id, this.questions[id]]));
      if (section.relevant) this._checkExpression(section.relevant, `section '${section.id}'.relevant`, section.id, earlier);
      for (const item of section.items) {
        if (item.relevant) this._checkExpression(item.relevant, `${item.where}.relevant`, item.id, earlier);
        if (item instanceof Question) {
          if (typeof item.required !== "boolean") this._checkExpression(item.required, `${item.where}.required`, item.id, earlier);
          if (!section.randomize) earlier[item.id] = item;
        }
      }
    }
  }
  _checkExpression(tree, where, itemId, earlier) {
    for (const leaf of expressionLeaves(tree)) {
      const ref = leaf.question;
      const question = earlier[ref];
      if (question === undefined) {
        if (this.items.some((item) => item.id === ref)) throw new SpecError(`${where}: '${ref}' is not a question asked before this one (skip logic reads answers already given${this.hasRandomOrder ? "; in a random order, only what is asked before it in every order" : ""})`);
        throw new SpecError(`${where}: no question '${ref}' in this survey`);
      }
      if (question.isPrivate) throw new SpecError(leakMessage(where, itemId, ref));
      const { op, value } = leaf;
      if (question.type === "number") {
        if (op === "selected" || !("number" in value)) throw new SpecError(`${where}: '${ref}' is a number question; compare it with a number, as in ${ref} >= 18`);
        continue;
      }
      const allowed = question.type === "yes_no" ? ["yes", "no"] : question.options;
      if (question.type === "multi_select" && op !== "selected") throw new SpecError(`${where}: '${ref}' allows several answers; use selected(${ref}, 'option')`);
      if (ORDERINGS.includes(op) || !("text" in value)) throw new SpecError(`${where}: '${ref}' has named answers; use ${ref} = 'option' or selected(${ref}, 'option')`);
      if (!allowed.includes(value.text)) throw new SpecError(`${where}: ${reprText(value.text)} is not an answer of '${ref}' (answers: ${allowed.join(", ")})`);
    }
  }
  /** Build from a parsed spec object (the JSON the server serves, or your own). */
  static fromSpec(spec) { return new Survey(spec); }
  get title() { return localize(this.titles, null, this.languages.default); }
  get description() { return localize(this.descriptions, null, this.languages.default); }
  titleIn(language) { return localize(this.titles, language, this.languages.default); }
  descriptionIn(language) { return localize(this.descriptions, language, this.languages.default); }
  consentIn(language) { return localize(this.consents, language, this.languages.default); }
  get defaultLanguage() { return this.languages.default; }
  get privateQuestions() { return Object.values(this.questions).filter((q) => q.isPrivate); }
  get publicQuestions() { return Object.values(this.questions).filter((q) => !q.isPrivate); }
  /** Total epsilon per respondent over the private questions (sequential composition; over all waves of a
   * repeated survey, for unchanged answers). */
  get epsilon() { return this.privateQuestions.reduce((total, q) => total + q.epsilonAllWaves, 0); }
  /** Total epsilon of one wave's reports (equal to `epsilon` when the survey is not repeated). */
  get epsilonPerWave() { return this.privateQuestions.reduce((total, q) => total + q.epsilon, 0); }
  /** Ids of the questions and notes shown for these answers (answers to hidden questions do not count). */
  shown(answers) {
    const visible = {};
    const shown = [];
    for (const section of this.sections) {
      if (section.relevant && !evaluateExpression(section.relevant, visible)) continue;
      for (const item of section.items) {
        if (item.relevant && !evaluateExpression(item.relevant, visible)) continue;
        shown.push(item.id);
        if (Object.hasOwn(this.questions, item.id) && answers[item.id] !== undefined && answers[item.id] !== null) visible[item.id] = answers[item.id];
      }
    }
    return shown;
  }
  /** Ids of the shown questions that must be answered, given these answers. */
  requiredNow(answers, shown = this.shown(answers)) {
    const visible = {};
    for (const id of shown) if (Object.hasOwn(this.questions, id) && answers[id] !== undefined && answers[id] !== null) visible[id] = answers[id];
    return shown.filter((id) => {
      const question = this.questions[id];
      if (!question) return false;
      return typeof question.required === "boolean" ? question.required : evaluateExpression(question.required, visible);
    });
  }
  /** Reports for the shown, answered questions; answers to hidden questions are left out. A question in
   * which the respondent randomizes (crosswise, triangular, a natural randomizer) takes their report as it is.
   * `options.arms`: for each answered split-ballot question, the arm its respondent was shown before answering
   * (`question.splitBallot.assignArm()`, with the direct arm's notice on screen); a missing arm is an error. */
  randomize(answers, options = {}) {
    const { source = defaultSource, arms, memo = null } = isSource(options) ? { source: options } : options;
    this._checkMemo(memo, true);
    return this._reports(answers, source, false, arms, memo);
  }
  /** What respondents with these true answers would send (for demos and tests): `randomize`, except that a
   * question in which the respondent randomizes draws their report through its channel, and a split ballot
   * draws each respondent's arm. In a repeated survey, `memo` (one per simulated person) makes one person's
   * waves share their permanent reports; without it each call is a new person. */
  simulate(answers, options = {}) {
    const { source = defaultSource, memo = null } = isSource(options) ? { source: options } : options;
    this._checkMemo(memo, false);
    return this._reports(answers, source, true, undefined, memo);
  }
  _checkMemo(memo, required) {
    if (memo !== null && !(memo instanceof Memo)) throw new MemoError("memo: a deniable Memo");
    if (memo !== null && this.repeated === null) {
      throw new MemoError(`memo: survey '${this.id}' is not repeated; a memo keeps reports alike across the waves of a repeated survey only`);
    }
    if (memo === null && required && this.repeated !== null) {
      throw new MemoError(`memo: survey '${this.id}' is repeated: pass memo: new Memo(localStorage), the device's panel secret, so every wave repeats the same permanent reports (a fresh draw per wave would spend epsilon anew)`);
    }
  }
  /** The split-ballot arm this device's respondent is shown in every wave of a repeated survey. */
  armFor(questionId, memo) { return this.questions[questionId].splitBallot.assignArm(memo.stream(this.id, questionId, "arm")); }
  /** The group (cheating detection, lie detector) this device's respondent follows in every wave. */
  groupFor(questionId, memo) { return this.questions[questionId].permanent.assignGroup(memo.stream(this.id, questionId, "group")); }
  _memoArms(answers, given, memo) {
    const kept = {};
    for (const [id, answer] of Object.entries(answers)) {
      if (answer !== undefined && answer !== null && Object.hasOwn(this.questions, id) && this.questions[id].splitBallot) kept[id] = this.armFor(id, memo);
    }
    for (const [id, arm] of Object.entries(given ?? {})) {
      if ((kept[id] ?? arm) !== arm) throw new AnswerError(id, `arms: ${show(arm)} is not the arm this device shows in every wave (survey.armFor('${id}', memo) = '${kept[id]}')`, "the memo's arm");
    }
    return kept;
  }
  _draw(question, value, source, simulate, memo) {
    const { mechanism } = question;
    const typed = mechanism.respondentRandomizes && !simulate;
    if (this.repeated === null || !question.isPrivate) return typed ? value : mechanism.randomize(value, source);
    if (memo === null) return mechanism.randomize(value, source);
    const { permanent } = mechanism;
    if (!typed) value = permanent.randomize(value, memo.stream(this.id, question.id, "report", permanent.answerPosition(value)));
    return mechanism.instant.apply(permanent, value, source);
  }
  _arms(answers, given, source, simulate) {
    if (given !== undefined && given !== null && !isMapping(given)) throw new TypeError("arms must be an object of question id to 'direct' or 'randomized'");
    const arms = { ...(given ?? {}) };
    for (const [id, arm] of Object.entries(arms)) {
      if (!Object.hasOwn(this.questions, id) || !this.questions[id].splitBallot) throw new AnswerError(id, "arms: this question has no split ballot", "no arm");
      if (arm !== "direct" && arm !== "randomized") throw new AnswerError(id, `arms: ${show(arm)} is not an arm`, "'direct' or 'randomized'");
    }
    for (const [id, answer] of Object.entries(answers)) {
      const question = this.questions[id];
      if (answer === undefined || answer === null || !question.splitBallot || Object.hasOwn(arms, id)) continue;
      if (!simulate) {
        throw new AnswerError(id, `a split-ballot question needs the arm its respondent was shown before answering: pass arms: {${id}: question.splitBallot.assignArm()}, drawn when the question is shown (with the direct arm's notice)`, "an answer with its arm");
      }
      arms[id] = question.splitBallot.assignArm(source);
    }
    return arms;
  }
  _reports(answers, source, simulate, givenArms, memo = null) {
    if (!isMapping(answers)) throw new TypeError("answers must be an object of question id to answer");
    const unknown = Object.keys(answers).filter((id) => !Object.hasOwn(this.questions, id)).sort();
    if (unknown.length) throw new AnswerError(unknown[0], "no such question in this survey", Object.keys(this.questions).join(", "));
    const arms = this._arms(answers, memo === null ? givenArms : this._memoArms(answers, givenArms, memo), source, simulate);
    const given = {}; // every answer checked before any is randomized
    for (const [id, answer] of Object.entries(answers)) {
      if (answer === undefined || answer === null) continue;
      const question = this.questions[id];
      const { mechanism } = question;
      try {
        if (arms[id] === "direct") given[id] = mechanism.validateAnswer(answer);
        else if (mechanism.respondentRandomizes && !simulate) {
          given[id] = mechanism.validateReport(answer);
          if (memo !== null && isMapping(given[id]) && "group" in given[id] && given[id].group !== this.groupFor(id, memo)) {
            throw new RangeError(`group ${show(given[id].group)} is not the one this device shows in every wave (survey.groupFor('${id}', memo) = '${this.groupFor(id, memo)}')`);
          }
        } else {
          mechanism.validateAnswer(answer);
          given[id] = answer;
        }
      } catch (error) {
        if (!(error instanceof RangeError || error instanceof SpecError || error instanceof TypeError)) throw error;
        throw new AnswerError(id, error.message, question.describeAnswers());
      }
    }
    const shown = new Set(this.shown(given));
    const reports = {};
    for (const [id, question] of Object.entries(this.questions)) {
      if (!shown.has(id) || !Object.hasOwn(given, id)) continue;
      reports[id] = arms[id] === "direct" ? given[id] : this._draw(question, given[id], source, simulate, memo);
      if (question.splitBallot) reports[id] = SplitBallot.wrap(arms[id], reports[id]);
    }
    return reports;
  }
}
