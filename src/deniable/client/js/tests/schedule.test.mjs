// The schedule twin: the same forms accepted, the same UTC instants, the same errors as Python's (the cases are
// tests/client/test_schedule.py's, read from the shared file it writes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Schedule, SpecError } from "../deniable.js";

const CASES = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/schedule.json", import.meta.url), "utf8"));

test("every schedule case reads as Python reads it", () => {
  for (const { opens, closes, written, error } of CASES) {
    if (error !== null) {
      assert.throws(() => Schedule.read(opens, closes), (thrown) => thrown instanceof SpecError && thrown.message === error);
      continue;
    }
    const schedule = Schedule.read(opens, closes);
    const seen = {};
    if (schedule.opens !== null) seen.opens = schedule.opens.toISOString().replace(/\.\d{3}Z$/, "Z");
    if (schedule.closes !== null) seen.closes = schedule.closes.toISOString().replace(/\.\d{3}Z$/, "Z");
    assert.deepEqual(seen, written);
  }
});

test("the state is not open before opens, closed from closes on", () => {
  const schedule = Schedule.read("2026-12-01T09:00:00+01:00", "2026-12-31T23:00Z");
  assert.equal(schedule.state(new Date("2026-12-01T07:59:59Z")), "not open");
  assert.equal(schedule.state(new Date("2026-12-01T08:00:00Z")), "open");
  assert.equal(schedule.state(new Date("2026-12-31T23:00:00Z")), "closed");
  assert.equal(Schedule.read(null, null).state(), "open");
});
