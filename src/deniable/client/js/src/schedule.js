// When a survey takes answers: `opens` and `closes` in its spec, each an instant with its time zone.
// Twin of Python's deniable.client.schedule: the same accepted forms, the same errors, the same UTC form.

import { SpecError, show } from "./errors.js";

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?(Z|[+-]\d{2}:\d{2})$/;
const EXAMPLE = "e.g. 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z";

/** An instant written with its time zone, as a Date; a SpecError naming `where` otherwise. */
export function parseInstant(value, where) {
  const refuse = () => new SpecError(`${where}: an instant with its time zone, ${EXAMPLE}, got ${show(value)}`);
  const match = typeof value === "string" ? INSTANT.exec(value) : null;
  if (match === null) throw refuse();
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map((part) => Number(part ?? 0));
  const zone = match[7];
  let offsetMinutes = 0;
  if (zone !== "Z") {
    const [hours, minutes] = [Number(zone.slice(1, 3)), Number(zone.slice(4, 6))];
    offsetMinutes = (zone[0] === "+" ? 1 : -1) * (hours * 60 + minutes);
    if (offsetMinutes !== 0 && (Math.abs(offsetMinutes) > 14 * 60 || minutes > 59)) throw refuse();
  }
  const local = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  // Date.UTC rolls an impossible date over (30 February is 2 March): the fields must read back unchanged.
  if (local.getUTCFullYear() !== year || local.getUTCMonth() !== month - 1 || local.getUTCDate() !== day
      || local.getUTCHours() !== hour || local.getUTCMinutes() !== minute || local.getUTCSeconds() !== second
      || year < 1) throw refuse();
  return new Date(local.getTime() - offsetMinutes * 60_000);
}

/** The one form an instant is kept in: UTC, to the second. */
export const written = (instant) => instant.toISOString().replace(/\.\d{3}Z$/, "Z");

/** A survey's fieldwork window; either end may be open (null). */
export class Schedule {
  constructor(opens = null, closes = null) {
    this.opens = opens;
    this.closes = closes;
  }

  static read(opens, closes) {
    const start = opens == null ? null : parseInstant(opens, "survey.opens");
    const end = closes == null ? null : parseInstant(closes, "survey.closes");
    if (start !== null && end !== null && end <= start) {
      throw new SpecError(`survey.closes: must be after survey.opens (${written(start)}), got ${written(end)}`);
    }
    return new Schedule(start, end);
  }

  /** "not open" before `opens`, "closed" from `closes` on, else "open". */
  state(now = new Date()) {
    if (this.opens !== null && now < this.opens) return "not open";
    if (this.closes !== null && now >= this.closes) return "closed";
    return "open";
  }
}
