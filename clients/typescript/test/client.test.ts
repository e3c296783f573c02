/**
 * The typed client against a whole Outpost, as a script uses it: typed calls, errors read from
 * Connect's details, a console command through a connected agent, a stream, and cursor paging.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createOutpostClient, OutpostError, type OutpostClient } from "../src/index.ts";
import { Game, PlayerAuth } from "../../../gen/outpost/servers/v1/resources_pb.js";
import type { ActivityEvent } from "../../../gen/outpost/activity/v1/activity_service_pb.js";
import { startAgent, type Agent } from "../../../agent/client.ts";
import { adminApiKey } from "../../../test/support/account-oauth.ts";
import { startTestOutpost, type TestOutpost } from "../../../test/support/outpost.ts";

/** Resolves with the error the promise rejects with; fails if it resolves. */
async function failure(promise: Promise<unknown>): Promise<OutpostError> {
  const error = await promise.then(
    () => assert.fail("the call succeeded"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof OutpostError, `not an OutpostError: ${String(error)}`);
  return error;
}

// eslint-disable-next-line max-lines-per-function -- a suite's describe block holds its cases (as test/**/*.test.ts, exempt in eslint.config.js)
describe("@outpost/client against a real Outpost", () => {
  let t: TestOutpost;
  let client: OutpostClient;
  let ownerKey: string;
  let serverId: string;
  let agentKey: string;
  const agents: Agent[] = [];

  before(async () => {
    // Room for the servers whose creation the paging case lists as activity.
    t = await startTestOutpost({ PLANS: '{"free":{"servers":10,"gameOAuthClients":2}}' });
    ownerKey = await adminApiKey(t, "owner@example.com");
    client = createOutpostClient({ baseUrl: t.baseUrl, apiKey: ownerKey });
    await client.organizations.createOrganization({ name: "Acme", slug: "acme" });
    const created = await client.servers.createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT });
    serverId = created.server!.id;
    agentKey = created.agentKey;
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
  });
  after(async () => {
    await t?.close();
  });

  it("calls typed methods and answers the generated response messages", async () => {
    const { server } = await client.servers.getServer({ serverId });
    assert.equal(server?.name, "Survival");
    assert.equal(server?.game, Game.MINECRAFT);
    const { servers } = await client.servers.listServers({ organizationSlug: "acme" });
    assert.deepEqual(
      servers.map((s) => s.id),
      [serverId],
    );
    const session = await client.auth.getSession({});
    assert.equal(session.user?.email, "owner@example.com");
  });

  it("throws an OutpostError with the code, the HTTP API's status, the violations and the request id", async () => {
    const invalid = await failure(client.servers.getServer({ serverId: "not-a-uuid" }));
    assert.deepEqual([invalid.code, invalid.status], ["invalid_argument", 400]);
    assert.deepEqual(
      invalid.violations.map((v) => [v.field, v.rule]),
      [["serverId", "string.uuid"]],
    );
    assert.match(invalid.message, /server_id/);
    assert.match(invalid.requestId ?? "", /\S/, "Outpost's X-Request-Id");

    const missing = await failure(client.servers.getServer({ serverId: randomUUID() }));
    assert.deepEqual([missing.code, missing.status, missing.violations], ["not_found", 404, []]);

    const stranger = createOutpostClient({ baseUrl: t.baseUrl, apiKey: "opk_not_a_key" });
    const refused = await failure(stranger.auth.getSession({}));
    assert.deepEqual([refused.code, refused.status], ["unauthenticated", 401]);
  });

  it("reads a domain reason: a console command for a server whose agent is offline reaches core and is refused", async () => {
    const offline = await failure(client.servers.executeConsoleCommand({ serverId, command: "say hi" }));
    assert.deepEqual([offline.code, offline.status, offline.reason], ["failed_precondition", 409, "agent_offline"]);
  });

  it("runs a console command in one line through the server's connected agent; its key cannot be reused for another", async () => {
    const ran: string[] = [];
    const agent = startAgent({
      url: t.baseUrl,
      key: agentKey,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: false,
      console: async (command) => {
        ran.push(command);
        return { success: true, output: [`> ${command}`, "done"] };
      },
    });
    agents.push(agent);
    await agent.connected();
    const idempotencyKey = `purchase-${randomUUID()}`;
    const res = await client.servers.executeConsoleCommand({ serverId, command: "say hi" }, { idempotencyKey });
    assert.equal(res.success, true);
    assert.deepEqual(res.output, ["> say hi", "done"]);
    assert.match(res.requestId, /^[0-9a-f-]{36}$/);
    const reused = await failure(client.servers.executeConsoleCommand({ serverId, command: "say bye" }, { idempotencyKey }));
    assert.deepEqual([reused.code, reused.status, reused.reason], ["invalid_argument", 422, "idempotency_key_reused"]);
    assert.deepEqual(ran, ["say hi"]);
  });

  it("answers the same mutation sent again with the same key with the first answer, without running it again", async () => {
    const { server } = await client.servers.createServer({ organizationSlug: "acme", name: "Once", game: Game.MINECRAFT }, { idempotencyKey: "create-once" });
    const again = await client.servers.createServer({ organizationSlug: "acme", name: "Once", game: Game.MINECRAFT }, { idempotencyKey: "create-once" });
    assert.equal(again.server?.id, server?.id);
  });

  it("retries a mutation whose answer was lost on the way back with its key: Outpost ran it once, and the retry gets its answer", async () => {
    let attempts = 0;
    // The first answer is lost after Outpost has run the call, as a connection reset would lose it.
    const losing: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (++attempts > 1) return res;
      await res.arrayBuffer();
      throw new TypeError("fetch failed");
    };
    const flaky = createOutpostClient({ baseUrl: t.baseUrl, apiKey: ownerKey, fetch: losing });
    const { server } = await flaky.servers.createServer({ organizationSlug: "acme", name: "Lost answer", game: Game.MINECRAFT });
    assert.equal(attempts, 2);
    assert.equal(server?.name, "Lost answer");
    const { servers } = await client.servers.listServers({ organizationSlug: "acme" });
    assert.deepEqual(
      servers.filter((s) => s.name === "Lost answer").map((s) => s.id),
      [server?.id],
    );
    // Without retries (and so without a key of the client's own), the loss is the caller's to handle.
    attempts = 0;
    const once = createOutpostClient({ baseUrl: t.baseUrl, apiKey: ownerKey, fetch: losing, retry: { maxAttempts: 1 } });
    const lost = await failure(once.servers.createServer({ organizationSlug: "acme", name: "Lost once", game: Game.MINECRAFT }));
    assert.deepEqual([lost.code, lost.status], ["unavailable", 503]);
    assert.match(lost.message, /could not be reached/);
  });

  it("passes a server stream through as an async iterable", async () => {
    const stop = new AbortController();
    let first: { online: boolean } | undefined;
    for await (const message of client.servers.watchConsole({ serverId }, { signal: stop.signal })) {
      first = message;
      break;
    }
    // Leaving the loop does not end Connect's stream: the signal does.
    stop.abort();
    assert.equal(first?.online, false);
    const refused = await failure(
      (async () => {
        for await (const _ of client.servers.watchConsole({ serverId: randomUUID() })) assert.fail("a stream for an unknown server");
      })(),
    );
    assert.equal(refused.code, "not_found");
  });

  it("pages: the call is the first page, and iterating it walks every item of every page", async () => {
    // Activity to page through: each server created is an event of the organization.
    for (let i = 1; i <= 4; i++) await client.servers.createServer({ organizationSlug: "acme", name: `Lobby ${i}`, game: Game.MINECRAFT });
    const everything = await client.activity.listOrganizationActivity({ organizationSlug: "acme", limit: 200 });
    assert.ok(everything.events.length >= 7, `${everything.events.length} events`);
    assert.equal(everything.nextCursor, "");

    const list = client.activity.listOrganizationActivity({ organizationSlug: "acme", limit: 2 });
    const first = await list;
    assert.equal(first.events.length, 2);
    assert.notEqual(first.nextCursor, "");
    const walked: ActivityEvent[] = [];
    for await (const event of list) walked.push(event);
    assert.deepEqual(
      walked.map((e) => e.id),
      everything.events.map((e) => e.id),
    );
    let pages = 0;
    for await (const page of client.activity.listOrganizationActivity({ organizationSlug: "acme", limit: 3 }).pages()) {
      pages++;
      assert.ok(page.events.length <= 3);
    }
    assert.equal(pages, Math.ceil(everything.events.length / 3));
  });
});
