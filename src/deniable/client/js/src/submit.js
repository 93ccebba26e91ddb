// Sending reports: fetch the spec, post with retries and typed errors (Python: submit.py).
// Part of deniable.js; no dependencies.

import { PublicKey, blind, finalize, prepare } from "./blind_rsa.js";
import { cryptoSource } from "./randomness.js";
import { STATUS_TABLE } from "./statuses.js";
import { Survey } from "./survey.js";

/** A response the server refused, or could not be reached after retries: `status` and `field` say why, `kind` is
 * its row of STATUS_TABLE ("unreachable" without an answer), `retryAfter` the server's Retry-After in seconds. */
export class SubmitError extends Error {
  constructor(message, { status = null, field = null, retryAfter = null } = {}) {
    super(message);
    this.name = "SubmitError";
    this.status = status;
    this.field = field;
    this.retryAfter = retryAfter;
    this.kind = status === null ? "unreachable" : classify(status, field).kind;
  }
  /** Whether sending the same body again later can succeed: keep it until then. */
  get retryable() { return isRetryable(this.status, this.field); }
}

/** A random idempotency key: a retry with the same key is stored once. */
export function newIdempotencyKey() {
  const bytes = new Uint8Array(16);
  cryptoSource.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** 404: no survey with this id. */
export class SurveyNotFound extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "SurveyNotFound"; }
}
/** 404 on spec_hash: the spec it was randomized under is no version of this survey. */
export class StaleSpec extends SurveyNotFound {
  constructor(message, details) { super(message, details); this.name = "StaleSpec"; }
}
/** 410: the survey no longer accepts responses. */
export class SurveyClosed extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "SurveyClosed"; }
}
/** 410 on wave: the wave this response was for has closed (it was not counted in another). */
export class WaveClosed extends SurveyClosed {
  constructor(message, details) { super(message, details); this.name = "WaveClosed"; }
}
/** 409 on token: this respondent token has answered already. */
export class TokenAlreadyUsed extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "TokenAlreadyUsed"; }
}
/** 409 on wave: the survey is repeated and no wave is open now (nothing to do with the token). */
export class NoWaveOpen extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "NoWaveOpen"; }
}
/** 409 on quota: the respondent's group (a quota cell of public answers) is full; the response was not stored. */
export class QuotaFull extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "QuotaFull"; }
}
/** 4xx: a report or field is invalid; `field` names it. */
export class ResponseRejected extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "ResponseRejected"; }
}
/** 408, 429, 5xx, 507: the server could not take it now; sending the same body again later can succeed. */
export class RetryLater extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "RetryLater"; }
}

/** (kind, retry) of an answer with this status and error field: STATUS_TABLE's row for (status, field), else for the
 * status alone, else by class (5xx retry later, other 4xx refused). The Python twin: statuses.classify. */
export function classify(status, field = null) {
  const row = STATUS_TABLE.find((r) => r.status === status && r.field === field)
    ?? STATUS_TABLE.find((r) => r.status === status && r.field === null);
  if (row) return { kind: row.kind, retry: row.retry };
  if (status >= 500) return { kind: "retry_later", retry: true };
  if (status >= 400) return { kind: "refused", retry: false };
  return { kind: "stored", retry: false };
}

/** Whether a response that got this answer must be kept and sent again (status null: no answer at all). */
export function isRetryable(status, field = null) {
  return status === null || classify(status, field).retry;
}

/** Statuses after which a response is sent again (STATUS_TABLE: retry). */
export const TRANSIENT = new Set(STATUS_TABLE.filter((r) => r.retry).map((r) => r.status));
/** The longest a send waits for a Retry-After before it gives up (and an outbox keeps the response), in ms. */
export const MAX_RETRY_WAIT_MS = 30_000;
const BY_KIND = {
  survey_not_found: SurveyNotFound, stale_spec: StaleSpec, closed: SurveyClosed, wave_closed: WaveClosed,
  token_used: TokenAlreadyUsed, no_wave_open: NoWaveOpen, quota_full: QuotaFull, refused: ResponseRejected, retry_later: RetryLater,
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A Retry-After header's delay in seconds (a number of seconds or an HTTP date), or null. */
export function retryAfterSeconds(value) {
  if (value === null || value === undefined) return null;
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return Number(text);
  const when = Date.parse(text);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

function refusal(status, payload, url, retryAfter = null) {
  const field = payload?.error?.field ?? null;
  const Kind = BY_KIND[classify(status, field).kind] ?? SubmitError;
  return new Kind(payload?.error?.message ?? `${url}: HTTP ${status}`, { status, field, retryAfter });
}

/** One request with the Python twin's policy: no answer, or an answer that says to send again later, is retried
 * (exponential backoff or the server's Retry-After, whichever is longer; a Retry-After past `maxWaitMs` ends the
 * tries at once), with the same body and so the same idempotency key; a final refusal is typed. */
async function withRetries(url, init, { fetch: fetcher = globalThis.fetch, retries = 4, backoffMs = 250,
  maxWaitMs = MAX_RETRY_WAIT_MS } = {}) {
  let last = null;
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt) {
      const wait = Math.max(backoffMs * 2 ** (attempt - 1), (last.retryAfter ?? 0) * 1000);
      if (wait > maxWaitMs) break;
      await sleep(wait);
    }
    let response;
    try {
      response = await fetcher(url, init);
    } catch (error) {
      last = new SubmitError(`could not reach ${url}: ${error.message}`);
      continue;
    }
    const payload = await response.json().catch(() => null);
    if (response.ok) return { status: response.status, payload };
    last = refusal(response.status, payload, url, retryAfterSeconds(response.headers?.get?.("Retry-After") ?? null));
    if (!last.retryable) throw last;
  }
  throw last;
}

/** Fetch a survey's served spec and build it: {survey, hash, payload}. Retried like postResponse
 * (3 retries by default, as in Python); a missing survey is SurveyNotFound. */
export async function fetchSurvey(baseUrl, surveyId, { retries = 3, ...options } = {}) {
  const url = `${baseUrl.replace(/\/$/, "")}/api/v1/surveys/${encodeURIComponent(surveyId)}`;
  const { payload } = await withRetries(url, { headers: { Accept: "application/json" } }, { retries, ...options });
  return { survey: Survey.fromSpec(payload.spec), hash: payload.hash, payload };
}

/**
 * POST one already-randomized response ({spec_hash, idempotency_key, token?, reports}), retrying
 * transient failures with the same idempotency key. Resolves to the server's acknowledgement.
 */
export async function postResponse(baseUrl, surveyId, body, options = {}) {
  const url = `${baseUrl.replace(/\/$/, "")}/api/v1/surveys/${encodeURIComponent(surveyId)}/responses`;
  const init = { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(body) };
  return (await withRetries(url, init, options)).payload;
}

const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const fromHex = (text) => Uint8Array.from(text.match(/../g) ?? [], (pair) => parseInt(pair, 16));

/** Where `obtainCredential` keeps a credential in `storage`: per survey and invitation (its token's SHA-256, never the
 * token itself). */
export async function credentialSlot(surveyId, token) {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  return `deniable-credential:${surveyId}:${toHex(digest.slice(0, 16))}`;
}

/**
 * Exchange an invitation `token` for a blind-signed credential (blind_rsa.js): {key, serial, signature}, sent with
 * the response instead of the token, so the server cannot join the invitation to the response. null from a server
 * that issues none (older than credentials: the token is sent itself, as it was). The same blinded message is sent
 * on every retry, which the server answers again; a second call for one token is refused (409 on token). With a
 * `storage` (localStorage, or an OutboxStorage), the blinded message is kept before it is sent and the credential
 * once it is made (`credentialSlot`), so a reload of the page sends the same message again, or reuses the
 * credential, instead of asking a second time; the blinding factor is dropped once the credential is made. The
 * Python twin is submit.obtain_credential.
 */
export async function obtainCredential(baseUrl, surveyId, token, { storage = null, ...options } = {}) {
  const base = `${baseUrl.replace(/\/$/, "")}/api/v1/surveys/${encodeURIComponent(surveyId)}`;
  const post = (path, body) => withRetries(`${base}/${path}`, { method: "POST", body: JSON.stringify(body),
    headers: { "Content-Type": "application/json", Accept: "application/json" } }, options);
  const slot = storage ? await credentialSlot(surveyId, token) : null;
  const kept = slot ? JSON.parse(storage.getItem(slot) ?? "null") : null;
  if (kept?.credential) return kept.credential;
  let asked = kept?.asked ?? null;
  if (!asked) {
    let offered;
    try {
      offered = (await post("credential-key", { token })).payload;
    } catch (error) {
      if (error instanceof SurveyNotFound && error.field === null) return null; // no such route: a server without them
      throw error;
    }
    const key = new PublicKey(BigInt(`0x${offered.modulus}`), offered.exponent);
    const serial = prepare(cryptoSource.getRandomValues(new Uint8Array(32)));
    const { blinded, inverse } = await blind(key, serial);
    asked = { key: offered.key, modulus: offered.modulus, exponent: offered.exponent, serial: toHex(serial),
      blinded: toHex(blinded), inverse: inverse.toString(16) };
    if (slot) storage.setItem(slot, JSON.stringify({ asked }));
  }
  let signed;
  try {
    signed = (await post("credentials", { token, key: asked.key, blinded: asked.blinded })).payload;
  } catch (error) {
    // Refused for good (the token spent meanwhile, another device's credential): what was kept can never be signed.
    if (slot && error instanceof SubmitError && error.status !== null && !error.retryable) storage.removeItem(slot);
    throw error;
  }
  const key = new PublicKey(BigInt(`0x${asked.modulus}`), asked.exponent);
  const signature = await finalize(key, fromHex(asked.serial), fromHex(signed.blind_signature), BigInt(`0x${asked.inverse}`));
  const credential = { key: asked.key, serial: asked.serial, signature: toHex(signature) };
  if (slot) storage.setItem(slot, JSON.stringify({ credential }));
  return credential;
}

/**
 * Fetch the spec, randomize `answers` on this device, and send only the reports.
 * Resolves to {acknowledgement, reports, queued}: the reports are exactly what left (or will leave)
 * the device. With an `outbox`, a send that gets no final answer (no connection, or a status the server says to
 * send again later: 429, 503, 507, …; STATUS_TABLE) keeps the randomized body there (queued: true,
 * acknowledgement: null) for `outbox.flush()` to deliver later. A split-ballot question needs `arms`: the arm each
 * was shown before it was answered (question.splitBallot.assignArm(), drawn when the app shows it). A repeated survey needs
 * the device's `memo` (a Memo); the response names the wave open when the survey was fetched.
 */
export async function submit(baseUrl, surveyId, answers, { token = null, outbox = null, memo = null, arms = null,
  ...options } = {}) {
  const { survey, hash, payload } = await fetchSurvey(baseUrl, surveyId, options);
  const reports = survey.randomize(answers, { memo, ...(arms ? { arms } : {}) });
  const body = { spec_hash: hash, idempotency_key: newIdempotencyKey(), reports };
  if (token) {
    const credential = payload.access === "token" ? await obtainCredential(baseUrl, surveyId, token, options) : null;
    if (credential) body.credential = credential;
    else body.token = token;
  }
  if (payload.wave !== undefined && payload.wave !== null) body.wave = payload.wave; // refused once that wave is closed
  try {
    const acknowledgement = await postResponse(baseUrl, surveyId, body, options);
    return { acknowledgement, reports, queued: false };
  } catch (error) {
    if (!outbox || !(error instanceof SubmitError) || !error.retryable) throw error;
    await outbox.add(baseUrl, surveyId, body);
    return { acknowledgement: null, reports, queued: true };
  }
}

/** True for a send that never got an answer from the server (no connection, DNS, a dropped socket). */
export function isUnreachable(error) {
  return error instanceof SubmitError && error.status === null;
}
