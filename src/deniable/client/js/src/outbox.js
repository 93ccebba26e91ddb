// The outbox: randomized reports waiting to be sent, nothing else (Python: submit.py, Outbox).
// Part of deniable.js; no dependencies.

import { SubmitError, postResponse } from "./submit.js";

/** An in-memory stand-in for localStorage (Node, tests, apps that persist some other way). */
export class MemoryStorage {
  constructor() { this._items = new Map(); }
  getItem(key) { return this._items.has(key) ? this._items.get(key) : null; }
  setItem(key, value) { this._items.set(key, String(value)); }
  removeItem(key) { this._items.delete(key); }
}

const OUTBOX_FIELDS = ["spec_hash", "idempotency_key", "reports", "token", "credential", "wave"];

/**
 * Responses that could not be sent yet: already randomized bodies (reports, spec hash, idempotency key,
 * the invitation token if any), never a true answer, kept in `storage` (localStorage in a browser; any
 * object with getItem/setItem/removeItem) under `key`. `flush` sends each with its own idempotency key,
 * so a body that did arrive before the connection dropped is stored once however often it is sent.
 */
export class Outbox {
  /** `new Outbox()`, `new Outbox(localStorage)` or `new Outbox({storage, key})`; a storage without getItem,
   * setItem and removeItem is refused (it would lose every body silently). */
  constructor(options = {}) {
    const given = typeof options?.getItem === "function" ? { storage: options } : options ?? {};
    const { storage = globalThis.localStorage ?? new MemoryStorage(), key = "deniable-outbox" } = given;
    const missing = ["getItem", "setItem", "removeItem"].filter((name) => typeof storage?.[name] !== "function");
    if (missing.length) {
      throw new TypeError(`Outbox: the storage has no ${missing.join(", ")}; pass localStorage, a MemoryStorage, or any ` +
        "object with getItem, setItem and removeItem (new Outbox(storage) or new Outbox({ storage, key }))");
    }
    if (typeof key !== "string" || !key) throw new TypeError("Outbox: key must be a non-empty string");
    this.storage = storage;
    this.key = key;
  }
  /** Every kept entry: {baseUrl, surveyId, body}. */
  entries() {
    let entries;
    try {
      entries = JSON.parse(this.storage.getItem(this.key) ?? "[]");
    } catch {
      return [];
    }
    return Array.isArray(entries) ? entries : [];
  }
  _write(entries) {
    if (entries.length) this.storage.setItem(this.key, JSON.stringify(entries));
    else this.storage.removeItem(this.key);
  }
  /** Keep a randomized body to send later (only the fields a response has: nothing else is stored). */
  async add(baseUrl, surveyId, body) {
    const kept = Object.fromEntries(OUTBOX_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]));
    if (typeof kept.idempotency_key !== "string") throw new TypeError("an outbox entry needs the body's idempotency_key");
    const entries = this.entries();
    const entry = { baseUrl, surveyId, body: kept };
    const same = entries.findIndex((e) => e.body.idempotency_key === kept.idempotency_key);
    if (same >= 0) entries[same] = entry; // one entry per response
    else entries.push(entry);
    this._write(entries);
  }
  /**
   * Send every kept entry (or those of `surveyId`). Delivered and refused entries leave the outbox; those with no
   * final answer (no connection, 429, 503, 507, …: STATUS_TABLE) stay. Resolves to {sent: [acknowledgement], refused: [SubmitError], kept: count}.
   */
  async flush({ surveyId = null, ...options } = {}) {
    const sent = [];
    const refused = [];
    for (const entry of this.entries()) {
      if (surveyId !== null && entry.surveyId !== surveyId) continue;
      try {
        sent.push(await postResponse(entry.baseUrl, entry.surveyId, entry.body, options));
      } catch (error) {
        if (!(error instanceof SubmitError)) throw error;
        if (error.retryable) continue; // no final answer yet: try again at the next flush
        refused.push(error); // refused for good (a closed survey, a spent invitation): retrying cannot help
      }
      this._write(this.entries().filter((e) => e.body.idempotency_key !== entry.body.idempotency_key));
    }
    return { sent, refused, kept: this.entries().filter((e) => surveyId === null || e.surveyId === surveyId).length };
  }
}
