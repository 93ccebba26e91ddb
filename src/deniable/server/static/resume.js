// Save and resume, only when the respondent asks ("save my answers on this device"): the answers on the page, the
// version they answer, the section shown and when they expire are kept in this browser's localStorage under the
// survey's id, then kept up to date as the respondent answers. Never sent. They go once the reports are sent (or wait
// in the outbox), when they expire (a day, or the survey's closing if sooner), when another version is served (with
// a notice), and when the respondent forgets them. What protects them is the device and its browser profile, not a
// key (one kept beside them would protect nothing): the page says so and offers to forget them.

const DRAFT_HOURS = 24; // answers in clear on the device: a day at most

/** One survey's draft in this browser's localStorage. `open` gives null where storage is switched off: no draft,
 * and no button offering one. */
export class DraftStore {
  static open(surveyId) {
    const key = `deniable.draft.${surveyId}`;
    try {
      window.localStorage.getItem(key);
      return new DraftStore(window.localStorage, key);
    } catch {
      return null;
    }
  }

  constructor(storage, key) {
    this.storage = storage;
    this.key = key;
  }

  /** Keep `draft` ({hash, expires, section, answers, order}); false when storage is full (nothing was kept). */
  save(draft) {
    try {
      this.storage.setItem(this.key, JSON.stringify(draft));
      return true;
    } catch {
      return false; // storage full: say nothing was kept rather than pretend
    }
  }

  /** The draft kept, parsed, or null (none, or not readable). */
  read() {
    try {
      const draft = JSON.parse(this.storage.getItem(this.key));
      return draft && typeof draft === "object" ? draft : null;
    } catch {
      return null;
    }
  }

  remove() {
    try {
      this.storage.removeItem(this.key);
    } catch {
      // nothing kept, nothing to remove
    }
  }
}

/** When a draft begun now expires (ms since the epoch): in a day, or at the survey's closing (a Date, or none) if
 *  sooner. A draft kept with a later expiry (an older page allowed a week) is held to this when resumed. */
export function draftExpiry(closes) {
  return Math.min(Date.now() + DRAFT_HOURS * 3_600_000, closes?.getTime() ?? Infinity);
}

/** What a question's inputs hold, as typed (a draft keeps this, not the report shape). */
export function inputState(type, inputs) {
  if (type === "multi_select") return inputs.filter((i) => i.checked).map((i) => i.value);
  if (type === "number") return inputs[0].value === "" ? null : inputs[0].value;
  return inputs.find((i) => i.checked)?.value ?? null;
}

/** Put back in a question's inputs what `inputState` read from them. */
export function restoreInput(type, inputs, value) {
  if (type === "number") {
    inputs[0].value = typeof value === "string" ? value : "";
    return;
  }
  const chosen = new Set(Array.isArray(value) ? value : [value]);
  for (const input of inputs) input.checked = chosen.has(input.value);
}

/** Whether `kept` orders the same sections, items and options as `drawn` (a draft's order, checked before use). */
export function isOrderOf(kept, drawn) {
  const samePermutation = (a, b) => Array.isArray(a) && a.length === b.length && [...a].sort().join("\u0000") === [...b].sort().join("\u0000");
  const sameParts = (a, b) => a !== null && typeof a === "object" && Object.keys(a).sort().join() === Object.keys(b).sort().join() &&
    Object.keys(b).every((key) => samePermutation(a[key], b[key]));
  return kept !== null && typeof kept === "object" && samePermutation(kept.sections, drawn.sections) &&
    sameParts(kept.items, drawn.items) && sameParts(kept.options, drawn.options);
}
