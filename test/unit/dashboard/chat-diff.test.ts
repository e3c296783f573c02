import assert from "node:assert/strict";
import { diffLines } from "../../../edge/dashboard/chat-views.ts";

/** A file change in the Allow box: each line of its diff with its kind, nothing in it acting on the page. */
describe("dashboard: a file change's diff", () => {
  it("shows a diff's lines with their kind, controls in them as escapes", () => {
    assert.deepEqual(diffLines("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+\u202eb\t\n"), [
      { kind: "head", text: "--- a/x" },
      { kind: "head", text: "+++ b/x" },
      { kind: "hunk", text: "@@ -1 +1 @@" },
      { kind: "del", text: "-a" },
      { kind: "add", text: "+\\u202eb\\x09" },
    ]);
  });
});
