import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ResponseRejected, SubmitError, SurveyClosed, SurveyNotFound, TokenAlreadyUsed, fetchSurvey, postResponse, submit,
} from "../deniable.js";

const spec = { id: "tax", title: "Taxes", questions: [{ id: "dodged", type: "yes_no", text: "Dodged?" }] };

function fakeServer(responses) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    calls.push({ url, method: init.method ?? "GET", body: init.body ? JSON.parse(init.body) : null });
    const next = responses.shift();
    if (next instanceof Error) throw next;
    return { ok: next.status < 400, status: next.status, json: async () => next.body };
  };
  return { fetch, calls };
}

test("submit fetches the spec, randomizes locally and posts only reports", async () => {
  const server = fakeServer([
    { status: 200, body: { spec, hash: "h1" } },
    { status: 201, body: { id: "r1", survey_id: "tax", spec_hash: "h1", received_on: "2026-11-22" } },
  ]);
  const { acknowledgement, reports } = await submit("http://x/", "tax", { dodged: "yes" }, { fetch: server.fetch, token: "t" });
  assert.equal(acknowledgement.id, "r1");
  assert.ok(["yes", "no"].includes(reports.dodged));
  const post = server.calls[1];
  assert.equal(post.url, "http://x/api/v1/surveys/tax/responses");
  assert.deepEqual(Object.keys(post.body).sort(), ["idempotency_key", "reports", "spec_hash", "token"]);
  assert.deepEqual(post.body.reports, reports);
  assert.equal(post.body.spec_hash, "h1");
});

test("transient failures are retried with the same idempotency key", async () => {
  const server = fakeServer([
    new TypeError("network down"),
    { status: 503, body: null },
    { status: 200, body: { id: "r1" } },
  ]);
  const body = { spec_hash: "h", idempotency_key: "k".repeat(16), reports: { dodged: "no" } };
  const ack = await postResponse("http://x", "tax", body, { fetch: server.fetch, backoffMs: 1 });
  assert.equal(ack.id, "r1");
  assert.equal(server.calls.length, 3);
  assert.ok(server.calls.every((c) => c.body.idempotency_key === "k".repeat(16)));
});

test("refusals are not retried and name the field", async () => {
  const server = fakeServer([{ status: 409, body: { error: { status: 409, field: "token", message: "token: already used" } } }]);
  await assert.rejects(
    postResponse("http://x", "tax", { reports: {} }, { fetch: server.fetch, backoffMs: 1 }),
    (error) => error instanceof SubmitError && error.status === 409 && error.field === "token",
  );
  assert.equal(server.calls.length, 1);
});

test("a server that is down gets the same retries and the same error type as in Python", async () => {
  // fetching the spec: 3 retries by default, then a SubmitError (never a raw TypeError)
  const down = fakeServer(Array.from({ length: 10 }, () => new TypeError("fetch failed")));
  await assert.rejects(submit("http://x", "tax", { dodged: "yes" }, { fetch: down.fetch, backoffMs: 1 }),
    (error) => error instanceof SubmitError && /could not reach http:\/\/x\/api\/v1\/surveys\/tax: fetch failed/.test(error.message));
  assert.equal(down.calls.length, 4);
  // it comes back: the spec is fetched on a retry
  const flaky = fakeServer([new TypeError("fetch failed"), { status: 200, body: { spec, hash: "h1" } }]);
  assert.equal((await fetchSurvey("http://x", "tax", { fetch: flaky.fetch, backoffMs: 1 })).hash, "h1");
});

test("refusals are typed as in Python: 404, 410, 409 and other 4xx", async () => {
  const cases = [[404, SurveyNotFound, null], [410, SurveyClosed, "survey_id"], [409, TokenAlreadyUsed, "token"],
    [422, ResponseRejected, "reports.dodged"]];
  for (const [status, Kind, field] of cases) {
    const server = fakeServer([{ status, body: { error: { status, field, message: `refused ${status}` } } }]);
    await assert.rejects(postResponse("http://x", "tax", { reports: {} }, { fetch: server.fetch, backoffMs: 1 }),
      (error) => error instanceof Kind && error instanceof SubmitError && error.status === status && error.field === field
        && error.message === `refused ${status}`);
    assert.equal(server.calls.length, 1); // a refusal is not retried
  }
});
