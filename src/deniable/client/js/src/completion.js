// A recruitment panel's completion: a code shown after answering and a link back to the panel.
// Twin of Python's deniable.client.completion: the same specs accepted, the same errors.

import { SpecError, isMapping, show } from "./errors.js";

const CODE = /^[A-Za-z0-9_-]{1,64}$/;
const URL_FORM = /^https:\/\/[^\s<>"']{1,2000}$/;

export class Completion {
  constructor(code = null, url = null) {
    this.code = code;
    this.url = url;
  }

  /** The completion of a spec (null when it has none); a SpecError naming the field otherwise. */
  static read(spec) {
    if (spec === undefined || spec === null) return null;
    const where = "survey.completion";
    if (!isMapping(spec) || !Object.keys(spec).length) throw new SpecError(`${where}: a mapping with code, url or both, got ${show(spec)}`);
    const unknown = Object.keys(spec).filter((key) => key !== "code" && key !== "url").sort();
    if (unknown.length) throw new SpecError(`${where}: unknown field '${unknown[0]}' (allowed: code, url)`);
    const code = spec.code ?? null;
    const url = spec.url ?? null;
    if (code !== null && !(typeof code === "string" && CODE.test(code))) {
      throw new SpecError(`${where}.code: letters, digits, _ and - (at most 64), got ${show(code)}`);
    }
    if (url !== null && !(typeof url === "string" && URL_FORM.test(url))) {
      throw new SpecError(`${where}.url: an https:// address, got ${show(url)}`);
    }
    if (url !== null && url.includes("{code}") && code === null) throw new SpecError(`${where}.url: it names {code}, but the completion has no code`);
    return new Completion(code, url);
  }

  /** The address the respondent follows when done, the code put in where the URL names it. */
  get link() {
    return this.url === null ? null : this.url.replaceAll("{code}", this.code ?? "");
  }
}
