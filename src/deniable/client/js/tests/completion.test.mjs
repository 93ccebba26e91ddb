// The completion twin: the same specs accepted, the same codes and links, the same errors as Python's (the cases
// are tests/client/test_completion.py's, read from the shared file it writes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Completion, SpecError } from "../deniable.js";

const CASES = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/completion.json", import.meta.url), "utf8"));

test("every completion case reads as Python reads it", () => {
  for (const { spec, code, link, error } of CASES) {
    if (error !== null) {
      assert.throws(() => Completion.read(spec), (thrown) => thrown instanceof SpecError && thrown.message === error, JSON.stringify(spec));
      continue;
    }
    const found = Completion.read(spec);
    assert.equal(found.code, code);
    assert.equal(found.link, link);
  }
});
