// Sending reports: fetch the spec, post with retries and typed errors (Python: submit.py).
// Part of deniable.js; no dependencies.

import { cryptoSource } from "./randomness.js";
import { Survey } from "./survey.js";

/** A response the server refused, or could not be reached after retries. */
export class SubmitError extends Error {
  constructor(message, { status = null, field = null } = {}) {
    super(message);
    this.name = "SubmitError";
    this.status = status;
    this.field = field;
  }
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
/** 410: the survey no longer accepts responses. */
export class SurveyClosed extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "SurveyClosed"; }
}
/** 409: this respondent token has answered already. */
export class TokenAlreadyUsed extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "TokenAlreadyUsed"; }
}
/** 4xx: a report or field is invalid; `field` names it. */
export class ResponseRejected extends SubmitError {
  constructor(message, details) { super(message, details); this.name = "ResponseRejected"; }
}

export const TRANSIENT = new Set([408, 425, 429, 500, 502, 503, 504]);
const BY_STATUS = { 404: SurveyNotFound, 410: SurveyClosed, 409: TokenAlreadyUsed };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function refusal(status, payload, url) {
  const Kind = BY_STATUS[status] ?? (status >= 400 && status < 500 ? ResponseRejected : SubmitError);
  return new Kind(payload?.error?.message ?? `${url}: HTTP ${status}`, { status, field: payload?.error?.field ?? null });
}

/** One request with the Python twin's policy: network failures and transient statuses are retried
 * (exponential backoff, the same body and so the same idempotency key); refusals are typed. */
async function withRetries(url, init, { fetch: fetcher = globalThis.fetch, retries = 4, backoffMs = 250 } = {}) {
  let last = null;
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt) await sleep(backoffMs * 2 ** (attempt - 1));
    let response;
    try {
      response = await fetcher(url, init);
    } catch (error) {
      last = new SubmitError(`could not reach ${url}: ${error.message}`);
      continue;
    }
    const payload = await response.json().catch(() => null);
    if (response.ok) return { status: response.status, payload };
    const error = refusal(response.status, payload, url);
    if (!TRANSIENT.has(response.status)) throw error;
    last = error;
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

/**
 * Fetch the spec, randomize `answers` on this device, and send only the reports.
 * Resolves to {acknowledgement, reports, queued}: the reports are exactly what left (or will leave)
 * the device. With an `outbox`, a send that fails for want of a connection keeps the randomized body
 * there (queued: true, acknowledgement: null) for `outbox.flush()` to deliver later. A repeated survey needs
 * the device's `memo` (a Memo); the response names the wave open when the survey was fetched.
 */
export async function submit(baseUrl, surveyId, answers, { token = null, outbox = null, memo = null, ...options } = {}) {
  const { survey, hash, payload } = await fetchSurvey(baseUrl, surveyId, options);
  const reports = survey.randomize(answers, { memo });
  const body = { spec_hash: hash, idempotency_key: newIdempotencyKey(), reports };
  if (token) body.token = token;
  if (payload.wave !== undefined && payload.wave !== null) body.wave = payload.wave; // refused once that wave is closed
  try {
    const acknowledgement = await postResponse(baseUrl, surveyId, body, options);
    return { acknowledgement, reports, queued: false };
  } catch (error) {
    if (!outbox || !isUnreachable(error)) throw error;
    await outbox.add(baseUrl, surveyId, body);
    return { acknowledgement: null, reports, queued: true };
  }
}

/** True for a send that never got an answer from the server (no connection, DNS, a dropped socket). */
export function isUnreachable(error) {
  return error instanceof SubmitError && error.status === null;
}
