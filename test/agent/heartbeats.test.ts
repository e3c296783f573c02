import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { AgentCaller } from "../../core/context.ts";
import { createHeartbeats } from "../../core/agents/heartbeats.ts";
import { beatState } from "../../core/agents/presence.ts";
import type { SqlRunner } from "../../core/db/sql.ts";
import { createWorld, type World } from "../game-oauth/fixture.ts";

const limits = { gameOAuthClients: 5, notes: 5, assistantQueriesPerDay: 5, assistantToolActionsPerDay: 5, emailsPerHour: 30 };
const plans = { free: { ...limits, servers: 3 }, small: { ...limits, servers: 2 } };

/**
 * Heartbeats written in batches (core/agents/heartbeats.ts): many streams' heartbeats in one
 * statement on the real database, each answered as a heartbeat of its own would have been — seen,
 * frozen beyond the plan, taken over by another stream, or its key gone.
 */
describe("agents: heartbeats in batches", function () {
  this.timeout(60_000);
  let w: World;
  /** The servers, oldest first, each with the stream that holds it. */
  const servers: Array<{ id: string; keyHash: string; connectionId: string }> = [];
  let statements = 0;
  let failing = false;
  let query: SqlRunner;

  const sql = <T>(text: string, params: unknown[] = []) => w.t.orm.em.fork().getConnection().execute<T[]>(text, params);
  const callerOf = (server: { id: string; keyHash: string }): AgentCaller =>
    ({
      kind: "agent",
      server: { id: server.id, organizationId: w.organizationId, organizationSlug: "acme", name: "S", game: "minecraft" },
      keyHash: server.keyHash,
    }) as AgentCaller;

  before(async () => {
    w = await createWorld({ plans, defaultPlan: "free" });
    for (const name of ["Oldest", "Middle", "Newest"]) {
      const { id } = await w.createServer(name, { connect: false });
      const connectionId = randomUUID();
      const [{ agent_key_hash }] = await sql<{ agent_key_hash: string }>(
        `update servers set agent_connection_id = ?, online = true, last_seen_at = now() - interval '1 hour' where id = ? returning agent_key_hash`,
        [connectionId, id],
      );
      servers.push({ id, keyHash: agent_key_hash, connectionId });
    }
    // Counts the statements that reach the database, and can make them fail.
    const real = w.t.deps.statements.on(w.t.orm.em.fork());
    query = {
      ...real,
      rows: (...args: Parameters<SqlRunner["rows"]>) => {
        statements++;
        if (failing) return Promise.reject(new Error("the database went away"));
        return real.rows(...args);
      },
    } as SqlRunner;
  });
  after(() => w?.close());

  it("writes the heartbeats that arrive together in one statement, each with its own answer", async () => {
    await sql(`update organizations set plan = 'small' where id = ?`, [w.organizationId]);
    const heartbeats = createHeartbeats({ query, clock: w.t.clock, gatherMs: 20 });
    const [oldest, middle, newest] = servers;
    statements = 0;
    const before = w.t.clock.now().getTime();
    const answers = await Promise.all([
      heartbeats.beat(callerOf(oldest), oldest.connectionId),
      heartbeats.beat(callerOf(middle), middle.connectionId),
      heartbeats.beat(callerOf(newest), newest.connectionId),
      // A stream another one took the server from, and one whose key was regenerated.
      heartbeats.beat(callerOf(oldest), randomUUID()),
      heartbeats.beat(callerOf({ id: middle.id, keyHash: "0".repeat(64) }), middle.connectionId),
      // The same stream twice (an agent that beats too fast): written once, both answered.
      heartbeats.beat(callerOf(middle), middle.connectionId),
    ]);
    assert.deepEqual(
      answers.map((found) => beatState({ plans }, found)),
      ["ok", "ok", { limit: 2 }, "superseded", "revoked", "ok"],
    );
    assert.equal(statements, 1, "one statement for the six");
    const seen = await sql<{ id: string; last_seen_at: Date }>(`select id, last_seen_at from servers where organization_id = ?`, [w.organizationId]);
    for (const server of seen) assert.ok(new Date(server.last_seen_at).getTime() >= before, "each held server seen now (it was an hour ago)");
    await heartbeats.close();
  });

  it("fails every heartbeat of a batch that cannot be written, and the next batch is written again", async () => {
    const heartbeats = createHeartbeats({ query, clock: w.t.clock, gatherMs: 20 });
    const [oldest, middle] = servers;
    failing = true;
    const failed = await Promise.allSettled([heartbeats.beat(callerOf(oldest), oldest.connectionId), heartbeats.beat(callerOf(middle), middle.connectionId)]);
    assert.deepEqual(
      failed.map((r) => r.status === "rejected" && (r.reason as Error).message),
      ["the database went away", "the database went away"],
    );
    failing = false;
    assert.equal(beatState({ plans }, await heartbeats.beat(callerOf(middle), middle.connectionId)), "ok");
    await heartbeats.close();
  });
});
