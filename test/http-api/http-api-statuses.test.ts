import assert from "node:assert/strict";
import { verifyEmail } from "../support/fixtures.ts";
import { useHttpApiOutpost, type Json } from "./http-api-fixture.ts";

/** The HTTP API through real HTTP: every status code it documents, each as a script meets it. */
describe("http api: routing, shapes, statuses and credentials", () => {
  const { outpost, ownerKey, ownerCookie, memberKey, outsiderKey, api } = useHttpApiOutpost();

  // What the cases stand on: the owner's organization, and a member who may accept an invitation.
  before(async () => {
    assert.equal((await api("POST", "organizations/createOrganization", { key: ownerKey(), body: { name: "Acme", slug: "acme" } })).status, 200);
    await verifyEmail(outpost(), "member@example.com");
  });

  describe("status codes", () => {
    it("400: invalid input, with field violations", async () => {
      const res = await api("POST", "organizations/createOrganization", { key: ownerKey(), body: { name: "", slug: "Not A Slug" } });
      assert.equal(res.status, 400);
      assert.equal(res.body.code, "invalid_argument");
      assert.equal(res.body.status, 400);
      assert.deepEqual([...new Set(res.body.details.map((d: Json) => d.field))].sort(), ["name", "slug"]);
    });

    it("400: unknown fields and parameters are named; wrong types; bad JSON; repeated scalar", async () => {
      const unknown = await api("POST", "organizations/createOrganization", { key: ownerKey(), body: { name: "X", slug: "xyz", color: "red", size: 3 } });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.message, "unknown fields: color, size");
      const param = await api("GET", "servers/listServers?organizationSlug=acme&verbose=true", { key: ownerKey() });
      assert.equal(param.status, 400);
      assert.equal(param.body.message, "unknown parameter: verbose");
      const type = await api("POST", "servers/createServer", { key: ownerKey(), body: { organizationSlug: ["acme"], name: "X", game: "minecraft" } });
      assert.equal(type.status, 400);
      assert.match(type.body.message, /^organizationSlug: /);
      const game = await api("POST", "servers/createServer", { key: ownerKey(), body: { organizationSlug: "acme", name: "X", game: "chess" } });
      assert.equal(game.body.message, "game: must be one of minecraft, hytale");
      const json = await api("POST", "servers/createServer", { key: ownerKey(), raw: "{oops", headers: { "content-type": "application/json" } });
      assert.equal(json.status, 400);
      const array = await api("POST", "servers/createServer", { key: ownerKey(), body: [1, 2] });
      assert.equal(array.status, 400);
      const twice = await api("GET", "servers/listServers?organizationSlug=acme&organizationSlug=other", { key: ownerKey() });
      assert.equal(twice.status, 400);
      const number = await api("GET", "activity/listOrganizationActivity?organizationSlug=acme&limit=1.5", { key: ownerKey() });
      assert.equal(number.status, 400);
    });

    it("401: no credential, an unknown or revoked key, an agent key, a Bearer token, a key in the URL", async () => {
      const cases = [
        await api("GET", "auth/getSession"),
        await api("GET", "auth/getSession", { key: "opk_" + "x".repeat(40) }),
        await api("GET", "auth/getSession", { key: "opa_" + "x".repeat(40) }),
        await api("GET", "auth/getSession", { headers: { authorization: "Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig" } }),
        await api("GET", "auth/getSession", { key: ownerKey(), headers: { authorization: "Bearer anything" } }),
        await api("GET", `auth/getSession?api_key=${ownerKey()}`),
        await api("GET", `servers/listServers?organizationSlug=${ownerKey()}`),
      ];
      for (const res of cases) {
        assert.equal(res.status, 401, JSON.stringify(res.body));
        assert.equal(res.body.code, "unauthenticated");
      }
      const agentKey = (await api("POST", "servers/createServer", { key: ownerKey(), body: { organizationSlug: "acme", name: "Agent", game: "minecraft" } })).body
        .agentKey;
      assert.match(agentKey, /^opa_/);
      assert.equal((await api("GET", "auth/getSession", { key: agentKey })).status, 401);
    });

    it("400: a cookie and an API key at once", async () => {
      const res = await api("GET", "auth/getSession", { key: ownerKey(), cookie: ownerCookie() });
      assert.equal(res.status, 400);
    });

    it("403: a role that does not allow it; a non-admin on the admin router", async () => {
      // A colleague of the owner's nowhere else: invited, accepting.
      const invited = await api("POST", "organizations/addMember", { key: ownerKey(), body: { organizationSlug: "acme", email: "member@example.com", role: "member" } });
      assert.equal((await api("POST", "organizations/acceptInvitation", { key: memberKey(), body: { token: invited.body.token } })).status, 200);
      const res = await api("POST", "servers/createServer", { key: memberKey(), body: { organizationSlug: "acme", name: "Mine", game: "minecraft" } });
      assert.equal(res.status, 403);
      assert.equal(res.body.code, "permission_denied");
      const admin = await api("GET", "admin/listUsers", { key: memberKey() });
      assert.equal(admin.status, 403);
      assert.equal(admin.body.reason, "platform_admin_required");
    });

    it("404: unknown router or procedure, an unbuilt router, another organization's slug (same as a missing one)", async () => {
      assert.equal((await api("GET", "nothing/here", { key: ownerKey() })).status, 404);
      assert.equal((await api("GET", "servers/listEverything", { key: ownerKey() })).status, 404);
      assert.equal((await api("GET", "servers/listServers/extra", { key: ownerKey() })).status, 404);
      assert.equal((await api("POST", "alerts/anything", { key: ownerKey(), body: {} })).status, 404);
      const others = await api("GET", "servers/listServers?organizationSlug=acme", { key: outsiderKey() });
      const missing = await api("GET", "servers/listServers?organizationSlug=no-such-org", { key: outsiderKey() });
      assert.equal(others.status, 404);
      assert.equal(missing.status, 404);
      assert.equal(others.body.message.replace("acme", "X"), missing.body.message.replace("no-such-org", "X"));
    });

    it("405 with Allow: a GET on a mutation, a POST on a query, other methods", async () => {
      const get = await api("GET", "servers/createServer", { key: ownerKey() });
      assert.equal(get.status, 405);
      assert.equal(get.headers.get("allow"), "POST");
      const post = await api("POST", "servers/listServers", { key: ownerKey(), body: { organizationSlug: "acme" } });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get("allow"), "GET");
      const put = await api("PUT", "servers/createServer", { key: ownerKey() });
      assert.equal(put.status, 405);
    });

    it("409: plan limit and taken slug", async () => {
      const slug = await api("POST", "organizations/createOrganization", { key: outsiderKey(), body: { name: "Copy", slug: "acme" } });
      assert.equal(slug.status, 409);
      assert.equal(slug.body.reason, "slug_taken");
      await api("POST", "organizations/createOrganization", { key: outsiderKey(), body: { name: "Small", slug: "small" } });
      for (let i = 0; i < 3; i++) {
        const ok = await api("POST", "servers/createServer", { key: outsiderKey(), body: { organizationSlug: "small", name: `S${i}`, game: "minecraft" } });
        assert.equal(ok.status, 200);
      }
      const over = await api("POST", "servers/createServer", { key: outsiderKey(), body: { organizationSlug: "small", name: "S4", game: "minecraft" } });
      assert.equal(over.status, 409);
      assert.equal(over.body.reason, "plan_limit_reached");
    });

    it("415 for a body that is not JSON, 413 for one too large", async () => {
      const form = await api("POST", "organizations/createOrganization", {
        key: ownerKey(),
        raw: "name=x",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      assert.equal(form.status, 415);
      const big = await api("POST", "organizations/createOrganization", { key: ownerKey(), body: { name: "x".repeat(100_000), slug: "big" } });
      assert.equal(big.status, 413);
    });
  });
});
