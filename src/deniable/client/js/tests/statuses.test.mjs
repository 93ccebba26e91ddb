import { test } from "node:test";
import assert from "node:assert/strict";
import {
  Outbox, MemoryStorage, STATUS_TABLE, SubmitError, RetryLater, NoWaveOpen, QuotaFull, TokenAlreadyUsed, WaveClosed, StaleSpec,
  classify, retryAfterSeconds, submit,
} from "../deniable.js";

const spec = { id: "tax", title: "Taxes", questions: [{ id: "dodged", type: "yes_no", text: "Dodged?" }] };

function fakeServer(responses) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    calls.push({ url, method: init.method ?? "GET" });
    const next = responses.shift();
    if (next instanceof Error) throw next;
    const headers = new Map(Object.entries(next.headers ?? {}));
    return { ok: next.status < 400, status: next.status, json: async () => next.body, headers: { get: (name) => headers.get(name) ?? null } };
  };
  return { fetch, calls };
}

const answer = (row) => ({ status: row.status, body: { error: { status: row.status, field: row.field, message: row.meaning } } });

for (const row of STATUS_TABLE.filter((r) => r.status >= 400)) {
  test(`${row.status}${row.field ? ` on ${row.field}` : ""}: ${row.retry ? "kept and sent again" : "final"} (${row.kind})`, async () => {
    const outbox = new Outbox({ storage: new MemoryStorage() });
    const server = fakeServer([{ status: 200, body: { spec, hash: "h1" } }, answer(row), answer(row)]);
    const sending = submit("http://x", "tax", { dodged: "yes" }, { fetch: server.fetch, outbox, retries: 1, backoffMs: 1 });
    if (row.retry) {
      const result = await sending;
      assert.equal(result.queued, true);
      assert.equal(outbox.entries().length, 1);
      // still no final answer at the flush: kept; then stored: gone
      assert.deepEqual(await outbox.flush({ fetch: fakeServer([answer(row)]).fetch, retries: 0 }), { sent: [], refused: [], kept: 1 });
      const stored = await outbox.flush({ fetch: fakeServer([{ status: 201, body: { id: "r1" } }]).fetch, retries: 0 });
      assert.deepEqual(stored, { sent: [{ id: "r1" }], refused: [], kept: 0 });
    } else {
      await assert.rejects(sending, (error) => error instanceof SubmitError && error.kind === row.kind && !error.retryable);
      assert.deepEqual(outbox.entries(), []);
      assert.equal(server.calls.length, 2); // a final answer is not sent again
    }
  });
}

test("409 is told apart by its field: a spent token, or no wave open", () => {
  assert.equal(classify(409, "token").kind, "token_used");
  assert.equal(classify(409, "wave").kind, "no_wave_open");
  assert.equal(classify(410, "wave").kind, "wave_closed");
  assert.equal(classify(404, "spec_hash").kind, "stale_spec");
  assert.deepEqual(classify(599), { kind: "retry_later", retry: true });
  assert.deepEqual(classify(418), { kind: "refused", retry: false });
});

test("errors are typed by kind", async () => {
  for (const [row, Kind] of [[{ status: 409, field: "wave" }, NoWaveOpen], [{ status: 409, field: "quota" }, QuotaFull], [{ status: 409, field: "token" }, TokenAlreadyUsed],
    [{ status: 410, field: "wave" }, WaveClosed], [{ status: 404, field: "spec_hash" }, StaleSpec], [{ status: 507, field: "db" }, RetryLater]]) {
    const server = fakeServer([{ status: 200, body: { spec, hash: "h1" } }, answer({ ...row, meaning: "m" })]);
    await assert.rejects(submit("http://x", "tax", { dodged: "no" }, { fetch: server.fetch, retries: 0 }), Kind);
  }
});

test("Retry-After is read: waited when short, and a long one ends the tries at once (the outbox keeps it)", async () => {
  assert.equal(retryAfterSeconds("55"), 55);
  assert.ok(Math.abs(retryAfterSeconds(new Date(Date.now() + 10_000).toUTCString()) - 10) <= 1.5);
  assert.equal(retryAfterSeconds("soon"), null);
  const busy = { status: 503, headers: { "Retry-After": "55" }, body: { error: { status: 503, field: "db", message: "busy" } } };
  const outbox = new Outbox({ storage: new MemoryStorage() });
  const server = fakeServer([{ status: 200, body: { spec, hash: "h1" } }, busy, busy, busy]);
  const started = Date.now();
  const result = await submit("http://x", "tax", { dodged: "yes" }, { fetch: server.fetch, outbox, retries: 3, backoffMs: 1 });
  assert.equal(result.queued, true);
  assert.equal(server.calls.length, 2); // no retry inside 55 s: kept for a later flush instead
  assert.ok(Date.now() - started < 5000);
  const short = { ...busy, headers: { "Retry-After": "1" } };
  const again = fakeServer([{ status: 200, body: { spec, hash: "h1" } }, short, { status: 201, body: { id: "r2" } }]);
  const waited = Date.now();
  const sent = await submit("http://x", "tax", { dodged: "yes" }, { fetch: again.fetch, retries: 2, backoffMs: 1 });
  assert.deepEqual(sent.acknowledgement, { id: "r2" });
  assert.ok(Date.now() - waited >= 900); // the server's 1 s, not the 1 ms backoff
});
