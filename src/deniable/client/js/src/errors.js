// Errors the client raises before anything is sent (Python: errors.py, survey.py).
// Part of deniable.js; no dependencies.

export class SpecError extends Error {
  constructor(message) {
    super(message);
    this.name = "SpecError";
  }
}

/** An answer the client refuses before randomizing anything (twin of Python's AnswerError):
 * `question` names the question, `allowed` says in words what it accepts. */
export class AnswerError extends RangeError {
  constructor(question, reason, allowed) {
    super(`answers.${question}: ${reason}; allowed: ${allowed}`);
    this.name = "AnswerError";
    this.question = question;
    this.reason = reason;
    this.allowed = allowed;
  }
}

export function show(value) {
  if (typeof value === "string") return `'${value}'`;
  if (typeof value === "bigint") return `${value}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A plain object (a spec's mapping), not null and not an array. */
export const isMapping = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
