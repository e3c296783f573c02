import assert from "node:assert/strict";
import { applyUnifiedEdit, excerpt, lineDiff, maxDiffChars, maxSpanLines } from "../../../core/chat/file-text.ts";

/** A text file as the assistant reads it, the diff a person allows a change by, and a model's unified edit. */
describe("chat: a file's text for the assistant", () => {
  it("reads whole lines within the budget, says where to go on, and cuts a line too long alone", () => {
    const text = "a\nbb\nccc\n";
    assert.deepEqual(excerpt(text), { content: text, startLine: 1, endLine: 3, totalLines: 3, truncated: false, lineCut: false });
    assert.deepEqual(
      excerpt(text, 2, 5),
      { content: "bb\n", startLine: 2, endLine: 2, totalLines: 3, truncated: true, lineCut: false },
      "a line break counts as JSON writes it",
    );
    assert.deepEqual(excerpt(text, 9), { content: "", startLine: 9, endLine: 8, totalLines: 3, truncated: false, lineCut: false });
    assert.deepEqual(excerpt("no final newline", 1).totalLines, 1);
    assert.deepEqual(excerpt("").totalLines, 0);
    const long = excerpt(`${'"'.repeat(50)}\n`, 1, 20);
    assert.deepEqual([long.content, long.lineCut, long.truncated], ['"'.repeat(10), true, true], "quotes take two characters each in JSON");
    assert.equal(excerpt("😀😀😀", 1, 3).content, "😀", "never half a surrogate pair");
  });

  it("diffs lines with 3 lines of context, counting what is added and removed", async () => {
    const before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    const shown = await lineDiff("server.properties", before, before.replace("5\n", "five\n"));
    assert.deepEqual(shown, {
      diff: "--- a/server.properties\n+++ b/server.properties\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
      added: 1,
      removed: 1,
    });
    assert.match((await lineDiff("a", "x\n", "x"))!.diff, /\\ No newline at end of file/, "a final line break that goes is shown");
  });

  it("diffs only the span that changed, numbered in the whole file, however long the file", async () => {
    const many = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}\n`).join("");
    const before = many("line", 200_000);
    const started = performance.now();
    const shown = await lineDiff("latest.log", before, before.replace("line150000\n", "changed\n"));
    assert.ok(performance.now() - started < 1_000, "a few changed lines cost what they are");
    assert.equal(shown!.diff.split("\n")[2], "@@ -149998,7 +149998,7 @@");
    assert.match(shown!.diff, /\n-line150000\n\+changed\n line150001\n line150002\n line150003\n$/);
  });

  it("does not show a diff larger than a person can review", async () => {
    const many = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}\n`).join("");
    assert.equal(await lineDiff("span", `a\n${many("x", maxSpanLines)}b\n`, `A\n${many("x", maxSpanLines)}B\n`), undefined, "changes too far apart");
    assert.equal(await lineDiff("edits", many("a", 300), many("b", 300)), undefined, "too many lines changed");
    const wide = (c: string) => `${c.repeat(maxDiffChars)}\n`;
    assert.equal(await lineDiff("wide", wide("a"), wide("b")), undefined, "too many characters");
  });

  it("applies a unified edit only where its context matches, and says why not", () => {
    const before = "spawn: true\nhomes: 3\n";
    assert.deepEqual(applyUnifiedEdit(before, "@@ -1,2 +1,2 @@\n spawn: true\n-homes: 3\n+homes: 5\n"), { after: "spawn: true\nhomes: 5\n" });
    assert.deepEqual(applyUnifiedEdit(before, "--- a/c.yml\n+++ b/c.yml\n@@ -2 +2 @@\n-homes: 3\n+homes: 4\n"), { after: "spawn: true\nhomes: 4\n" });
    const problem = (patch: string) => (applyUnifiedEdit(before, patch) as { problem: string }).problem;
    assert.match(problem("@@ -1,2 +1,2 @@\n spawn: false\n-homes: 3\n+homes: 5\n"), /does not apply to the file as it is now/);
    assert.match(problem("@@ -1,5 +1,5 @@\n-homes: 3\n+homes: 5\n"), /not a unified diff that can be read/);
    assert.match(problem("homes: 5"), /no hunk/);
    assert.match(problem("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n"), /one file/);
  });
});
