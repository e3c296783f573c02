import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { resolveUser } from "../../core/auth/credentials.ts";
import { serverScoped, services } from "../../contract/services.ts";
import { judgeServerRow } from "../../core/access.ts";
import type { Query } from "../../core/db/statements.ts";
import type { DomainError } from "../../core/errors.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";

/**
 * A call about one server (proto option server_scoped: getServer, listPlayers,
 * executeConsoleCommand) reads the caller's access to it in the statement that reads the
 * credential, and its access check takes that row instead of reading it again.
 */
describe("auth: a call about one server reads its access with the credential", () => {
  let t: TestCore;
  let cast: AcmeCast;
  let serverId: string;
  let otherServerId: string;
  before(async () => {
    t = await startTestCore();
    cast = await acmeWithMembers(t);
    const servers = t.client(ServersService, { session: cast.owner.token });
    serverId = (await servers.createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT })).server!.id;
    otherServerId = (await servers.createServer({ organizationSlug: "acme", name: "Creative", game: Game.MINECRAFT })).server!.id;
  });
  after(async () => {
    await t?.close();
  });

  /** The statements core runs through its plain-SQL path while `run` runs. */
  async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
    const seen: string[] = [];
    const on = t.deps.statements.on;
    t.deps.statements.on = (em) => {
      const query = on(em);
      return ((sql, values) => (seen.push(sql), query(sql, values))) as Query;
    };
    try {
      await run();
    } finally {
      t.deps.statements.on = on;
    }
    return seen;
  }

  const readsAccess = (sql: string) => sql.includes("join memberships m");

  it("is marked on the procedures whose first step is that check, outside a transaction, and on no other", () => {
    // A procedure added here must check the server's access first and outside a transaction: the
    // row is read before the call starts and is not the transaction's (core/access.ts).
    const marked = services.flatMap((service) => service.methods.filter(serverScoped).map((method) => `${service.name}.${method.name}`));
    assert.deepEqual(marked.sort(), ["ServersService.ExecuteConsoleCommand", "ServersService.GetServer", "ServersService.ListPlayers"]);
  });

  it("answers with one statement for a session and the server's access", async () => {
    const sql = await statementsOf(() => t.client(ServersService, { session: cast.owner.token }).getServer({ serverId }));
    const access = sql.filter(readsAccess);
    assert.equal(access.length, 1, sql.join("\n---\n"));
    assert.match(access[0], /from sessions s/);
  });

  it("does the same for an API key", async () => {
    const { key } = await t.client(AuthService, { session: cast.admin.token }).createApiKey({ name: "script", expiry: { case: "expiresInDays", value: 7 } });
    const sql = await statementsOf(() => t.client(ServersService, { apiKey: key }).listPlayers({ serverId }));
    const access = sql.filter(readsAccess);
    assert.equal(access.length, 1, sql.join("\n---\n"));
    assert.match(access[0], /from api_keys k/);
  });

  it("refuses as before: an outsider and a server that does not exist are not found, a bad id is invalid", async () => {
    await rejectsWith(t.client(ServersService, { session: cast.outsider.token }).getServer({ serverId }), Code.NotFound);
    await rejectsWith(t.client(ServersService, { session: cast.owner.token }).getServer({ serverId: randomUUID() }), Code.NotFound);
    await rejectsWith(t.client(ServersService, { session: cast.owner.token }).getServer({ serverId: "not-a-uuid" }), Code.InvalidArgument);
    // A member without a grant, by the same path.
    await rejectsWith(t.client(ServersService, { session: cast.member.token }).listPlayers({ serverId }), Code.PermissionDenied);
  });

  it("serves the call's first check on that server only, once", async () => {
    const em = t.orm.em.fork();
    const query = t.deps.statements.on(em);
    const presented = { session: cast.owner.token, apiKey: null };
    const caller = (await resolveUser(t.deps.credentials, query, presented, t.clock.now(), testConfig.sessionIdleSeconds, serverId))!;
    assert.equal(caller.serverAccess?.serverId, serverId);
    assert.equal(caller.serverAccess?.row?.role, "owner");
    assert.equal(caller.serverAccess?.row?.server.id, serverId);

    const use = { action: "view" as const, now: t.clock.now(), plans: testConfig.plans };
    const none = (() => Promise.reject(new Error("the access was read again"))) as unknown as Query;
    const judged = await judgeServerRow(none, caller, { serverId }, use);
    assert.equal(judged.row.server.id, serverId);
    assert.equal(caller.serverAccess, undefined, "taken once");
    // A second check reads the access again, as does a check on another server.
    let read = 0;
    const counting = ((sql: string, values: unknown[]) => (read++, query(sql, values))) as Query;
    await judgeServerRow(counting, caller, { serverId }, use);
    const again = (await resolveUser(t.deps.credentials, query, presented, t.clock.now(), testConfig.sessionIdleSeconds, serverId))!;
    const other = await judgeServerRow(counting, again, { serverId: otherServerId }, use);
    assert.equal(other.row.server.id, otherServerId);
    assert.equal(read, 2);
  });

  it("reads no access for a server the caller cannot reach, and the check refuses it without reading again", async () => {
    const query = t.deps.statements.on(t.orm.em.fork());
    const caller = (await resolveUser(t.deps.credentials, query, { session: cast.outsider.token, apiKey: null }, t.clock.now(), testConfig.sessionIdleSeconds, serverId))!;
    assert.deepEqual(caller.serverAccess, { serverId, row: undefined });
    const none = (() => Promise.reject(new Error("the access was read again"))) as unknown as Query;
    await assert.rejects(judgeServerRow(none, caller, { serverId }, { action: "view", now: t.clock.now(), plans: testConfig.plans }), (error: DomainError) => error.reason === "not_found");
  });
});
