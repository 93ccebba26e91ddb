// What an id may be (a survey, section, question, group): matched as a whole (Python: identifiers.py).
// Part of deniable.js; no dependencies.

import { SpecError, show } from "./errors.js";

export const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** `value` when it is an id; a SpecError naming `where` otherwise. */
export function requireId(value, where) {
  if (typeof value !== "string" || !ID.test(value)) {
    throw new SpecError(`${where}: must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit; got ${show(value)}`);
  }
  return value;
}
