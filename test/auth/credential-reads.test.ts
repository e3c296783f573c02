/**
 * The credential lookups are gathered (core/auth/credential-reads.ts): the lookups that come while
 * one statement is under way go together in the next, each answered with its own row, and a
 * lookup is never answered from a statement sent before it came, so a key revoked before a call
 * came is refused to that call.
 */
import assert from "node:assert/strict";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { hashSecret } from "../../contract/secrets.ts";
import { createCredentialReads } from "../../core/auth/credential-reads.ts";
import { resolveUser } from "../../core/auth/credentials.ts";
import type { Query, Statements } from "../../core/db/statements.ts";
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
    serverId = (await t.client(ServersService, { session: cast.owner.token }).createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT })).server!.id;
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
      on(em) {
        const query = t.deps.statements.on(em);
        return (async (sql, values) => {
          carried.push((JSON.parse(String(values[0])) as unknown[]).length);
          const gate = held;
          const rows = await query(sql, values);
          await gate;
          return rows;
        }) as Query;
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

  it("answers the lookups that came while one statement was under way with one statement, each with its own row", async () => {
    const held = heldStatements();
    const reads = createCredentialReads(held.statements, t.orm.em.fork());
    held.hold();
    const first = reads.session({ hash: hashSecret(cast.admin.token) });
    const owner = { hash: hashSecret(cast.owner.token), serverId };
    const queued = [
      reads.session(owner),
      reads.session({ hash: hashSecret(cast.outsider.token), serverId }),
      reads.session({ hash: hashSecret("ops_no-such-session") }),
      reads.session(owner),
    ];
    const key = reads.apiKey({ hash: hashSecret(memberKey.key), serverId });
    held.release();
    const [ownerRow, outsiderRow, unknown, ownerAgain] = await Promise.all(queued);
    assert.equal((await first)?.email, "admin@example.com");
    // The first statement alone, then the four session lookups (three distinct) in one; the API
    // key is another kind, so another statement.
    assert.deepEqual(held.carried.sort(), [1, 1, 3]);
    assert.equal(ownerRow?.email, "owner@example.com");
    assert.equal(ownerRow?.server_access?.role, "owner");
    assert.equal(ownerRow?.server_access?.server.id, serverId);
    assert.equal(outsiderRow?.email, "outsider@example.com");
    assert.equal(outsiderRow?.server_access, null, "the outsider has no access to acme's server");
    assert.equal(unknown, undefined);
    assert.deepEqual(ownerAgain, ownerRow, "the same lookup twice gets the same row");
    const keyRow = await key;
    assert.equal(keyRow?.id, memberKey.id);
    assert.equal(keyRow?.email, "member@example.com");
    assert.equal(keyRow?.server_access?.role, "member");
  });

  it("refuses a key revoked before the call came, though a statement sent before the revocation is still under way", async () => {
    const created = await t.client(AuthService, { session: cast.admin.token }).createApiKey({ name: "soon revoked", expiry: { case: "expiresInDays", value: 7 } });
    const held = heldStatements();
    const reads = createCredentialReads(held.statements, t.orm.em.fork());
    const query = t.deps.statements.on(t.orm.em.fork());
    const presented = { session: null, apiKey: created.key };
    const resolve = () => resolveUser(reads, query, presented, t.clock.now(), testConfig.sessionIdleSeconds);
    held.hold();
    const before = resolve();
    await t.client(AuthService, { session: cast.admin.token }).revokeApiKey({ apiKeyId: created.apiKey!.id });
    const after = resolve();
    held.release();
    assert.equal((await before)?.user.email, "admin@example.com", "the call that came first was looked up before the revocation");
    assert.equal(await after, null, "the call that came after it is refused");
    assert.deepEqual(held.carried, [1, 1]);
  });
});
