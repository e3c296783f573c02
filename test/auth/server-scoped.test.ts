import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { serverScoped, services } from "../../contract/services.ts";
import { judgeServerRow } from "../../core/access.ts";
import type { SqlRunner } from "../../core/db/sql.ts";
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
    t.deps.statements.on = (em, options) => {
      const query = on(em, options);
      return {
        rows: (statement, decode) => (seen.push(statement.text), query.rows(statement, decode)),
        one: (statement, decode) => (seen.push(statement.text), query.one(statement, decode)),
        run: (statement) => (seen.push(statement.text), query.run(statement)),
      } satisfies SqlRunner;
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
    const files = [
      "CreateDirectory",
      "DeleteFile",
      "ListFileHistory",
      "ListFiles",
      "ListPlugins",
      "MoveFile",
      "ReadFile",
      "RestoreFileVersion",
      "SearchFiles",
      "SetPluginEnabled",
      "WriteFile",
    ];
    const lifecycle = ["StartServer", "StopServer", "RestartServer", "KillServer"];
    const expected = ["ExecuteConsoleCommand", "GetConsoleCommand", "GetServer", "GetServerStats", "ListPlayers", ...files, ...lifecycle].map(
      (name) => `ServersService.${name}`,
    );
    assert.deepEqual(marked.sort(), expected.sort());
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

  it("hands the call's server scope to the access check, which reads nothing more; without it the check reads", async () => {
    const found = (await t.deps.credentials.user({ session: cast.owner.token, apiKey: null }, serverId))!;
    assert.equal(found.scope?.serverId, serverId);
    assert.equal(found.scope?.access?.role, "owner");
    assert.equal(found.scope?.access?.server.id, serverId);

    const use = { action: "view" as const, now: t.clock.now(), plans: testConfig.plans };
    const none: SqlRunner = {
      rows: () => Promise.reject(new Error("the access was read again")),
      one: () => Promise.reject(new Error("the access was read again")),
      run: () => Promise.reject(new Error("written")),
    };
    const judged = await judgeServerRow(none, found.caller, { serverId }, use, found.scope);
    assert.equal(judged.row.server.id, serverId);
    // The caller is not changed by a check: a check without the scope, or on another server, reads.
    let read = 0;
    const query = t.deps.statements.on(t.orm.em.fork());
    const counting: SqlRunner = { ...query, one: (statement, decode) => (read++, query.one(statement, decode)) };
    await judgeServerRow(counting, found.caller, { serverId }, use);
    const other = await judgeServerRow(counting, found.caller, { serverId: otherServerId }, use, found.scope);
    assert.equal(other.row.server.id, otherServerId);
    assert.equal(read, 2);
  });

  it("reads no access for a server the caller cannot reach, and the check refuses it without reading again", async () => {
    const found = (await t.deps.credentials.user({ session: cast.outsider.token, apiKey: null }, serverId))!;
    assert.deepEqual(found.scope, { serverId, access: undefined });
    const none: SqlRunner = {
      rows: () => Promise.reject(new Error("read")),
      one: () => Promise.reject(new Error("the access was read again")),
      run: () => Promise.reject(new Error("written")),
    };
    await assert.rejects(
      judgeServerRow(none, found.caller, { serverId }, { action: "view", now: t.clock.now(), plans: testConfig.plans }, found.scope),
      (error: DomainError) => error.reason === "not_found",
    );
  });
});
