// Skip logic: expressions over public answers only (Python: skiplogic.py).
// Part of deniable.js; no dependencies.

import { show } from "./errors.js";
import { ID } from "./identifiers.js";
import { parseFraction } from "./exact.js";

// The expression language of `relevant` (and conditional `required`), the twin of
// deniable/client/skiplogic.py: the same grammar, the same tree, the same canonical text,
// the same answers. Shared vectors (tests/vectors/skiplogic.json) keep them equal.
export class ExpressionError extends Error {
  constructor(message) {
    super(message);
    this.name = "ExpressionError";
  }
}

const KEYWORDS = new Set(["and", "or", "not", "selected"]);
export const ORDERINGS = ["<", "<=", ">", ">="];
export const MAX_EXPRESSION_LENGTH = 2000;
const MAX_EXPRESSION_DEPTH = 40;
const MAX_NUMBER_LENGTH = 30;
const TOKEN = /\s*(?:('[^']*'|"[^"]*")|(<=|>=|!=|=|<|>)|([(),])|([A-Za-z0-9_.\-]+))/y;
const NUMBER = /^-?[0-9]+(?:\.[0-9]+)?$/;

export function reprText(value) {
  // Python's repr of a string, so that both twins word their errors alike.
  return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replaceAll("'", "\\'")}'`;
}

function tokenize(text) {
  const tokens = [];
  const end = text.trimEnd().length;
  let position = 0;
  while (position < end) {
    TOKEN.lastIndex = position;
    const match = TOKEN.exec(text);
    if (!match || TOKEN.lastIndex === position) {
      const start = position + (text.slice(position).length - text.slice(position).trimStart().length);
      throw new ExpressionError(`unexpected ${reprText(text[start])} at character ${start + 1}`);
    }
    const kinds = ["text", "op", "punct", "word"];
    const group = [1, 2, 3, 4].find((i) => match[i] !== undefined);
    const value = match[group];
    tokens.push([kinds[group - 1], value, match.index + match[0].length - value.length]);
    position = TOKEN.lastIndex;
  }
  return tokens;
}

const describeToken = ([kind, value, position]) => (kind === "end" ? "the end of the expression" : `${reprText(value)} at character ${position + 1}`);

/** `007.50` → `7.5`, `-0` → `0`: one spelling per decimal value (as in Python). */
export function canonicalNumber(literal) {
  const negative = literal.startsWith("-");
  const [wholeRaw, fractionRaw = ""] = literal.replace(/^-/, "").split(".");
  const whole = wholeRaw.replace(/^0+/, "") || "0";
  const fraction = fractionRaw.replace(/0+$/, "");
  const digits = whole + (fraction ? `.${fraction}` : "");
  return negative && digits !== "0" ? `-${digits}` : digits;
}

class ExpressionParser {
  constructor(text) {
    this.tokens = tokenize(text);
    this.index = 0;
    this.depth = 0;
  }
  peek() { return this.tokens[this.index] ?? ["end", "", -1]; }
  take() { const token = this.peek(); this.index += 1; return token; }
  expect(kind, value) {
    const token = this.take();
    if (token[0] !== kind || (value !== undefined && token[1] !== value)) throw new ExpressionError(`expected '${value}', found ${describeToken(token)}`);
    return token;
  }
  parse() {
    if (!this.tokens.length) throw new ExpressionError("empty expression");
    const tree = this.disjunction();
    if (this.peek()[0] !== "end") throw new ExpressionError(`unexpected ${describeToken(this.peek())}`);
    return tree;
  }
  nested(method) {
    this.depth += 1;
    if (this.depth > MAX_EXPRESSION_DEPTH) throw new ExpressionError(`nested more than ${MAX_EXPRESSION_DEPTH} levels deep`);
    try { return method(); } finally { this.depth -= 1; }
  }
  chain(keyword, operand) {
    const args = [operand()];
    while (this.peek()[0] === "word" && this.peek()[1] === keyword) {
      this.take();
      args.push(operand());
    }
    if (args.length === 1) return args[0];
    return { op: keyword, args: args.flatMap((arg) => (arg.op === keyword ? arg.args : [arg])) };
  }
  disjunction() { return this.nested(() => this.chain("or", () => this.conjunction())); }
  conjunction() { return this.chain("and", () => this.negation()); }
  negation() {
    const [kind, value] = this.peek();
    if (kind === "word" && value === "not") {
      this.take();
      return this.nested(() => ({ op: "not", arg: this.negation() }));
    }
    return this.atom();
  }
  atom() {
    const token = this.take();
    const [kind, value] = token;
    if (kind === "punct" && value === "(") {
      const tree = this.disjunction();
      this.expect("punct", ")");
      return tree;
    }
    if (kind === "word" && value === "selected") {
      this.expect("punct", "(");
      const question = questionToken(this.take());
      this.expect("punct", ",");
      const literal = this.take();
      if (literal[0] !== "text") throw new ExpressionError(`selected(...) takes a quoted option, found ${describeToken(literal)}`);
      this.expect("punct", ")");
      return { op: "selected", question, value: { text: literal[1].slice(1, -1) } };
    }
    const question = questionToken(token);
    const operator = this.take();
    if (operator[0] !== "op") throw new ExpressionError(`expected a comparison (=, !=, <, <=, >, >=) after ${question}, found ${describeToken(operator)}`);
    return { op: operator[1], question, value: literalToken(this.take()) };
  }
}

function questionToken(token) {
  const [kind, value] = token;
  if (kind !== "word" || KEYWORDS.has(value) || !ID.test(value)) throw new ExpressionError(`expected a question id, found ${describeToken(token)}`);
  return value;
}

function literalToken(token) {
  const [kind, value] = token;
  if (kind === "text") return { text: value.slice(1, -1) };
  if (kind === "word" && NUMBER.test(value)) {
    if (value.length > MAX_NUMBER_LENGTH) throw new ExpressionError(`number ${value.slice(0, 12)}... has more than ${MAX_NUMBER_LENGTH} characters`);
    return { number: canonicalNumber(value) };
  }
  throw new ExpressionError(`expected a quoted text or a number, found ${describeToken(token)}`);
}

/** Parse a skip-logic expression into its tree (plain objects, the same JSON as Python's). */
export function parseExpression(text) {
  if (typeof text !== "string") throw new ExpressionError(`must be a text expression, got ${show(text)}`);
  if (text.length > MAX_EXPRESSION_LENGTH) throw new ExpressionError(`longer than ${MAX_EXPRESSION_LENGTH} characters`);
  return new ExpressionParser(text).parse();
}

/** The canonical spelling of a tree. */
export function expressionText(tree) {
  const { op } = tree;
  if (op === "and" || op === "or") {
    return tree.args.map((arg) => (arg.op === "and" || arg.op === "or" ? `(${expressionText(arg)})` : expressionText(arg))).join(` ${op} `);
  }
  if (op === "not") {
    const inner = expressionText(tree.arg);
    return tree.arg.op === "and" || tree.arg.op === "or" ? `not (${inner})` : `not ${inner}`;
  }
  const { value } = tree;
  const literal = "text" in value ? (value.text.includes("'") ? `"${value.text}"` : `'${value.text}'`) : value.number;
  return op === "selected" ? `selected(${tree.question}, ${literal})` : `${tree.question} ${op} ${literal}`;
}

/** Every leaf (comparison or selected) of a tree. */
export function* expressionLeaves(tree) {
  if (tree.op === "and" || tree.op === "or") for (const arg of tree.args) yield* expressionLeaves(arg);
  else if (tree.op === "not") yield* expressionLeaves(tree.arg);
  else yield tree;
}

/** Evaluate a tree against answers (an unanswered question: `!=` is true, everything else false). */
export function evaluateExpression(tree, answers) {
  const { op } = tree;
  if (op === "or") return tree.args.some((arg) => evaluateExpression(arg, answers));
  if (op === "and") return tree.args.every((arg) => evaluateExpression(arg, answers));
  if (op === "not") return !evaluateExpression(tree.arg, answers);
  const answer = Object.hasOwn(answers, tree.question) ? answers[tree.question] : null;
  const { value } = tree;
  if (answer === null || answer === undefined) return op === "!=";
  if (op === "selected") return Array.isArray(answer) ? answer.includes(value.text) : answer === value.text;
  if ("text" in value) {
    const equal = typeof answer === "string" && answer === value.text;
    return op === "=" ? equal : op === "!=" ? !equal : false;
  }
  let left;
  try {
    left = parseFraction(answer, tree.question);
  } catch {
    return op === "!=";
  }
  const order = left.cmp(parseFraction(value.number, "literal"));
  return { "=": order === 0, "!=": order !== 0, "<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0 }[op];
}
