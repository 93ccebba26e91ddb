// Section times (the spec's quality.section_times): how long each section was the one being answered (shown, on a
// phone; holding the focus, on a wide screen), counted only while the page is in view, sent with the reports to the
// nearest 10 seconds and at most an hour each. Never per question, never what was answered or changed.

/** The time spent in each section, by the section the page says is being answered. */
export class SectionClock {
  constructor() {
    this.spent = new Map();
    this.section = null; // being timed now (null: none)
    this.since = 0;
  }

  /** From now on, time `key` (null: none). */
  timeIn(key) {
    const now = performance.now();
    if (this.section !== null) this.spent.set(this.section, (this.spent.get(this.section) ?? 0) + now - this.since);
    this.section = key;
    this.since = now;
  }

  /** Away from the page: not counted until `resume`. */
  pause() {
    const section = this.section;
    this.timeIn(null);
    this.resumed = section;
  }

  resume() {
    if (this.resumed !== undefined) this.timeIn(this.resumed);
  }

  /** {seconds: {section: whole tens of seconds}} of the sections answered so far. */
  paradata() {
    this.timeIn(this.section); // what the current section has taken up to now
    const seconds = {};
    for (const [key, ms] of this.spent) if (key !== null) seconds[key] = Math.min(3600, Math.round(ms / 10_000) * 10);
    return { seconds };
  }
}

/** The section an element is in, by the page's section id ("all": a survey without sections), or null for an element
 * in none (the send button, a language link): the server takes times for the survey's sections only. */
export function sectionOf(element) {
  const section = element?.closest("section.section");
  return section ? section.dataset.section || "all" : null;
}
