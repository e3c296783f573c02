import assert from "node:assert/strict";
import { allActionNames } from "../support/grants.ts";
import { verifyEmail } from "../support/fixtures.ts";
import { origin, useHttpApiOutpost, type Json } from "./http-api-fixture.ts";

/**
 * The HTTP API through real HTTP, as a script uses it: the public contract's shapes and its
 * credential rules. Every status code it documents: http-api-statuses.test.ts.
 */
describe("http api: routing, shapes, statuses and credentials", () => {
  const { outpost, ownerKey, ownerCookie, memberKey, api } = useHttpApiOutpost();

  describe("the public contract's shapes", () => {
    it("auth/getSession → {user:{id,email,name,platformAdmin}}", async () => {
      const res = await api("GET", "auth/getSession", { key: ownerKey() });
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
      const withKey = await api("POST", "auth/createApiKey", { key: ownerKey(), body: { name: "temporary", expiresInDays: 7 } });
      assert.equal(withKey.status, 403, "a key cannot mint another key");
      assert.equal(withKey.body.code, "permission_denied");
      assert.match(withKey.body.message, /created by a signed-in user/);
      const created = await api("POST", "auth/createApiKey", { cookie: ownerCookie(), headers: { origin }, body: { name: "temporary", expiresInDays: 7 } });
      assert.equal(created.status, 200);
      const { apiKey, key } = created.body;
      assert.match(key, /^opk_[0-9A-Za-z]{40}$/);
      assert.equal(apiKey.name, "temporary");
      assert.equal(apiKey.prefix, key.slice(0, 12));
      const days = (Date.parse(apiKey.expiresAt) - Date.now()) / 86_400_000;
      // Core's clock follows the database's, which may run a few milliseconds ahead of this process's.
      assert.ok(days > 6.9 && days < 7.001, `expires in ${days} days`);
      const list = await api("GET", "auth/listApiKeys", { key: ownerKey() });
      assert.equal(list.status, 200);
      assert.ok(list.body.apiKeys.some((k: Json) => k.id === apiKey.id));
      assert.equal(JSON.stringify(list.body).includes(key), false);
      const revoked = await api("POST", "auth/revokeApiKey", { key: ownerKey(), body: { apiKeyId: apiKey.id } });
      assert.equal(revoked.status, 200);
      assert.deepEqual(revoked.body, {});
      assert.equal((await api("GET", "auth/getSession", { key })).status, 401);
    });

    it("organizations/createOrganization → {organization:{id,slug,name,plan}}; listOrganizations", async () => {
      const res = await api("POST", "organizations/createOrganization", { key: ownerKey(), body: { name: "Acme", slug: "acme" } });
      assert.equal(res.status, 200);
      assert.equal(res.body.organization.slug, "acme");
      assert.equal(res.body.organization.name, "Acme");
      assert.equal(res.body.organization.plan, "free");
      assert.equal(res.body.organization.role, "owner");
      const list = await api("GET", "organizations/listOrganizations", { key: ownerKey() });
      assert.deepEqual(
        list.body.organizations.map((o: Json) => o.slug),
        ["acme"],
      );
    });

    let serverId: string;
    let memberId: string;

    it("servers/createServer → {server:{id,name,game,online,lastSeenAt,agentKeyPrefix,…}, agentKey}", async () => {
      const res = await api("POST", "servers/createServer", { key: ownerKey(), body: { organizationSlug: "acme", name: "Survival", game: "minecraft" } });
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
      const list = await api("GET", "servers/listServers?organizationSlug=acme", { key: ownerKey() });
      assert.equal(list.status, 200);
      assert.ok(Array.isArray(list.body));
      assert.deepEqual(
        list.body.map((s: Json) => s.id),
        [serverId],
      );
      const got = await api("GET", `servers/getServer?serverId=${serverId}`, { key: ownerKey() });
      assert.equal(got.body.server.name, "Survival");
      const renamed = await api("POST", "servers/updateServer", { key: ownerKey(), body: { serverId, name: "Creative" } });
      assert.equal(renamed.body.server.name, "Creative");
      const regenerated = await api("POST", "servers/regenerateAgentKey", { key: ownerKey(), body: { serverId } });
      assert.match(regenerated.body.agentKey, /^opa_/);
    });

    it("members and access grants: addMember invites a stranger; joined, a member without grants gets [] and with one sees just that server", async () => {
      const added = await api("POST", "organizations/addMember", { key: ownerKey(), body: { organizationSlug: "acme", email: "member@example.com", role: "member" } });
      assert.equal(added.status, 200);
      assert.equal("member" in added.body, false, "not a colleague of the owner's: invited, not added");
      assert.equal(added.body.invitation.email, "member@example.com");
      assert.match(added.body.token, /^opi_/);
      const unverified = await api("POST", "organizations/acceptInvitation", { key: memberKey(), body: { token: added.body.token } });
      assert.equal(unverified.status, 409);
      assert.equal(unverified.body.reason, "email_unverified");
      await verifyEmail(outpost(), "member@example.com");
      const accepted = await api("POST", "organizations/acceptInvitation", { key: memberKey(), body: { token: added.body.token } });
      assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
      assert.equal(accepted.body.member.role, "member");
      memberId = accepted.body.member.userId;
      const members = await api("GET", "organizations/listMembers?organizationSlug=acme", { key: memberKey() });
      assert.deepEqual(members.body.members.map((m: Json) => m.role).sort(), ["member", "owner"]);

      const none = await api("GET", "servers/listServers?organizationSlug=acme", { key: memberKey() });
      assert.equal(none.status, 200);
      assert.deepEqual(none.body, []);

      const other = await api("POST", "servers/createServer", { key: ownerKey(), body: { organizationSlug: "acme", name: "Lobby", game: "hytale" } });
      const grant = await api("POST", "organizations/createAccessGrant", {
        key: ownerKey(),
        body: { organizationSlug: "acme", userId: memberId, serverId, actions: allActionNames },
      });
      assert.equal(grant.status, 200);
      const grants = await api("GET", `organizations/listAccessGrants?organizationSlug=acme&userId=${memberId}`, { key: ownerKey() });
      assert.deepEqual(
        grants.body.accessGrants.map((g: Json) => g.serverId),
        [serverId],
      );
      const some = await api("GET", "servers/listServers?organizationSlug=acme", { key: memberKey() });
      assert.deepEqual(
        some.body.map((s: Json) => s.id),
        [serverId],
      );
      assert.equal(
        some.body.some((s: Json) => s.id === other.body.server.id),
        false,
      );

      // The member's own view, and a request for the other server: enums as short lowercase names.
      const me = await api("GET", "organizations/getCurrentMember?organizationSlug=acme", { key: memberKey() });
      assert.equal(me.status, 200);
      assert.equal(me.body.role, "member");
      assert.deepEqual(
        me.body.accessGrants.map((g: Json) => [g.serverId, g.state, g.actions.length]),
        [[serverId, "active", allActionNames.length]],
      );
      const asked = await api("POST", "organizations/createAccessRequest", {
        key: memberKey(),
        body: { organizationSlug: "acme", serverId: other.body.server.id, actions: ["console_read"], constraints: { maxUses: 5 }, reason: "to watch the lobby" },
      });
      assert.equal(asked.status, 200, JSON.stringify(asked.body));
      assert.deepEqual([asked.body.accessRequest.status, asked.body.accessRequest.actions], ["pending", ["view", "console_read"]]);
      const widened = await api("POST", "organizations/approveAccessRequest", {
        key: ownerKey(),
        body: { organizationSlug: "acme", requestId: asked.body.accessRequest.id, actions: ["console_command"] },
      });
      assert.equal(widened.status, 400, JSON.stringify(widened.body));
      const badLimit = await api("POST", "organizations/createAccessGrant", {
        key: ownerKey(),
        body: { organizationSlug: "acme", userId: memberId, serverId: other.body.server.id, actions: ["view"], constraints: { maxUses: 0 } },
      });
      assert.equal(badLimit.status, 400);

      const revoked = await api("POST", "organizations/revokeAccessGrant", { key: ownerKey(), body: { organizationSlug: "acme", userId: memberId, serverId } });
      assert.equal(revoked.status, 200);
      assert.deepEqual((await api("GET", "servers/listServers?organizationSlug=acme", { key: memberKey() })).body, []);
      const promoted = await api("POST", "organizations/updateMemberRole", { key: ownerKey(), body: { organizationSlug: "acme", userId: memberId, role: "admin" } });
      assert.equal(promoted.body.member.role, "admin");
      const removed = await api("POST", "organizations/removeMember", { key: ownerKey(), body: { organizationSlug: "acme", userId: memberId } });
      assert.equal(removed.status, 200);
    });

    it("activity/listOrganizationActivity with optional serverId and limit", async () => {
      const res = await api("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${serverId}&limit=2`, { key: ownerKey() });
      assert.equal(res.status, 200);
      assert.equal(res.body.events.length, 2);
      for (const event of res.body.events) {
        assert.equal(event.serverId, serverId);
        assert.match(event.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
        assert.equal(event.actor.email, "owner@example.com");
      }
      const servers = await api("GET", "activity/listOrganizationActivity?organizationSlug=acme&action=server", { key: ownerKey() });
      assert.ok(servers.body.events.length > 0);
      assert.ok(servers.body.events.every((e: Json) => e.action.startsWith("server.")));
    });

    it("activity: kinds and severities by name, repeated keys, the cursor, and acknowledging an event", async () => {
      const list = (query: string) => api("GET", `activity/listOrganizationActivity?organizationSlug=acme&${query}`, { key: ownerKey() });
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
      const acked = await api("POST", "activity/acknowledgeOrganizationActivityEvent", { key: ownerKey(), body: { organizationSlug: "acme", eventId } });
      assert.equal(acked.status, 200);
      assert.equal(acked.body.event.acknowledgement.email, "owner@example.com");
      const missing = await api("POST", "activity/acknowledgeOrganizationActivityEvent", {
        key: ownerKey(),
        body: { organizationSlug: "acme", eventId: "00000000-0000-4000-8000-000000000000" },
      });
      assert.equal(missing.status, 404);
    });
  });

  describe("cookies and cross-site requests", () => {
    it("accepts the session cookie from our own origin and refuses the same POST cross-site, while an API key passes", async () => {
      const body = { name: "Cookie Org", slug: "cookie-org" };
      const forged = await api("POST", "organizations/createOrganization", { cookie: ownerCookie(), body, headers: { origin: "https://evil.example" } });
      assert.equal(forged.status, 403);
      const fetchSite = await api("POST", "organizations/createOrganization", { cookie: ownerCookie(), body, headers: { "sec-fetch-site": "cross-site" } });
      assert.equal(fetchSite.status, 403);
      const own = await api("POST", "organizations/createOrganization", { cookie: ownerCookie(), body, headers: { origin } });
      assert.equal(own.status, 200);
      const byKey = await api("POST", "organizations/createOrganization", {
        key: ownerKey(),
        body: { name: "Key Org", slug: "key-org" },
        headers: { origin: "https://evil.example" },
      });
      assert.equal(byKey.status, 200);
      const read = await api("GET", "organizations/listOrganizations", { cookie: ownerCookie(), headers: { "sec-fetch-site": "cross-site" } });
      assert.equal(read.status, 200, "reads are not state changes");
    });
  });
});
