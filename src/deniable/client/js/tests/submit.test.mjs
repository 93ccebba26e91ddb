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

import { MemoryStorage, Outbox } from "../deniable.js";

test("with no connection, submit keeps the randomized body in the outbox and a flush delivers it once", async () => {
  const storage = new MemoryStorage();
  const outbox = new Outbox({ storage });
  const offline = fakeServer([{ status: 200, body: { spec, hash: "h1" } }, ...Array(3).fill(new TypeError("fetch failed"))]);
  const result = await submit("http://x", "tax", { dodged: "yes" }, { fetch: offline.fetch, token: "t", outbox, retries: 2, backoffMs: 1 });
  assert.equal(result.queued, true);
  assert.equal(result.acknowledgement, null);
  const [entry] = outbox.entries();
  const sentBody = offline.calls[1].body;
  assert.deepEqual(entry, { baseUrl: "http://x", surveyId: "tax", body: sentBody }); // exactly what would be sent
  assert.deepEqual(Object.keys(entry.body).sort(), ["idempotency_key", "reports", "spec_hash", "token"]);
  assert.deepEqual(entry.body.reports, result.reports); // reports only: no true answer is kept
  assert.equal(storage.getItem("deniable-outbox"), JSON.stringify([entry]));

  // still offline: the entry stays
  const stillOffline = fakeServer([new TypeError("fetch failed")]);
  assert.deepEqual(await outbox.flush({ fetch: stillOffline.fetch, retries: 0 }), { sent: [], refused: [], kept: 1 });

  const online = fakeServer([{ status: 201, body: { id: "r1" } }]);
  const flushed = await outbox.flush({ fetch: online.fetch, retries: 0 });
  assert.deepEqual(flushed, { sent: [{ id: "r1" }], refused: [], kept: 0 });
  assert.deepEqual(online.calls[0].body, sentBody); // the same key: one response however often it is sent
  assert.equal(storage.getItem("deniable-outbox"), null); // nothing left behind
});

test("the outbox drops a body refused for good, keeps one the server could not take yet", async () => {
  const outbox = new Outbox({ storage: new MemoryStorage() });
  const body = (key) => ({ spec_hash: "h", idempotency_key: key.repeat(16), reports: { dodged: "no" } });
  await outbox.add("http://x", "tax", body("a"));
  await outbox.add("http://x", "tax", body("b"));
  await outbox.add("http://x", "tax", body("a")); // the same key twice is one entry
  assert.equal(outbox.entries().length, 2);
  const server = fakeServer([
    { status: 410, body: { error: { status: 410, field: "survey_id", message: "closed" } } },
    { status: 503, body: null },
  ]);
  const result = await outbox.flush({ fetch: server.fetch, retries: 0 });
  assert.equal(result.refused.length, 1);
  assert.ok(result.refused[0] instanceof SurveyClosed);
  assert.equal(result.kept, 1);
  assert.equal(outbox.entries()[0].body.idempotency_key, "b".repeat(16));
});

test("errors other than no connection are not queued", async () => {
  const outbox = new Outbox({ storage: new MemoryStorage() });
  const server = fakeServer([
    { status: 200, body: { spec, hash: "h1" } },
    { status: 409, body: { error: { status: 409, field: "token", message: "token: already used" } } },
  ]);
  await assert.rejects(submit("http://x", "tax", { dodged: "no" }, { fetch: server.fetch, outbox }), TokenAlreadyUsed);
  assert.deepEqual(outbox.entries(), []);
});

test("an outbox takes a storage or {storage, key}, and refuses a storage of the wrong shape", () => {
  const storage = new MemoryStorage();
  const direct = new Outbox(storage);
  assert.equal(direct.storage, storage);
  assert.equal(new Outbox({ storage, key: "k" }).key, "k");
  assert.throws(() => new Outbox({ storage: { getItem() {}, setItem() {} } }), /no removeItem/);
  assert.throws(() => new Outbox({ storage: new Map() }), /no getItem, setItem, removeItem/);
  assert.throws(() => new Outbox({ storage, key: "" }), /key must be/);
});

test("submit sends a split ballot with the arms the app showed", async () => {
  const split = { id: "sb", title: "Split", questions: [{ id: "dodged", type: "yes_no", text: "Dodged?",
    split_ballot: { direct: "1/4" }, privacy: { design: "forced_response", truth: "1/2", yes: "1/4", no: "1/4" } }] };
  const server = fakeServer([{ status: 200, body: { spec: split, hash: "h1" } }, { status: 201, body: { id: "r1" } }]);
  const { reports } = await submit("http://x", "sb", { dodged: "yes" }, { fetch: server.fetch, arms: { dodged: "direct" } });
  assert.deepEqual(reports.dodged, { arm: "direct", report: "yes" });
  assert.deepEqual(server.calls[1].body.reports.dodged, { arm: "direct", report: "yes" });
  const missing = fakeServer([{ status: 200, body: { spec: split, hash: "h1" } }]);
  await assert.rejects(submit("http://x", "sb", { dodged: "yes" }, { fetch: missing.fetch }), /pass arms/);
});
