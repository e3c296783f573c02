import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { scriptInOrganization, type HttpApi } from "../support/http-api.ts";

/** Game OAuth client management through the HTTP API, as a script drives it. */
describe("http api: organizations' Game OAuth clients", () => {
  let t: TestOutpost;
  let api: HttpApi;

  before(async () => {
    t = await startTestOutpost();
    ({ api } = await scriptInOrganization(t));
  });
  after(async () => {
    await t?.close();
  });

  let clientId: string;

  it('createGameOAuthClient → {client:{clientId, …, verifierPolicy:"selected_servers"}, clientSecret}', async () => {
    const server = await api("POST", "servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });
    const serverId = server.body.server.id;
    const res = await api("POST", "organizations/createGameOAuthClient", {
      organizationSlug: "acme",
      name: "Forum",
      redirectUris: ["HTTPS://Forum.Example.com:443/cb/"],
      verifierPolicy: "selected_servers",
      allowedServerIds: [serverId],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { client, clientSecret } = res.body;
    clientId = client.clientId;
    assert.match(clientId, /^ogc_[0-9A-Za-z]{24}$/);
    assert.match(clientSecret, /^ogs_[0-9A-Za-z]{40}$/);
    assert.deepEqual(
      { ...client, createdAt: typeof client.createdAt },
      {
        clientId,
        name: "Forum",
        redirectUris: ["https://forum.example.com/cb/"],
        verifierPolicy: "selected_servers",
        allowedServerIds: [serverId],
        disabled: false,
        createdAt: "string",
        clientSecretPrefix: clientSecret.slice(0, 12),
        idTokenSignedResponseAlg: "RS256",
      },
    );
    const list = await api("GET", "organizations/listGameOAuthClients?organizationSlug=acme");
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.clients, [client]);
    assert.equal(JSON.stringify(list.body).includes(clientSecret), false);
  });

  it("updateGameOAuthClient takes wrapped lists and plain fields; rotateGameOAuthClientSecret → {clientId, clientSecret}", async () => {
    const updated = await api("POST", "organizations/updateGameOAuthClient", {
      clientId,
      verifierPolicy: "any_server",
      redirectUris: { uris: ["https://forum.example.com/cb/", "http://localhost:8080/cb"] },
      disabled: true,
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.client.verifierPolicy, "any_server");
    assert.deepEqual(updated.body.client.allowedServerIds, []);
    assert.deepEqual(updated.body.client.redirectUris, ["https://forum.example.com/cb/", "http://localhost:8080/cb"]);
    assert.equal(updated.body.client.disabled, true);
    const bad = await api("POST", "organizations/updateGameOAuthClient", { clientId, redirectUris: { uris: ["http://forum.example.com/cb"] } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /redirectUris\[0\]: must use https/);
    const rotated = await api("POST", "organizations/rotateGameOAuthClientSecret", { clientId });
    assert.equal(rotated.status, 200);
    assert.deepEqual(Object.keys(rotated.body).sort(), ["clientId", "clientSecret"]);
    assert.equal(rotated.body.clientId, clientId);
    assert.match(rotated.body.clientSecret, /^ogs_/);
    const got = await api("GET", `organizations/getGameOAuthClient?clientId=${clientId}`);
    assert.equal(got.body.client.clientSecretPrefix, rotated.body.clientSecret.slice(0, 12));
  });

  it("the plan limit is 409 plan_limit_reached; deleteGameOAuthClient → {}", async () => {
    const body = { organizationSlug: "acme", name: "Second", redirectUris: ["https://b.example.com/cb"], verifierPolicy: "any_server" };
    assert.equal((await api("POST", "organizations/createGameOAuthClient", body)).status, 200);
    const over = await api("POST", "organizations/createGameOAuthClient", { ...body, name: "Third" });
    assert.equal(over.status, 409);
    assert.equal(over.body.reason, "plan_limit_reached");
    const deleted = await api("POST", "organizations/deleteGameOAuthClient", { clientId });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, {});
    assert.equal((await api("GET", `organizations/getGameOAuthClient?clientId=${clientId}`)).status, 404);
    assert.equal((await api("POST", "organizations/createGameOAuthClient", { ...body, name: "Third" })).status, 200);
  });
});
