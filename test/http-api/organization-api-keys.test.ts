import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { verifyEmail } from "../support/fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/**
 * Organization API keys over /api/http with X-API-Key, as a script uses one: its own
 * organization's procedures work with its creator's current role, another organization's
 * resources look absent, and procedures about no organization are refused.
 */
describe("http api: organization API keys", () => {
  let t: TestOutpost;
  const origin = "http://localhost:3000";

  const api = async (method: "GET" | "POST", path: string, options: { key?: string; cookie?: string; body?: unknown } = {}): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = {};
    if (options.key) headers["x-api-key"] = options.key;
    if (options.cookie) Object.assign(headers, { cookie: options.cookie, origin });
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  async function signUp(email: string): Promise<string> {
    const res = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email, password: "a long password", name: email.split("@")[0] }),
    });
    assert.equal(res.status, 201);
    return res.headers.get("set-cookie")!.split(";")[0];
  }

  let owner: string;
  let admin: string;
  let key: string;
  let keyId: string;
  let ownServer: string;
  let otherServer: string;

  before(async () => {
    t = await startTestOutpost();
    owner = await signUp("okowner@example.com");
    admin = await signUp("okadmin@example.com");
    await verifyEmail(t, "okadmin@example.com");
    for (const slug of ["alpha", "beta"]) {
      assert.equal((await api("POST", "organizations/createOrganization", { cookie: owner, body: { name: slug, slug } })).status, 200);
    }
    // Invited to alpha (a stranger to the owner then), and so added to beta at once (a colleague now).
    const invited = await api("POST", "organizations/addMember", { cookie: owner, body: { organizationSlug: "alpha", email: "okadmin@example.com", role: "admin" } });
    assert.equal((await api("POST", "organizations/acceptInvitation", { cookie: admin, body: { token: invited.body.token } })).status, 200);
    const added = await api("POST", "organizations/addMember", { cookie: owner, body: { organizationSlug: "beta", email: "okadmin@example.com", role: "admin" } });
    assert.equal(added.body.member.role, "admin");
    ownServer = (await api("POST", "servers/createServer", { cookie: owner, body: { organizationSlug: "alpha", name: "Own", game: "minecraft" } })).body.server.id;
    otherServer = (await api("POST", "servers/createServer", { cookie: owner, body: { organizationSlug: "beta", name: "Other", game: "minecraft" } })).body.server.id;
    const created = await api("POST", "organizations/createOrganizationApiKey", {
      cookie: admin,
      body: { organizationSlug: "alpha", name: "deploy bot", expiresInDays: 30 },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    key = created.body.key;
    keyId = created.body.apiKey.id;
    assert.match(key, /^opk_/);
    assert.equal(created.body.apiKey.organizationSlug, "alpha");
  });
  after(async () => {
    await t?.close();
  });

  it("works for its own organization, and listOrganizations shows that one alone", async () => {
    const list = await api("GET", "organizations/listOrganizations", { key });
    assert.deepEqual(
      list.body.organizations.map((o: Json) => o.slug),
      ["alpha"],
    );
    const servers = await api("GET", "servers/listServers?organizationSlug=alpha", { key });
    assert.equal(servers.status, 200);
    assert.deepEqual(
      servers.body.map((s: Json) => s.id),
      [ownServer],
    );
    assert.equal((await api("GET", `servers/getServer?serverId=${ownServer}`, { key })).status, 200);
    assert.equal((await api("GET", "organizations/listMembers?organizationSlug=alpha", { key })).status, 200);
  });

  it("finds nothing of another organization its creator belongs to", async () => {
    for (const res of [
      await api("GET", "servers/listServers?organizationSlug=beta", { key }),
      await api("GET", `servers/getServer?serverId=${otherServer}`, { key }),
      await api("GET", "organizations/getOrganization?organizationSlug=beta", { key }),
      await api("POST", "organizations/addMember", { key, body: { organizationSlug: "beta", email: "okowner@example.com", role: "member" } }),
    ]) {
      assert.equal(res.status, 404, JSON.stringify(res.body));
      assert.equal(res.body.code, "not_found");
    }
  });

  it("is refused by procedures about no organization", async () => {
    for (const res of [
      await api("GET", "auth/getSession", { key }),
      await api("GET", "auth/listApiKeys", { key }),
      await api("GET", "notifications/getUnreadCount", { key }),
      await api("GET", "admin/listUsers", { key }),
      await api("GET", "activity/listMyActivity", { key }),
      await api("POST", "organizations/createOrganization", { key, body: { name: "Gamma", slug: "gamma" } }),
    ]) {
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, "permission_denied");
      assert.equal(res.body.message, "an organization API key can only be used for alpha's resources");
    }
    const minted = await api("POST", "organizations/createOrganizationApiKey", { key, body: { organizationSlug: "alpha", name: "child" } });
    assert.equal(minted.status, 403);
  });

  it("is listed for the organization's managers and among its creator's own keys, marked", async () => {
    const listed = await api("GET", "organizations/listOrganizationApiKeys?organizationSlug=alpha", { cookie: owner });
    assert.deepEqual(
      listed.body.apiKeys.map((k: Json) => [k.apiKey.id, k.creatorEmail]),
      [[keyId, "okadmin@example.com"]],
    );
    assert.equal(JSON.stringify(listed.body).includes(key), false);
    const own = await api("GET", "auth/listApiKeys", { cookie: admin });
    assert.equal(own.body.apiKeys.find((k: Json) => k.id === keyId)?.organizationSlug, "alpha");
    const activity = await api("GET", "activity/listOrganizationActivity?organizationSlug=alpha", { cookie: owner });
    assert.ok(activity.body.events.some((e: Json) => e.action === "organization_api_key.created"));
  });

  it("keeps only its creator's current role, and stops when the creator is removed", async () => {
    const members = await api("GET", "organizations/listMembers?organizationSlug=alpha", { cookie: owner });
    const adminId = members.body.members.find((m: Json) => m.email === "okadmin@example.com").userId;
    await api("POST", "organizations/updateMemberRole", { cookie: owner, body: { organizationSlug: "alpha", userId: adminId, role: "member" } });
    const demoted = await api("POST", "servers/createServer", { key, body: { organizationSlug: "alpha", name: "Nope", game: "minecraft" } });
    assert.equal(demoted.status, 403);
    assert.deepEqual((await api("GET", "servers/listServers?organizationSlug=alpha", { key })).body, [], "a member without grants sees no server");

    assert.equal((await api("POST", "organizations/removeMember", { cookie: owner, body: { organizationSlug: "alpha", userId: adminId } })).status, 200);
    const after = await api("GET", "organizations/listOrganizations", { key });
    assert.equal(after.status, 401, "revoked with the membership");
    const activity = await api("GET", "activity/listOrganizationActivity?organizationSlug=alpha", { cookie: owner });
    const revoked = activity.body.events.find((e: Json) => e.action === "organization_api_key.revoked");
    assert.equal(revoked?.details?.reason, "creator_left_organization");
  });

  it("is revoked by a manager of its organization", async () => {
    const created = await api("POST", "organizations/createOrganizationApiKey", { cookie: owner, body: { organizationSlug: "beta", name: "ci" } });
    const betaKey = created.body.key;
    assert.equal((await api("GET", "organizations/listOrganizations", { key: betaKey })).status, 200);
    assert.equal(
      (await api("POST", "organizations/revokeOrganizationApiKey", { cookie: admin, body: { organizationSlug: "beta", apiKeyId: created.body.apiKey.id } })).status,
      200,
    );
    assert.equal((await api("GET", "organizations/listOrganizations", { key: betaKey })).status, 401);
    const wrongOrg = await api("POST", "organizations/revokeOrganizationApiKey", {
      cookie: owner,
      body: { organizationSlug: "alpha", apiKeyId: created.body.apiKey.id },
    });
    assert.equal(wrongOrg.status, 404);
  });
});
