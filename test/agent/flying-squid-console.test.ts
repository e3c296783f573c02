import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runScript } from "../support/process.ts";
import type { ConsoleRun } from "../../agent/client.ts";

const main = fileURLToPath(new URL("../support/squid-console-main.ts", import.meta.url));

/** Runs console commands at once on a real flying-squid (test/support/squid-console-main.ts). */
async function onSquid(runs: Array<{ command: string; abortAfterMs?: number }>): Promise<{ results: ConsoleRun[]; live: string[] }> {
  const { code, stdout, stderr } = await runScript(main, [JSON.stringify(runs)]);
  assert.equal(code, 0, stdout + stderr);
  return JSON.parse(/^result: (.*)$/m.exec(stdout)![1]);
}

describe("agent: the flying-squid plugin's console", function () {
  this.timeout(60_000);

  it("runs commands as flying-squid's console does and returns what each printed, and only that", async () => {
    const { results, live } = await onSquid([
      { command: "version" },
      { command: "ping" },
      { command: "no-such-command" },
      { command: "slow" },
      { command: "crash" },
      { command: "hang", abortAfterMs: 200 },
    ]);
    assert.deepEqual(results, [
      // A command's return value is printed, as flying-squid's console prints it.
      { success: true, output: ["[INFO]: This server is running flying-squid version 1.21.4"] },
      { success: true, output: ["[INFO]: pong!"] },
      // The game's own "unknown command" still ran.
      { success: true, output: ["[ERROR]: Command not found"] },
      // Output after an await is the command's; the player's line printed meanwhile is not.
      { success: true, output: ["[INFO]: slow done"] },
      { success: false, output: ["[ERROR]: the command failed: boom"], error: "the command failed: boom" },
      // A command that never ends answers when Outpost stops waiting, with what it printed so far.
      { success: true, output: ["[INFO]: started"] },
    ]);
    // The live console has every line, without colour escapes, and nothing once closed.
    assert.ok(live.includes("[INFO]: a player did something"), JSON.stringify(live));
    for (const line of ["[INFO]: pong!", "[INFO]: slow done", "[ERROR]: Command not found"]) assert.ok(live.includes(line), line);
    assert.ok(!live.some((line) => line.includes("\x1b") || line.includes("after close")), JSON.stringify(live));
  });
});
