import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { allActionNames } from "../support/grants.ts";
import { verifyEmail } from "../support/fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/**
 * The HTTP API through real HTTP, as a script uses it: the public contract's shapes, every status
 * code it documents, and its credential rules.
 */
describe("http api: routing, shapes, statuses and credentials", () => {
  let t: TestOutpost;
  const origin = "http://localhost:3000";
  let ownerKey: string;
  let ownerCookie: string;
  let memberKey: string;
  let outsiderKey: string;

  const api = async (
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    options: { key?: string; cookie?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: Json; headers: Headers }> => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers["x-api-key"] = options.key;
    if (options.cookie) headers.cookie = options.cookie;
    let body: string | undefined = options.raw;
    if (options.body !== undefined) {
      headers["content-type"] ??= "application/json";
      body = JSON.stringify(options.body);
    }
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };

  async function account(email: string): Promise<{ cookie: string; key: string }> {
    const res = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email, password: "a long password", name: email.split("@")[0] }),
    });
    assert.equal(res.status, 201);
    const cookie = res.headers.get("set-cookie")!.split(";")[0];
    const created = await api("POST", "auth/createApiKey", { cookie, headers: { origin }, body: { name: "script", expiresInDays: 30 } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    return { cookie, key: created.body.key };
  }

  before(async () => {
    t = await startTestOutpost();
    const owner = await account("owner@example.com");
    ownerKey = owner.key;
    ownerCookie = owner.cookie;
    memberKey = (await account("member@example.com")).key;
    outsiderKey = (await account("outsider@example.com")).key;
  });
  after(async () => {
    await t?.close();
  });

  describe("the public contract's shapes", () => {
    it("auth/getSession → {user:{id,email,name,platformAdmin}}", async () => {
      const res = await api("GET", "auth/getSession", { key: ownerKey });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.match(res.body.user.id, /^[0-9a-f-]{36}$/);
      assert.equal(res.body.user.email, "owner@example.com");
      assert.equal(res.body.user.name, "owner");
      assert.equal(res.body.user.platformAdmin, false);
      assert.equal(res.body.credential, "api_key");
    });

    it("auth/createApiKey (signed in, not with a key) → {apiKey:{id,name,prefix,expiresAt}, key}; listApiKeys never shows a secret; revokeApiKey", async () => {
      const withKey = await api("POST", "auth/createApiKey", { key: ownerKey, body: { name: "temporary", expiresInDays: 7 } });
      assert.equal(withKey.status, 403, "a key cannot mint another key");
      assert.equal(withKey.body.code, "permission_denied");
      assert.match(withKey.body.message, /created by a signed-in user/);
      const created = await api("POST", "auth/createApiKey", { cookie: ownerCookie, headers: { origin }, body: { name: "temporary", expiresInDays: 7 } });
      assert.equal(created.status, 200);
      const { apiKey, key } = created.body;
      assert.match(key, /^opk_[0-9A-Za-z]{40}$/);
      assert.equal(apiKey.name, "temporary");
      assert.equal(apiKey.prefix, key.slice(0, 12));
      const days = (Date.parse(apiKey.expiresAt) - Date.now()) / 86_400_000;
      assert.ok(days > 6.9 && days <= 7, `expires in ${days} days`);
      const list = await api("GET", "auth/listApiKeys", { key: ownerKey });
      assert.equal(list.status, 200);
      assert.ok(list.body.apiKeys.some((k: Json) => k.id === apiKey.id));
      assert.equal(JSON.stringify(list.body).includes(key), false);
      const revoked = await api("POST", "auth/revokeApiKey", { key: ownerKey, body: { apiKeyId: apiKey.id } });
      assert.equal(revoked.status, 200);
      assert.deepEqual(revoked.body, {});
      assert.equal((await api("GET", "auth/getSession", { key })).status, 401);
    });

    it("organizations/createOrganization → {organization:{id,slug,name,plan}}; listOrganizations", async () => {
      const res = await api("POST", "organizations/createOrganization", { key: ownerKey, body: { name: "Acme", slug: "acme" } });
      assert.equal(res.status, 200);
      assert.equal(res.body.organization.slug, "acme");
      assert.equal(res.body.organization.name, "Acme");
      assert.equal(res.body.organization.plan, "free");
      assert.equal(res.body.organization.role, "owner");
      const list = await api("GET", "organizations/listOrganizations", { key: ownerKey });
      assert.deepEqual(list.body.organizations.map((o: Json) => o.slug), ["acme"]);
    });

    let serverId: string;
    let memberId: string;

    it("servers/createServer → {server:{id,name,game,online,lastSeenAt,agentKeyPrefix,…}, agentKey}", async () => {
      const res = await api("POST", "servers/createServer", { key: ownerKey, body: { organizationSlug: "acme", name: "Survival", game: "minecraft" } });
      assert.equal(res.status, 200);
      const { server, agentKey } = res.body;
      serverId = server.id;
      assert.equal(server.name, "Survival");
      assert.equal(server.game, "minecraft");
      assert.equal(server.online, false);
      assert.equal(server.playerCount, 0);
      assert.equal("lastSeenAt" in server, false, "never seen: absent");
      assert.match(agentKey, /^opa_/);
      assert.equal(server.agentKeyPrefix, agentKey.slice(0, 12));
    });

    it("servers/listServers → a JSON array; getServer, updateServer, regenerateAgentKey → {agentKey}", async () => {
      const list = await api("GET", "servers/listServers?organizationSlug=acme", { key: ownerKey });
      assert.equal(list.status, 200);
      assert.ok(Array.isArray(list.body));
      assert.deepEqual(list.body.map((s: Json) => s.id), [serverId]);
      const got = await api("GET", `servers/getServer?serverId=${serverId}`, { key: ownerKey });
      assert.equal(got.body.server.name, "Survival");
      const renamed = await api("POST", "servers/updateServer", { key: ownerKey, body: { serverId, name: "Creative" } });
      assert.equal(renamed.body.server.name, "Creative");
      const regenerated = await api("POST", "servers/regenerateAgentKey", { key: ownerKey, body: { serverId } });
      assert.match(regenerated.body.agentKey, /^opa_/);
    });

    it("members and access grants: addMember invites a stranger; joined, a member without grants gets [] and with one sees just that server", async () => {
      const added = await api("POST", "organizations/addMember", { key: ownerKey, body: { organizationSlug: "acme", email: "member@example.com", role: "member" } });
      assert.equal(added.status, 200);
      assert.equal("member" in added.body, false, "not a colleague of the owner's: invited, not added");
      assert.equal(added.body.invitation.email, "member@example.com");
      assert.match(added.body.token, /^opi_/);
      const unverified = await api("POST", "organizations/acceptInvitation", { key: memberKey, body: { token: added.body.token } });
      assert.equal(unverified.status, 409);
      assert.equal(unverified.body.reason, "email_unverified");
      await verifyEmail(t, "member@example.com");
      const accepted = await api("POST", "organizations/acceptInvitation", { key: memberKey, body: { token: added.body.token } });
      assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
      assert.equal(accepted.body.member.role, "member");
      memberId = accepted.body.member.userId;
      const members = await api("GET", "organizations/listMembers?organizationSlug=acme", { key: memberKey });
      assert.deepEqual(members.body.members.map((m: Json) => m.role).sort(), ["member", "owner"]);

      const none = await api("GET", "servers/listServers?organizationSlug=acme", { key: memberKey });
      assert.equal(none.status, 200);
      assert.deepEqual(none.body, []);

      const other = await api("POST", "servers/createServer", { key: ownerKey, body: { organizationSlug: "acme", name: "Lobby", game: "hytale" } });
      const grant = await api("POST", "organizations/createAccessGrant", { key: ownerKey, body: { organizationSlug: "acme", userId: memberId, serverId, actions: allActionNames } });
      assert.equal(grant.status, 200);
      const grants = await api("GET", `organizations/listAccessGrants?organizationSlug=acme&userId=${memberId}`, { key: ownerKey });
      assert.deepEqual(grants.body.accessGrants.map((g: Json) => g.serverId), [serverId]);
      const some = await api("GET", "servers/listServers?organizationSlug=acme", { key: memberKey });
      assert.deepEqual(some.body.map((s: Json) => s.id), [serverId]);
      assert.equal(some.body.some((s: Json) => s.id === other.body.server.id), false);

      // The member's own view, and a request for the other server: enums as short lowercase names.
      const me = await api("GET", "organizations/getCurrentMember?organizationSlug=acme", { key: memberKey });
      assert.equal(me.status, 200);
      assert.equal(me.body.role, "member");
      assert.deepEqual(me.body.accessGrants.map((g: Json) => [g.serverId, g.state, g.actions.length]), [[serverId, "active", 5]]);
      const asked = await api("POST", "organizations/createAccessRequest", {
        key: memberKey,
        body: { organizationSlug: "acme", serverId: other.body.server.id, actions: ["console_read"], constraints: { maxUses: 5 }, reason: "to watch the lobby" },
      });
      assert.equal(asked.status, 200, JSON.stringify(asked.body));
      assert.deepEqual([asked.body.accessRequest.status, asked.body.accessRequest.actions], ["pending", ["view", "console_read"]]);
      const widened = await api("POST", "organizations/approveAccessRequest", {
        key: ownerKey,
        body: { organizationSlug: "acme", requestId: asked.body.accessRequest.id, actions: ["console_command"] },
      });
      assert.equal(widened.status, 400, JSON.stringify(widened.body));
      const badLimit = await api("POST", "organizations/createAccessGrant", {
        key: ownerKey,
        body: { organizationSlug: "acme", userId: memberId, serverId: other.body.server.id, actions: ["view"], constraints: { maxUses: 0 } },
      });
      assert.equal(badLimit.status, 400);

      const revoked = await api("POST", "organizations/revokeAccessGrant", { key: ownerKey, body: { organizationSlug: "acme", userId: memberId, serverId } });
      assert.equal(revoked.status, 200);
      assert.deepEqual((await api("GET", "servers/listServers?organizationSlug=acme", { key: memberKey })).body, []);
      const promoted = await api("POST", "organizations/updateMemberRole", { key: ownerKey, body: { organizationSlug: "acme", userId: memberId, role: "admin" } });
      assert.equal(promoted.body.member.role, "admin");
      const removed = await api("POST", "organizations/removeMember", { key: ownerKey, body: { organizationSlug: "acme", userId: memberId } });
      assert.equal(removed.status, 200);
    });

    it("activity/listOrganizationActivity with optional serverId and limit", async () => {
      const res = await api("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${serverId}&limit=2`, { key: ownerKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.events.length, 2);
      for (const event of res.body.events) {
        assert.equal(event.serverId, serverId);
        assert.match(event.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
        assert.equal(event.actor.email, "owner@example.com");
      }
      const servers = await api("GET", "activity/listOrganizationActivity?organizationSlug=acme&action=server", { key: ownerKey });
      assert.ok(servers.body.events.length > 0);
      assert.ok(servers.body.events.every((e: Json) => e.action.startsWith("server.")));
    });

    it("activity: kinds and severities by name, repeated keys, the cursor, and acknowledging an event", async () => {
      const list = (query: string) => api("GET", `activity/listOrganizationActivity?organizationSlug=acme&${query}`, { key: ownerKey });
      const config = await list("kind=configuration&kind=access&severity=info&limit=1");
      assert.equal(config.status, 200);
      assert.ok(["configuration", "access"].includes(config.body.events[0].kind));
      assert.equal(config.body.events[0].severity, "info");
      assert.equal(config.body.events[0].acknowledgement, undefined, "absent until acknowledged");
      const next = await list(`kind=configuration&kind=access&severity=info&limit=1&cursor=${config.body.nextCursor}`);
      assert.equal(next.status, 200);
      assert.notEqual(next.body.events[0].id, config.body.events[0].id);
      const unknownKind = await list("kind=server");
      assert.equal(unknownKind.status, 400);
      assert.match(unknownKind.body.message, /^kind\[0\]: must be one of status, access/);
      const badCursor = await list("cursor=nope");
      assert.deepEqual([badCursor.status, badCursor.body.code], [400, "invalid_argument"]);
      const eventId = config.body.events[0].id;
      const acked = await api("POST", "activity/acknowledgeOrganizationActivityEvent", { key: ownerKey, body: { organizationSlug: "acme", eventId } });
      assert.equal(acked.status, 200);
      assert.equal(acked.body.event.acknowledgement.email, "owner@example.com");
      const missing = await api("POST", "activity/acknowledgeOrganizationActivityEvent", { key: ownerKey, body: { organizationSlug: "acme", eventId: "00000000-0000-4000-8000-000000000000" } });
      assert.equal(missing.status, 404);
    });
  });

  describe("status codes", () => {
    it("400: invalid input, with field violations", async () => {
      const res = await api("POST", "organizations/createOrganization", { key: ownerKey, body: { name: "", slug: "Not A Slug" } });
      assert.equal(res.status, 400);
      assert.equal(res.body.code, "invalid_argument");
      assert.equal(res.body.status, 400);
      assert.deepEqual([...new Set(res.body.details.map((d: Json) => d.field))].sort(), ["name", "slug"]);
    });

    it("400: unknown fields and parameters are named; wrong types; bad JSON; repeated scalar", async () => {
      const unknown = await api("POST", "organizations/createOrganization", { key: ownerKey, body: { name: "X", slug: "xyz", color: "red", size: 3 } });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.message, "unknown fields: color, size");
      const param = await api("GET", "servers/listServers?organizationSlug=acme&verbose=true", { key: ownerKey });
      assert.equal(param.status, 400);
      assert.equal(param.body.message, "unknown parameter: verbose");
      const type = await api("POST", "servers/createServer", { key: ownerKey, body: { organizationSlug: ["acme"], name: "X", game: "minecraft" } });
      assert.equal(type.status, 400);
      assert.match(type.body.message, /^organizationSlug: /);
      const game = await api("POST", "servers/createServer", { key: ownerKey, body: { organizationSlug: "acme", name: "X", game: "chess" } });
      assert.equal(game.body.message, "game: must be one of minecraft, hytale");
      const json = await api("POST", "servers/createServer", { key: ownerKey, raw: "{oops", headers: { "content-type": "application/json" } });
      assert.equal(json.status, 400);
      const array = await api("POST", "servers/createServer", { key: ownerKey, body: [1, 2] });
      assert.equal(array.status, 400);
      const twice = await api("GET", "servers/listServers?organizationSlug=acme&organizationSlug=other", { key: ownerKey });
      assert.equal(twice.status, 400);
      const number = await api("GET", "activity/listOrganizationActivity?organizationSlug=acme&limit=1.5", { key: ownerKey });
      assert.equal(number.status, 400);
    });

    it("401: no credential, an unknown or revoked key, an agent key, a Bearer token, a key in the URL", async () => {
      const cases = [
        await api("GET", "auth/getSession"),
        await api("GET", "auth/getSession", { key: "opk_" + "x".repeat(40) }),
        await api("GET", "auth/getSession", { key: "opa_" + "x".repeat(40) }),
        await api("GET", "auth/getSession", { headers: { authorization: "Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig" } }),
        await api("GET", "auth/getSession", { key: ownerKey, headers: { authorization: "Bearer anything" } }),
        await api("GET", `auth/getSession?api_key=${ownerKey}`),
        await api("GET", `servers/listServers?organizationSlug=${ownerKey}`),
      ];
      for (const res of cases) {
        assert.equal(res.status, 401, JSON.stringify(res.body));
        assert.equal(res.body.code, "unauthenticated");
      }
      const agentKey = (await api("POST", "servers/createServer", { key: ownerKey, body: { organizationSlug: "acme", name: "Agent", game: "minecraft" } })).body.agentKey;
      assert.match(agentKey, /^opa_/);
      assert.equal((await api("GET", "auth/getSession", { key: agentKey })).status, 401);
    });

    it("400: a cookie and an API key at once", async () => {
      const res = await api("GET", "auth/getSession", { key: ownerKey, cookie: ownerCookie });
      assert.equal(res.status, 400);
    });

    it("403: a role that does not allow it; a non-admin on the admin router", async () => {
      // Removed above, and a colleague of the owner's nowhere else: invited again, accepting.
      const invited = await api("POST", "organizations/addMember", { key: ownerKey, body: { organizationSlug: "acme", email: "member@example.com", role: "member" } });
      assert.equal((await api("POST", "organizations/acceptInvitation", { key: memberKey, body: { token: invited.body.token } })).status, 200);
      const res = await api("POST", "servers/createServer", { key: memberKey, body: { organizationSlug: "acme", name: "Mine", game: "minecraft" } });
      assert.equal(res.status, 403);
      assert.equal(res.body.code, "permission_denied");
      const admin = await api("GET", "admin/listUsers", { key: memberKey });
      assert.equal(admin.status, 403);
      assert.equal(admin.body.reason, "platform_admin_required");
    });

    it("404: unknown router or procedure, an unbuilt router, another organization's slug (same as a missing one)", async () => {
      assert.equal((await api("GET", "nothing/here", { key: ownerKey })).status, 404);
      assert.equal((await api("GET", "servers/listEverything", { key: ownerKey })).status, 404);
      assert.equal((await api("GET", "servers/listServers/extra", { key: ownerKey })).status, 404);
      assert.equal((await api("POST", "alerts/anything", { key: ownerKey, body: {} })).status, 404);
      const others = await api("GET", "servers/listServers?organizationSlug=acme", { key: outsiderKey });
      const missing = await api("GET", "servers/listServers?organizationSlug=no-such-org", { key: outsiderKey });
      assert.equal(others.status, 404);
      assert.equal(missing.status, 404);
      assert.equal(others.body.message.replace("acme", "X"), missing.body.message.replace("no-such-org", "X"));
    });

    it("405 with Allow: a GET on a mutation, a POST on a query, other methods", async () => {
      const get = await api("GET", "servers/createServer", { key: ownerKey });
      assert.equal(get.status, 405);
      assert.equal(get.headers.get("allow"), "POST");
      const post = await api("POST", "servers/listServers", { key: ownerKey, body: { organizationSlug: "acme" } });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get("allow"), "GET");
      const put = await api("PUT", "servers/createServer", { key: ownerKey });
      assert.equal(put.status, 405);
    });

    it("409: plan limit and taken slug", async () => {
      const slug = await api("POST", "organizations/createOrganization", { key: outsiderKey, body: { name: "Copy", slug: "acme" } });
      assert.equal(slug.status, 409);
      assert.equal(slug.body.reason, "slug_taken");
      await api("POST", "organizations/createOrganization", { key: outsiderKey, body: { name: "Small", slug: "small" } });
      for (let i = 0; i < 3; i++) {
        const ok = await api("POST", "servers/createServer", { key: outsiderKey, body: { organizationSlug: "small", name: `S${i}`, game: "minecraft" } });
        assert.equal(ok.status, 200);
      }
      const over = await api("POST", "servers/createServer", { key: outsiderKey, body: { organizationSlug: "small", name: "S4", game: "minecraft" } });
      assert.equal(over.status, 409);
      assert.equal(over.body.reason, "plan_limit_reached");
    });

    it("415 for a body that is not JSON, 413 for one too large", async () => {
      const form = await api("POST", "organizations/createOrganization", { key: ownerKey, raw: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } });
      assert.equal(form.status, 415);
      const big = await api("POST", "organizations/createOrganization", { key: ownerKey, body: { name: "x".repeat(100_000), slug: "big" } });
      assert.equal(big.status, 413);
    });
  });

  describe("cookies and cross-site requests", () => {
    it("accepts the session cookie from our own origin and refuses the same POST cross-site, while an API key passes", async () => {
      const body = { name: "Cookie Org", slug: "cookie-org" };
      const forged = await api("POST", "organizations/createOrganization", { cookie: ownerCookie, body, headers: { origin: "https://evil.example" } });
      assert.equal(forged.status, 403);
      const fetchSite = await api("POST", "organizations/createOrganization", { cookie: ownerCookie, body, headers: { "sec-fetch-site": "cross-site" } });
      assert.equal(fetchSite.status, 403);
      const own = await api("POST", "organizations/createOrganization", { cookie: ownerCookie, body, headers: { origin } });
      assert.equal(own.status, 200);
      const byKey = await api("POST", "organizations/createOrganization", { key: ownerKey, body: { name: "Key Org", slug: "key-org" }, headers: { origin: "https://evil.example" } });
      assert.equal(byKey.status, 200);
      const read = await api("GET", "organizations/listOrganizations", { cookie: ownerCookie, headers: { "sec-fetch-site": "cross-site" } });
      assert.equal(read.status, 200, "reads are not state changes");
    });
  });
});

describe("http api: a failure inside says only that it failed", () => {
  let t: TestOutpost;
  before(async () => {
    t = await startTestOutpost();
  });
  after(async () => {
    await t?.close();
  });

  it("answers 500 with a request id and no detail when the database fails", async () => {
    const res = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "x@example.com", password: "a long password", name: "" }),
    });
    const cookie = res.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "k" }),
    });
    const key = ((await created.json()) as Json).key;
    // Break the schema under the running service: every credential lookup now fails in SQL.
    await t.outpost.runtime.orm.em.fork().getConnection().execute("drop table api_keys cascade");
    const failed = await fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers: { "x-api-key": key, "x-request-id": "req-failure-1" } });
    assert.equal(failed.status, 500);
    const body = (await failed.json()) as Json;
    assert.deepEqual(Object.keys(body).sort(), ["code", "message", "requestId", "status"]);
    assert.equal(body.requestId, "req-failure-1");
    assert.equal(failed.headers.get("x-request-id"), "req-failure-1");
    assert.doesNotMatch(JSON.stringify(body), /orm|sql|pool|stack|at /i);
  });
});

describe("http api: rate limits", () => {
  let t: TestOutpost;
  before(async () => {
    t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: "5", SIGN_IN_ATTEMPTS_PER_15_MIN: "3" });
  });
  after(async () => {
    await t?.close();
  });

  async function keyFor(email: string): Promise<string> {
    const res = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: "a long password", name: "" }),
    });
    const cookie = res.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "k" }),
    });
    return ((await created.json()) as Json).key;
  }

  it("answers a burst over the limit with 429, Retry-After and RateLimit headers; another key is unaffected", async () => {
    const key = await keyFor("burst@example.com");
    const other = await keyFor("calm@example.com");
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers: { "x-api-key": key } });
      statuses.push(res.status);
      if (res.status === 429) limited = res;
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
    const retryAfter = Number(limited!.headers.get("retry-after"));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(limited!.headers.get("ratelimit-policy"), '"default";q=5;w=60');
    assert.match(limited!.headers.get("ratelimit")!, /^"default";r=0;t=\d+$/);
    const body = (await limited!.json()) as Json;
    assert.equal(body.code, "resource_exhausted");
    assert.equal(body.status, 429);
    assert.equal(body.reason, "rate_limited");
    assert.equal((await fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers: { "x-api-key": other } })).status, 200);
  });

  it("refuses sign-in after repeated failures with 429 and Retry-After, the same for an unknown email", async () => {
    const attempt = (email: string, password: string) =>
      fetch(`${t.baseUrl}/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });
    await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "target@example.com", password: "the right password", name: "" }),
    });
    for (let i = 0; i < 3; i++) assert.equal((await attempt("target@example.com", "wrong password")).status, 401);
    const refused = await attempt("target@example.com", "the right password");
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    for (let i = 0; i < 3; i++) await attempt("ghost@example.com", "wrong password");
    const ghost = await attempt("ghost@example.com", "wrong password");
    assert.equal(ghost.status, 429);
    assert.equal(((await ghost.json()) as Json).message, ((await refused.json()) as Json).message);
  });
});
