import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { apiKeyHeader } from "../../contract/credentials.ts";
import { organizationScoped, services } from "../../contract/services.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { scriptInOrganization, type HttpApi } from "../support/http-api.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/**
 * Every procedure about one server takes the server's organization too (organizationId,
 * organizationSlug, both optional), as scripts that name the organization on every call send it:
 * given, it must be the server's, and any other answers exactly as an unknown server does.
 */
describe("http api: a server's organization named with its serverId", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  let api: HttpApi;
  let key: string;
  let acmeId: string;
  let serverId: string;

  const createServer = async (organizationSlug: string, name: string): Promise<Json> => {
    const created = await api("POST", "servers/createServer", { organizationSlug, name, game: "minecraft" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    return created.body.server;
  };

  before(async () => {
    t = await startTestOutpost();
    ({ api, key } = await scriptInOrganization(t));
    // The caller owns a second organization: naming it is still the wrong organization.
    assert.equal((await api("POST", "organizations/createOrganization", { name: "Beta", slug: "beta" })).status, 200);
    const server = await createServer("acme", "Survival");
    serverId = server.id;
    acmeId = server.organizationId;
    await createServer("beta", "Elsewhere");
  });
  after(async () => {
    await t?.close();
  });

  /** Each procedure about one server, called on `address` (serverId and organization fields) through the HTTP API. */
  const procedures: Record<string, (address: Record<string, string>) => ReturnType<HttpApi>> = {
    getServer: (a) => api("GET", `servers/getServer?${new URLSearchParams(a)}`),
    listPlayers: (a) => api("GET", `servers/listPlayers?${new URLSearchParams(a)}`),
    updateServer: (a) => api("POST", "servers/updateServer", { ...a, name: "Survival" }),
    regenerateAgentKey: (a) => api("POST", "servers/regenerateAgentKey", a),
    executeConsoleCommand: (a) => api("POST", "servers/executeConsoleCommand", { ...a, command: "list" }),
  };
  /** What each answers when the server is reached: executeConsoleCommand finds no agent connected. */
  const reached: Record<string, number> = { getServer: 200, listPlayers: 200, updateServer: 200, regenerateAgentKey: 200, executeConsoleCommand: 409 };

  it("accepts the server's organization by id, by slug, or both, on every procedure about one server", async () => {
    for (const [name, call] of Object.entries(procedures)) {
      const right: Array<Record<string, string>> = [{}, { organizationId: acmeId }, { organizationSlug: "acme" }, { organizationId: acmeId, organizationSlug: "acme" }];
      for (const named of right) {
        const res = await call({ serverId, ...named });
        assert.equal(res.status, reached[name], `${name} ${JSON.stringify(named)}: ${JSON.stringify(res.body)}`);
        if (name === "executeConsoleCommand") assert.equal(res.body.reason, "agent_offline");
      }
    }
  });

  it("answers another organization, one the caller is not in, or a pair that disagrees exactly as an unknown server", async () => {
    const unknown = await procedures.getServer({ serverId: randomUUID() });
    assert.equal(unknown.status, 404);
    const asUnknown = (body: Json) => ({ code: body.code, status: body.status, message: body.message, reason: body.reason });
    const wrong: Array<Record<string, string>> = [
      { organizationSlug: "beta" },
      { organizationSlug: "nobody-has-this" },
      { organizationId: randomUUID() },
      { organizationId: acmeId, organizationSlug: "beta" },
    ];
    for (const [name, call] of Object.entries(procedures)) {
      for (const named of wrong) {
        const res = await call({ serverId, ...named });
        assert.equal(res.status, 404, `${name} ${JSON.stringify(named)}`);
        assert.deepEqual(asUnknown(res.body), asUnknown(unknown.body), `${name} ${JSON.stringify(named)}`);
      }
    }
    // deleteServer too, and the server is still there afterwards.
    assert.equal((await api("POST", "servers/deleteServer", { serverId, organizationSlug: "beta" })).status, 404);
    assert.equal((await procedures.getServer({ serverId })).status, 200);
    const doomed = await createServer("acme", "Doomed");
    assert.equal((await api("POST", "servers/deleteServer", { serverId: doomed.id, organizationId: acmeId, organizationSlug: "acme" })).status, 200);
  });

  it("checks the fields' form: an id is a UUID, a slug is not empty", async () => {
    const badId = await procedures.getServer({ serverId, organizationId: "acme" });
    assert.equal(badId.status, 400);
    assert.match(badId.body.message, /organization_id/);
    const emptySlug = await procedures.executeConsoleCommand({ serverId, organizationSlug: "" });
    assert.equal(emptySlug.status, 400);
    assert.match(emptySlug.body.message, /organization_slug/);
  });

  it("the live console (a Connect stream) takes them too", async () => {
    const servers = createClient(
      ServersService,
      createConnectTransport({ baseUrl: `${t.baseUrl}/api/rpc`, httpVersion: "1.1", interceptors: [(next) => (req) => (req.header.set(apiKeyHeader, key), next(req))] }),
    );
    const first = async (organizationSlug: string) => {
      const abort = new AbortController();
      try {
        for await (const message of servers.watchConsole({ serverId, organizationSlug }, { signal: abort.signal })) return message;
      } finally {
        abort.abort();
      }
    };
    assert.equal((await first("acme"))?.online, false);
    await assert.rejects(first("beta"), (error) => ConnectError.from(error).code === Code.NotFound);
  });

  it("every request naming a server by serverId alone has both fields, and the OpenAPI document shows them", async () => {
    const lacking = services.flatMap((service) =>
      service.methods
        .filter((method) => organizationScoped(method))
        .filter((method) => {
          const field = (name: string) => method.input.fields.find((f) => f.name === name);
          const namesServer = field("server_id") && !field("server_id")!.proto.proto3Optional;
          const requiresOrganization = field("organization_slug") && !field("organization_slug")!.proto.proto3Optional;
          if (!namesServer || requiresOrganization) return false;
          return !["organization_id", "organization_slug"].every((name) => field(name)?.proto.proto3Optional);
        })
        .map((method) => `${service.name}.${method.name}`),
    );
    assert.deepEqual(lacking, []);

    const doc = (await (await fetch(`${t.baseUrl}/api/http/openapi.json`)).json()) as Json;
    const parameters = doc.paths["/api/http/servers/listPlayers"].get.parameters.map((p: Json) => p.name);
    assert.ok(parameters.includes("organizationId") && parameters.includes("organizationSlug"), JSON.stringify(parameters));
    let body = doc.paths["/api/http/servers/executeConsoleCommand"].post.requestBody.content["application/json"].schema;
    if (body.$ref) body = doc.components.schemas[body.$ref.split("/").pop()];
    assert.ok(body.properties.organizationId && body.properties.organizationSlug, JSON.stringify(body));
    assert.match(body.properties.organizationSlug.description, /must be the server's/);
  });
});
