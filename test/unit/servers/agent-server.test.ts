/** The server a console command or a file operation reads, decoded from the access check's row_to_json (issue 28: no untyped cast). */
import assert from "node:assert/strict";
import { agentServer } from "../../../core/servers/console-methods.ts";
import { RowShapeError } from "../../../core/db/rows.ts";

describe("unit: the server a console command or a file operation reads", () => {
  // As row_to_json(s) writes a servers row: times as text with microseconds, every column present.
  const server = {
    id: "7c0f3f7e-7a41-4d1e-9b51-3f0d7c6e2a10",
    organization_id: "0b7e4a52-3f1a-4a57-8f3e-5b1c2d3e4f50",
    name: "Survival",
    online: true,
    last_seen_at: "2026-11-29T03:00:00.123456+00:00",
    agent_connection_id: "c1",
    agent_boot_id: "5d1e0c2b-8a3f-4f6e-9b7d-2c4a6e8f0a1b",
    agent_console: true,
    agent_lifecycle: false,
    agent_files: "read-only",
    agent_key_hash: "not read",
  };

  it("reads the columns a command or file operation needs, its last heartbeat as a Date", () => {
    assert.deepEqual(agentServer({ server }), {
      id: server.id,
      organizationId: server.organization_id,
      online: true,
      lastSeenAt: new Date("2026-11-29T03:00:00.123Z"),
      agentConnectionId: "c1",
      agentBootId: "5d1e0c2b-8a3f-4f6e-9b7d-2c4a6e8f0a1b",
      agentConsole: true,
      agentLifecycle: false,
      agentFiles: "read-only",
    });
    assert.equal(agentServer({ server: { ...server, last_seen_at: null, agent_connection_id: null } }).lastSeenAt, null);
    assert.equal(agentServer({ server: { ...server, agent_boot_id: null } }).agentBootId, null, "an agent that names no run");
  });

  it("refuses a row of another shape, naming the column, instead of passing undefined or text on as a boolean", () => {
    const fails = (bad: Record<string, unknown>, column: RegExp) =>
      assert.throws(
        () => agentServer({ server: bad }),
        (e: Error) => e instanceof RowShapeError && column.test(e.message),
      );
    fails({ ...server, agent_console: "t" }, /column server: column agent_console: expected a boolean/);
    fails({ ...server, online: undefined }, /column server: column online: expected a boolean, got undefined/);
    fails({ ...server, last_seen_at: "yesterday" }, /column last_seen_at: expected a timestamp/);
  });
});
