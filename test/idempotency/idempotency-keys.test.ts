/**
 * Idempotency keys through the HTTP API and the Connect API of a whole Outpost, with a game
 * server's agent (the real agent library) whose console takes 200 ms per command and records
 * each one it gets: a retried request with the same key never runs twice, whoever sends it and
 * however many at once.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { accountKey } from "../support/wrapped-server.ts";
import { startAgent, PlayerAuth, type Agent } from "../../agent/client.ts";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { ExecuteConsoleCommandRequestSchema, ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { requestHashOf } from "../../core/idempotency/idempotency-interceptor.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe("idempotency keys: a retried mutation runs once", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  let key: string;
  let serverId: string;
  let agent: Agent;
  /** Each command as the console got it. */
  const ran: string[] = [];

  const post = async (path: string, body: unknown, idempotencyKey?: string) => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json", ...(idempotencyKey !== undefined && { "idempotency-key": idempotencyKey }) },
      body: JSON.stringify(body),
    });
    return { status: res.status, replayed: res.headers.get("idempotent-replayed") === "true", body: (await res.json()) as Json };
  };
  const rows = async (sql: string, params: unknown[] = []) => (await t.outpost.runtime.orm.em.fork().execute(sql, params)) as Json[];

  before(async () => {
    t = await startTestOutpost();
    key = await accountKey(t.baseUrl, "owner@example.com");
    assert.equal((await post("organizations/createOrganization", { name: "Acme", slug: "acme" })).status, 200);
    const created = await post("servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });
    serverId = created.body.server.id;
    agent = startAgent({
      url: t.baseUrl,
      key: created.body.agentKey,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      console: async (command) => {
        ran.push(command);
        await sleep(200);
        return { success: true, output: [`done: ${command}`] };
      },
    });
    await agent.connected(10_000);
  });
  after(async () => {
    await agent?.stop();
    await t?.close();
  });

  it("runs a console command once for 10 callers sending one key at once, and all get its requestId", async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => post("servers/executeConsoleCommand", { serverId, command: "give Steve diamond 64" }, "purchase-1")),
    );
    assert.deepEqual(
      answers.map((a) => a.status),
      Array(10).fill(200),
      JSON.stringify(answers.map((a) => a.body)),
    );
    assert.deepEqual(ran, ["give Steve diamond 64"]);
    const [first] = answers;
    assert.match(first.body.requestId, /^[0-9a-f-]{36}$/);
    for (const answer of answers) assert.deepEqual(answer.body, first.body);
    assert.equal(answers.filter((a) => !a.replayed).length, 1, "one answer is the run's, nine are replays");

    // A retry later: the same answer again, still without running.
    const later = await post("servers/executeConsoleCommand", { serverId, command: "give Steve diamond 64" }, "purchase-1");
    assert.equal(later.status, 200);
    assert.equal(later.replayed, true);
    assert.deepEqual(later.body, first.body);
    assert.deepEqual(ran, ["give Steve diamond 64"]);
    // Without a key, the same command is a new request and runs.
    assert.equal((await post("servers/executeConsoleCommand", { serverId, command: "give Steve diamond 64" })).status, 200);
    assert.equal(ran.length, 2);
  });

  it("answers 422 idempotency_key_reused for the key with another body or procedure, and runs neither", async () => {
    assert.equal((await post("servers/executeConsoleCommand", { serverId, command: "say first" }, "reuse-1")).status, 200);
    const ranBefore = ran.length;
    const otherBody = await post("servers/executeConsoleCommand", { serverId, command: "say second" }, "reuse-1");
    assert.equal(otherBody.status, 422);
    assert.equal(otherBody.body.reason, "idempotency_key_reused");
    assert.match(otherBody.body.message, /different request/);
    const otherProcedure = await post("organizations/createOrganization", { name: "Other", slug: "other" }, "reuse-1");
    assert.equal(otherProcedure.status, 422);
    assert.equal(ran.length, ranBefore);
    assert.deepEqual(await rows(`select 1 from organizations where slug = 'other'`), []);
  });

  it("keys are the credential's: the same user's session has keys of its own, and may not get what its API key was answered", async () => {
    const signIn = await fetch(`${t.baseUrl}/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://localhost:3000" },
      body: JSON.stringify({ email: "owner@example.com", password: "a long password" }),
    });
    assert.equal(signIn.status, 200);
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0];
    // The key "reuse-1" ran a console command for the API key; for the session it is unused.
    const res = await fetch(`${t.baseUrl}/api/http/servers/executeConsoleCommand`, {
      method: "POST",
      headers: { cookie, origin: "http://localhost:3000", "content-type": "application/json", "idempotency-key": "reuse-1" },
      body: JSON.stringify({ serverId, command: "say first" }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("idempotent-replayed"), null);
  });

  it("keys are the caller's: another user's same key is their own request", async () => {
    const otherKey = await accountKey(t.baseUrl, "other@example.com");
    const res = await fetch(`${t.baseUrl}/api/http/organizations/createOrganization`, {
      method: "POST",
      headers: { "x-api-key": otherKey, "content-type": "application/json", "idempotency-key": "reuse-1" },
      body: JSON.stringify({ name: "Theirs", slug: "theirs" }),
    });
    assert.equal(res.status, 200);
  });

  it("forgets the key of a request refused before it acted, so its retry runs", async () => {
    const taken = await post("organizations/createOrganization", { name: "Acme again", slug: "acme" }, "org-1");
    assert.equal(taken.status, 409);
    assert.deepEqual(await rows(`select 1 from idempotency_keys where key = 'org-1'`), []);
    const created = await post("organizations/createOrganization", { name: "Globex", slug: "globex" }, "org-1");
    assert.equal(created.status, 200);
    const retried = await post("organizations/createOrganization", { name: "Globex", slug: "globex" }, "org-1");
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.equal(retried.replayed, true);
    assert.deepEqual(retried.body, created.body);
  });

  it("replays an answer holding a secret (a new server's agent key), which is sealed at rest", async () => {
    const body = { organizationSlug: "acme", name: "Creative", game: "minecraft" };
    const created = await post("servers/createServer", body, "server-1");
    assert.equal(created.status, 200);
    const retried = await post("servers/createServer", body, "server-1");
    assert.deepEqual([retried.status, retried.replayed], [200, true]);
    assert.equal(retried.body.agentKey, created.body.agentKey);
    assert.equal((await rows(`select 1 from servers where name = 'Creative'`)).length, 1);
    const [kept] = await rows(`select response from idempotency_keys where key = 'server-1'`);
    assert.ok(!Buffer.from(kept.response).includes(Buffer.from(created.body.agentKey)), "the agent key is stored in the clear");
  });

  it("refuses a key that is empty, too long or not printable ASCII, before anything runs", async () => {
    const ranBefore = ran.length;
    for (const bad of ["", "k".repeat(256), "schlüssel"]) {
      const res = await fetch(`${t.baseUrl}/api/http/servers/executeConsoleCommand`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json", "idempotency-key": Buffer.from(bad).toString("latin1") },
        body: JSON.stringify({ serverId, command: "say bad key" }),
      });
      assert.equal(res.status, 400, bad);
      assert.match(((await res.json()) as Json).message, /Idempotency-Key: must be 1 to 255 printable ASCII characters/);
    }
    assert.equal((await post("servers/executeConsoleCommand", { serverId, command: "say ok" }, "k".repeat(255))).status, 200);
    assert.equal(ran.length, ranBefore + 1);
  });

  it("queries ignore the header (nothing is kept)", async () => {
    const res = await fetch(`${t.baseUrl}/api/http/servers/listServers?organizationSlug=acme`, { headers: { "x-api-key": key, "idempotency-key": "query-1" } });
    assert.equal(res.status, 200);
    assert.deepEqual(await rows(`select 1 from idempotency_keys where key = 'query-1'`), []);
  });

  it("works the same on the Connect API, where a reused key is invalid_argument with its reason", async () => {
    const url = `${t.baseUrl}/api/rpc/${ServersService.typeName}/ExecuteConsoleCommand`;
    const call = (command: string) =>
      fetch(url, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json", "idempotency-key": "rpc-1" },
        body: JSON.stringify({ serverId, command }),
      });
    const ranBefore = ran.length;
    const [a, b] = await Promise.all([call("say rpc"), call("say rpc")]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    // Connect clients read the answer by its content type: the replay has the first's.
    assert.equal(b.headers.get("content-type"), a.headers.get("content-type"));
    assert.deepEqual(await a.json(), await b.json());
    assert.equal(ran.length, ranBefore + 1);
    const reused = await call("say something else");
    assert.equal(reused.status, 400);
    const error = (await reused.json()) as Json;
    assert.equal(error.code, "invalid_argument");
    assert.equal(error.details[0].debug.reason, "idempotency_key_reused");
  });

  it("gives a retry of a request whose instance stopped mid-way outcome_unknown, never a second run", async () => {
    const [{ id: userId }] = await rows(`select id from users where email = 'owner@example.com'`);
    const request = create(ExecuteConsoleCommandRequestSchema, { serverId, command: "say lost" });
    const hash = requestHashOf(ServersService.method.executeConsoleCommand, request);
    const procedure = `${ServersService.typeName}/ExecuteConsoleCommand`;
    const longAgo = new Date(Date.now() - 11 * 60_000);
    const [{ id: credentialId }] = await rows(`select id from api_keys where user_id = ?`, [userId]);
    await rows(`insert into idempotency_keys (user_id, credential_id, key, procedure, request_hash, created_at) values (?, ?, 'lost-1', ?, ?, ?)`, [
      userId,
      credentialId,
      procedure,
      hash,
      longAgo,
    ]);
    const ranBefore = ran.length;
    const retried = await post("servers/executeConsoleCommand", { serverId, command: "say lost" }, "lost-1");
    assert.equal(retried.status, 504);
    assert.equal(retried.body.reason, "outcome_unknown");
    assert.match(retried.body.message, /did not finish/);
    assert.equal(ran.length, ranBefore);
    const again = await post("servers/executeConsoleCommand", { serverId, command: "say lost" }, "lost-1");
    assert.deepEqual([again.status, again.replayed], [504, true]);
  });

  it("answers a request whose answer cannot be kept, and never runs it again for a retry", async () => {
    // The database refuses to keep this one key's answer (as a failing connection would).
    await rows(`create function refuse_kept_answer() returns trigger language plpgsql as $$
                begin raise exception 'refused for the test'; end $$`);
    await rows(`create trigger refuse_kept_answer before update on idempotency_keys for each row
                when (new.key = 'unkept-1' and new.response is not null) execute function refuse_kept_answer()`);
    const ranBefore = ran.length;
    const answered = await post("servers/executeConsoleCommand", { serverId, command: "say unkept" }, "unkept-1");
    assert.equal(answered.status, 200);
    assert.equal(answered.body.success, true);
    assert.equal(ran.length, ranBefore + 1);
    // Its claim stays running; once abandoned, a retry is told the outcome is unknown.
    await rows(`update idempotency_keys set created_at = created_at - interval '11 minutes' where key = 'unkept-1'`);
    const retried = await post("servers/executeConsoleCommand", { serverId, command: "say unkept" }, "unkept-1");
    assert.deepEqual([retried.status, retried.body.reason], [504, "outcome_unknown"]);
    assert.equal(ran.length, ranBefore + 1);
    await rows(`drop trigger refuse_kept_answer on idempotency_keys`);
  });

  it("sweeps keys after 24 hours", async () => {
    const { deleteExpiredFlowRows } = await import("../../core/oauth/cleanup.ts");
    const before = (await rows(`select count(*)::int as n from idempotency_keys`))[0].n;
    assert.ok(before > 0);
    await deleteExpiredFlowRows(t.outpost.runtime.deps, new Date(Date.now() + 23 * 60 * 60_000));
    assert.equal((await rows(`select count(*)::int as n from idempotency_keys`))[0].n, before);
    await deleteExpiredFlowRows(t.outpost.runtime.deps, new Date(Date.now() + 25 * 60 * 60_000));
    assert.equal((await rows(`select count(*)::int as n from idempotency_keys`))[0].n, 0);
  });
});
