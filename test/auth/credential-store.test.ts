/**
 * The credential lookups are gathered (core/auth/credential-store.ts): the lookups that come while
 * one statement is under way go together in the next, each answered with its own row, and a
 * lookup is never answered from a statement sent before it came, so a key revoked before a call
 * came is refused to that call.
 */
import assert from "node:assert/strict";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { issueSecret } from "../../contract/secrets.ts";
import { createCredentialStore, type CredentialStore } from "../../core/auth/credential-store.ts";
import type { SqlRunner, Statements } from "../../core/db/sql.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";

describe("auth: credential lookups gathered into few statements", () => {
  let t: TestCore;
  let cast: AcmeCast;
  let serverId: string;
  let memberKey: { id: string; key: string };
  before(async () => {
    t = await startTestCore();
    cast = await acmeWithMembers(t);
    serverId = (await t.client(ServersService, { session: cast.owner.token }).createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT })).server!
      .id;
    const created = await t.client(AuthService, { session: cast.member.token }).createApiKey({ name: "script", expiry: { case: "expiresInDays", value: 7 } });
    memberKey = { id: created.apiKey!.id, key: created.key };
  });
  after(async () => {
    await t?.close();
  });

  /**
   * The core's statements, recording the lookups each statement carried; a statement sent while
   * held runs, but its rows wait for the test's word, so the lookups that come meanwhile queue.
   */
  function heldStatements() {
    const carried: number[] = [];
    let release: () => void = () => {};
    let held: Promise<void> | undefined;
    const statements: Statements = {
      ...t.deps.statements,
      on(em, options) {
        const query = t.deps.statements.on(em, options);
        const gated: SqlRunner = {
          ...query,
          async rows(statement, decode) {
            carried.push((JSON.parse(String(statement.values[0])) as unknown[]).length);
            const gate = held;
            const rows = await query.rows(statement, decode);
            await gate;
            return rows;
          },
        };
        return gated;
      },
    };
    return {
      statements,
      carried,
      hold() {
        held = new Promise((resolve) => (release = resolve));
      },
      release() {
        held = undefined;
        release();
      },
    };
  }

  const storeOn = (statements: Statements): CredentialStore =>
    createCredentialStore({ statements, em: t.orm.em.fork(), clock: t.clock, sessionIdleSeconds: testConfig.sessionIdleSeconds });
  const session = (token: string) => ({ session: token, apiKey: null });

  it("answers the lookups that came while one statement was under way with one statement, each with its own row", async () => {
    const held = heldStatements();
    const store = storeOn(held.statements);
    held.hold();
    const first = store.user(session(cast.admin.token));
    const queued = [
      store.user(session(cast.owner.token), serverId),
      store.user(session(cast.outsider.token), serverId),
      store.user(session(issueSecret("session").value)),
      store.user(session(cast.owner.token), serverId),
    ];
    const key = store.user({ session: null, apiKey: memberKey.key }, serverId);
    held.release();
    const [owner, outsider, unknown, ownerAgain] = await Promise.all(queued);
    assert.equal((await first)?.caller.user.email, "admin@example.com");
    // The first statement alone, then the four session lookups (three distinct) in one; the API
    // key is another kind, so another statement.
    assert.deepEqual(held.carried.sort(), [1, 1, 3]);
    assert.equal(owner?.caller.user.email, "owner@example.com");
    assert.equal(owner?.scope?.serverId, serverId);
    assert.equal(owner?.scope?.access?.role, "owner");
    assert.equal(owner?.scope?.access?.server.id, serverId);
    assert.equal(outsider?.caller.user.email, "outsider@example.com");
    assert.deepEqual(outsider?.scope, { serverId, access: undefined }, "the outsider has no access to acme's server");
    assert.equal(unknown, null);
    assert.deepEqual(ownerAgain, owner, "the same lookup twice gets the same answer");
    const byKey = await key;
    assert.equal(byKey?.caller.credential.id, memberKey.id);
    assert.equal(byKey?.caller.user.email, "member@example.com");
    assert.equal(byKey?.scope?.access?.role, "member");
  });

  it("refuses a key revoked before the call came, though a statement sent before the revocation is still under way", async () => {
    const created = await t.client(AuthService, { session: cast.admin.token }).createApiKey({ name: "soon revoked", expiry: { case: "expiresInDays", value: 7 } });
    const held = heldStatements();
    const store = storeOn(held.statements);
    const resolve = () => store.user({ session: null, apiKey: created.key });
    held.hold();
    const before = resolve();
    await t.client(AuthService, { session: cast.admin.token }).revokeApiKey({ apiKeyId: created.apiKey!.id });
    const after = resolve();
    held.release();
    assert.equal((await before)?.caller.user.email, "admin@example.com", "the call that came first was looked up before the revocation");
    assert.equal(await after, null, "the call that came after it is refused");
    assert.deepEqual(held.carried, [1, 1]);
  });
});
