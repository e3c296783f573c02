import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createContractValidator as createValidator } from "../../contract/validation.ts";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import Koa from "koa";
import { httpResponseField, httpRouter, services } from "../../contract/services.ts";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { CreateOrganizationRequestSchema, AddMemberRequestSchema } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServerSchema, Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { createOpenApiDocument, type JsonSchema, type OpenApiDocument, type OpenApiOperation } from "../../edge/http-api/openapi.ts";
import { apiDocs, apiDocsPaths, createApiDocsPage } from "../../edge/http-api/docs.ts";
import { messageFromApiJson, messageToApiJson } from "../../edge/http-api/json.ts";

const addFormats = addFormatsModule.default;
const version = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
const serverUrl = "https://outpost.example";

const exposed = services.filter((s) => httpRouter(s) !== undefined);

function operations(doc: OpenApiDocument): Array<{ path: string; method: "get" | "post"; operation: OpenApiOperation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    (["get", "post"] as const).filter((m) => item[m]).map((method) => ({ path, method, operation: item[method]! })),
  );
}

function operation(doc: OpenApiDocument, path: string): OpenApiOperation {
  const item = doc.paths[path];
  assert.ok(item, `no path ${path}`);
  const found = item.get ?? item.post;
  assert.ok(found);
  return found;
}

/** Follows a local $ref ("#/components/…") once. */
function deref<T>(doc: OpenApiDocument, value: T | { $ref: string }): T {
  if (value && typeof value === "object" && "$ref" in value) {
    const parts = value.$ref.replace(/^#\//, "").split("/");
    let node: unknown = doc;
    for (const part of parts) node = (node as Record<string, unknown>)[part];
    assert.ok(node, `unresolved ${value.$ref}`);
    return node as T;
  }
  return value as T;
}

function schemaOf(doc: OpenApiDocument, typeName: string): JsonSchema {
  const schema = doc.components.schemas[typeName];
  assert.ok(schema, `no component ${typeName}`);
  return schema;
}

/** Ajv (JSON Schema 2020-12) over the document's components, for checking real JSON against them. */
function schemaChecker(doc: OpenApiDocument) {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  addFormats(ajv);
  ajv.addKeyword("components"); // the document's components hold the schemas the $refs point at
  ajv.addSchema({ $id: documentId, components: doc.components });
  return (schema: JsonSchema, value: unknown): string[] => {
    const validate = ajv.compile({ ...rewriteRefs(schema) });
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  };
}

const documentId = "https://outpost.test/openapi.json";

function rewriteRefs(value: unknown): JsonSchema {
  return JSON.parse(JSON.stringify(value).replace(/"#\/components\//g, `"${documentId}#/components/`)) as JsonSchema;
}

function requestSchemaOf(doc: OpenApiDocument, path: string): JsonSchema {
  const body = operation(doc, path).requestBody;
  assert.ok(body, `${path} has no request body`);
  return deref(doc, body.content["application/json"].schema) as JsonSchema;
}

function okSchemaOf(doc: OpenApiDocument, path: string): JsonSchema {
  const ok = operation(doc, path).responses["200"] as { content: { "application/json": { schema: JsonSchema } } };
  return ok.content["application/json"].schema;
}

describe("http api: openapi document", function () {
  this.timeout(30_000);
  const doc = createOpenApiDocument({ serverUrl, version });

  it("passes an OpenAPI 3.1 validator, and every schema in it is valid JSON Schema 2020-12", async () => {
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(JSON.stringify(doc)) as Record<string, unknown>);
    assert.equal(validator.version, "3.1");
    assert.deepEqual(result.errors ?? [], [], JSON.stringify(result.errors, null, 2));
    assert.equal(result.valid, true);

    const check = schemaChecker(doc);
    for (const name of Object.keys(doc.components.schemas)) check({ $ref: `#/components/schemas/${name}` }, null);
    for (const { operation } of operations(doc)) {
      for (const parameter of operation.parameters ?? []) check(parameter.schema, null);
    }
  });

  it("has the title, the version from package.json, the server and tags", () => {
    assert.equal(doc.openapi, "3.1.0");
    assert.equal(doc.info.title, "Outpost HTTP API");
    assert.equal(doc.info.version, version);
    assert.deepEqual(doc.servers, [{ url: serverUrl }]);
    assert.deepEqual(
      doc.tags.map((t) => t.name),
      exposed.map((s) => httpRouter(s)),
    );
  });

  it("is the same every time it is made", () => {
    assert.equal(JSON.stringify(createOpenApiDocument({ serverUrl, version })), JSON.stringify(doc));
  });

  it("has every method of every exposed service, with GET for queries and POST for the rest", () => {
    const expected = new Map<string, "get" | "post">();
    for (const service of exposed) {
      for (const method of service.methods) {
        if (method.methodKind !== "unary") continue;
        expected.set(`/api/http/${httpRouter(service)}/${method.localName}`, method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS ? "get" : "post");
      }
    }
    assert.ok(expected.size >= 27, `only ${expected.size} methods`);
    const actual = new Map(operations(doc).map(({ path, method }) => [path, method]));
    assert.deepEqual([...actual].sort(), [...expected].sort());
    for (const service of exposed) {
      const router = httpRouter(service)!;
      for (const method of service.methods) {
        if (method.methodKind !== "unary") continue; // streams are not part of the HTTP API
        const op = operation(doc, `/api/http/${router}/${method.localName}`);
        assert.equal(op.operationId, `${router}.${method.localName}`);
        assert.deepEqual(op.tags, [router]);
        assert.equal(op["x-connect-procedure"], `${service.typeName}/${method.name}`);
        assert.ok(op.summary.length > 0);
      }
    }
    // The contract's public names.
    assert.ok(doc.paths["/api/http/auth/getSession"].get);
    assert.ok(doc.paths["/api/http/auth/createApiKey"].post);
    assert.ok(doc.paths["/api/http/auth/listSessions"].get);
    assert.ok(doc.paths["/api/http/auth/revokeSession"].post);
    assert.ok(doc.paths["/api/http/auth/revokeOtherSessions"].post);
    assert.ok(doc.paths["/api/http/auth/changePassword"].post);
    assert.ok(doc.paths["/api/http/servers/listServers"].get);
    assert.ok(doc.paths["/api/http/servers/regenerateAgentKey"].post);
    assert.ok(doc.paths["/api/http/servers/executeConsoleCommand"].post);
    assert.ok(doc.paths["/api/http/servers/listPlayers"].get);
    assert.equal(doc.paths["/api/http/servers/watchConsole"], undefined, "a stream");
    assert.ok(doc.paths["/api/http/activity/listOrganizationActivity"].get);
    assert.ok(doc.paths["/api/http/pwa/getPushConfig"].get);
    assert.ok(doc.paths["/api/http/pwa/listSubscriptions"].get);
    assert.ok(doc.paths["/api/http/pwa/subscribe"].post);
    assert.ok(doc.paths["/api/http/pwa/unsubscribe"].post);
    assert.ok(doc.paths["/api/http/pwa/sendTestPush"].post);
    assert.ok(doc.paths["/api/http/activity/acknowledgeOrganizationActivityEvent"].post);
    assert.ok(doc.paths["/api/http/knowledge/listNotes"].get);
    assert.ok(doc.paths["/api/http/knowledge/updateNote"].post);
  });

  it("leaves out IdentityService and everything only it uses", () => {
    assert.equal(httpRouter(IdentityService), undefined);
    const text = JSON.stringify(doc);
    assert.ok(!text.includes("outpost.identity."), "an identity type is in the document");
    for (const method of IdentityService.methods) {
      assert.ok(!Object.keys(doc.paths).some((p) => p.endsWith(`/${method.localName}`)), `${method.localName} is exposed`);
    }
  });

  it("gives GET queries one query parameter per request field, and POSTs a JSON body", () => {
    for (const { method, operation: op } of operations(doc)) {
      if (method === "get") {
        assert.equal(op.requestBody, undefined);
      } else {
        assert.equal(op.parameters, undefined);
        assert.ok(op.requestBody?.content["application/json"].schema);
      }
    }
    const activity = operation(doc, "/api/http/activity/listOrganizationActivity");
    const params = new Map((activity.parameters ?? []).map((p) => [p.name, p]));
    assert.deepEqual([...params.keys()], ["organizationSlug", "serverId", "action", "limit", "before", "kind", "severity", "cursor"]);
    assert.ok([...params.values()].every((p) => p.in === "query"));
    assert.equal(params.get("organizationSlug")!.required, true);
    assert.deepEqual(params.get("organizationSlug")!.schema, { type: "string", minLength: 1, maxLength: 40 });
    assert.equal(params.get("serverId")!.required, false);
    assert.equal(params.get("serverId")!.schema.format, "uuid");
    assert.equal(params.get("limit")!.required, false);
    assert.equal(params.get("limit")!.schema.type, "integer");
    assert.equal(params.get("limit")!.schema.minimum, 1);
    assert.equal(params.get("limit")!.schema.maximum, 200);
    assert.equal(params.get("action")!.schema.pattern, "^[a-z_]+(\\.[a-z_]+)?$");
    // Kinds and severities as the API names them, any number of each (repeated keys).
    assert.equal(params.get("kind")!.schema.type, "array");
    assert.deepEqual((params.get("kind")!.schema.items as { enum: string[] }).enum, ["status", "access", "player_admin", "oauth", "security", "account", "configuration"]);
    assert.deepEqual((params.get("severity")!.schema.items as { enum: string[] }).enum, ["info", "warning", "error"]);
    assert.deepEqual(operation(doc, "/api/http/servers/listServers").parameters?.map((p) => [p.name, p.required]), [["organizationSlug", true]]);
    assert.equal(operation(doc, "/api/http/auth/getSession").parameters, undefined);
  });

  it("answers servers/listServers with a JSON array of Server", () => {
    const schema = okSchemaOf(doc, "/api/http/servers/listServers");
    assert.equal(schema.type, "array");
    assert.deepEqual(schema.items, { $ref: "#/components/schemas/outpost.servers.v1.Server" });
    const server = schemaOf(doc, "outpost.servers.v1.Server");
    assert.deepEqual(Object.keys(server.properties as object), ServerSchema.fields.map((f) => f.jsonName));
  });

  it("requires organizations/createOrganization's name and slug, with their lengths and the slug's pattern", () => {
    const schema = requestSchemaOf(doc, "/api/http/organizations/createOrganization");
    const properties = schema.properties as Record<string, JsonSchema>;
    assert.deepEqual(schema.required, ["name", "slug"]);
    assert.equal(schema.additionalProperties, false);
    assert.equal(properties.name.type, "string");
    assert.equal(properties.name.minLength, 1);
    assert.equal(properties.name.maxLength, 80);
    assert.equal(properties.slug.minLength, 3);
    assert.equal(properties.slug.maxLength, 40);
    assert.equal(properties.slug.pattern, "^[a-z0-9]+(-[a-z0-9]+)*$");
    // Each rule is also said in the words the service answers with.
    assert.match(properties.slug.description as string, /Must be lower-case letters and digits/);
    assert.match(properties.name.description as string, /Must not begin or end with a space\. Must be one line, without control characters or bidirectional text controls\./);
    assert.equal(operation(doc, "/api/http/organizations/createOrganization").requestBody?.required, true);
    assert.equal(operation(doc, "/api/http/auth/revokeApiKey").requestBody?.required, true);

    // The schema refuses what the service refuses, and accepts what it accepts.
    const check = schemaChecker(doc);
    const validator = createValidator();
    const cases: Array<[unknown, boolean]> = [
      [{ name: "Acme", slug: "acme" }, true],
      [{ name: "Acme Games", slug: "acme-games-2" }, true],
      [{ name: "Acme", slug: "Acme" }, false],
      [{ name: "Acme", slug: "ac" }, false],
      [{ name: "Acme", slug: "a".repeat(41) }, false],
      [{ name: " Acme", slug: "acme" }, false],
      [{ name: "Acme\u001b]0;owned\u0007", slug: "acme" }, false],
      [{ name: "Acme\rGames", slug: "acme" }, false],
      [{ name: "Acme \u202eemag", slug: "acme" }, false],
      [{ name: "שלום Games", slug: "acme" }, true],
      [{ name: "A".repeat(81), slug: "acme" }, false],
      [{ slug: "acme" }, false],
      [{ name: "Acme" }, false],
    ];
    for (const [input, valid] of cases) {
      assert.equal(check(schema, input).length === 0, valid, `schema on ${JSON.stringify(input)}`);
      const message = messageFromApiJson(CreateOrganizationRequestSchema, input as never);
      assert.equal(validator.validate(CreateOrganizationRequestSchema, message).kind === "valid", valid, `protovalidate on ${JSON.stringify(input)}`);
    }
    assert.notDeepEqual(check(schema, { name: "Acme", slug: "acme", plan: "pro" }), [], "an unknown field passed");
  });

  it("writes enums as short lower-case names", () => {
    const createServer = requestSchemaOf(doc, "/api/http/servers/createServer");
    assert.deepEqual((createServer.properties as Record<string, JsonSchema>).game, { type: "string", enum: ["minecraft", "hytale"] });
    assert.ok((createServer.required as string[]).includes("game"));
    // Responses may carry the zero value too.
    assert.deepEqual(schemaOf(doc, "outpost.servers.v1.Game").enum, ["unspecified", "minecraft", "hytale"]);
    // Rules narrow the names a request may use.
    const addMember = requestSchemaOf(doc, "/api/http/organizations/addMember");
    assert.deepEqual((addMember.properties as Record<string, JsonSchema>).role.enum, ["admin", "member"]);
    assert.deepEqual(addMember.required, ["organizationSlug", "email", "role"]);
    assert.equal((addMember.properties as Record<string, JsonSchema>).email.format, "email");
    const validator = createValidator();
    const owner = messageFromApiJson(AddMemberRequestSchema, { organizationSlug: "acme", email: "a@example.com", role: "owner" });
    assert.equal(validator.validate(AddMemberRequestSchema, owner).kind, "invalid");
    assert.notDeepEqual(schemaChecker(doc)(addMember, { organizationSlug: "acme", email: "a@example.com", role: "owner" }), []);
  });

  it("describes a oneof as alternatives and the rules JSON Schema cannot hold", () => {
    const schema = requestSchemaOf(doc, "/api/http/auth/createApiKey");
    const properties = schema.properties as Record<string, JsonSchema>;
    assert.deepEqual(schema.required, ["name"]);
    assert.deepEqual(properties.expiresInDays.enum, [7, 30, 90, 365]);
    assert.equal(properties.expiresAt.format, "date-time");
    assert.match(properties.expiresAt.description as string, /future/);
    const check = schemaChecker(doc);
    assert.deepEqual(check(schema, { name: "ci", expiresInDays: 30 }), []);
    assert.deepEqual(check(schema, { name: "ci" }), []);
    assert.notDeepEqual(check(schema, { name: "ci", expiresInDays: 30, expiresAt: "2030-01-01T00:00:00Z" }), []);
    assert.notDeepEqual(check(schema, { name: "ci", expiresInDays: 31 }), []);
  });

  it("marks every field a response always carries as required, and matches the JSON the API writes", () => {
    const check = schemaChecker(doc);
    for (const service of exposed) {
      for (const method of service.methods) {
        if (method.methodKind !== "unary") continue;
        const path = `/api/http/${httpRouter(service)}/${method.localName}`;
        const schema = okSchemaOf(doc, path);
        // An empty answer: every implicit field present at its default ("unspecified" enums, [] lists).
        const json = messageToApiJson(method.output, create(method.output as DescMessage)) as Record<string, unknown>;
        const field = httpResponseField(method);
        const body = field ? json[field] : json;
        assert.deepEqual(check(schema, body), [], `${path}: empty answer`);
        if (!field) {
          const component = deref(doc, schema) as JsonSchema;
          assert.deepEqual(component.required ?? [], Object.keys(json), `${path}: required fields`);
        }
      }
    }
    // A full server, as listServers answers it.
    const server = create(ServerSchema, {
      id: "0b4e7c5e-3d1c-4f8e-9a57-2a4d8c1f6e10",
      organizationId: "7f1d2c3b-4a5e-4f60-8b7a-9c0d1e2f3a4b",
      name: "Survival",
      game: Game.HYTALE,
      online: true,
      lastSeenAt: timestampFromDate(new Date("2030-01-02T03:04:05Z")),
      agentKeyPrefix: "opa_AbCd1234",
      playerCount: 3,
      createdAt: timestampFromDate(new Date("2030-01-01T00:00:00Z")),
    });
    const listed = [messageToApiJson(ServerSchema, server)];
    assert.equal((listed[0] as { game: string }).game, "hytale");
    assert.deepEqual(check(okSchemaOf(doc, "/api/http/servers/listServers"), listed), []);
    assert.notDeepEqual(check(okSchemaOf(doc, "/api/http/servers/listServers"), [{ ...(listed[0] as object), game: "GAME_HYTALE" }]), []);
  });

  it("has both security schemes, required by every operation", () => {
    assert.deepEqual(doc.components.securitySchemes.apiKey, {
      type: "apiKey",
      in: "header",
      name: "X-API-Key",
      description: (doc.components.securitySchemes.apiKey as { description: string }).description,
    });
    assert.deepEqual(doc.components.securitySchemes.session, {
      type: "apiKey",
      in: "cookie",
      // The deployment is https: the session cookie is __Host- prefixed (on http it is not).
      name: "__Host-outpost_session",
      description: (doc.components.securitySchemes.session as { description: string }).description,
    });
    assert.equal((createOpenApiDocument({ serverUrl: "http://localhost:3000", version }).components.securitySchemes.session as { name: string }).name, "outpost_session");
    assert.deepEqual(doc.security, [{ apiKey: [] }, { session: [] }]);
    for (const { operation: op } of operations(doc)) assert.equal((op as { security?: unknown }).security, undefined, `${op.operationId} overrides security`);
  });

  it("lists 400, 401, 403, 404, 409, 429 and 500 with the error schema on every operation", () => {
    const check = schemaChecker(doc);
    for (const { method, operation: op } of operations(doc)) {
      const statuses = ["200", "400", "401", "403", "404", "409", "429", "500", ...(method === "post" ? ["413", "415"] : [])];
      assert.deepEqual(Object.keys(op.responses).sort(), statuses.sort(), op.operationId);
      for (const status of statuses.filter((s) => s !== "200")) {
        const response = deref(doc, op.responses[status] as { $ref: string }) as unknown as {
          content: { "application/json": { schema: JsonSchema; example: { status: number; requestId?: string } } };
          headers?: Record<string, unknown>;
        };
        const media = response.content["application/json"];
        assert.deepEqual(media.schema, { $ref: "#/components/schemas/Error" });
        assert.deepEqual(check(media.schema, media.example), [], `${status} example`);
        assert.equal(media.example.status, Number(status));
        if (status === "500") assert.ok(media.example.requestId);
        if (status === "429") {
          const headers = response.headers!;
          assert.deepEqual(Object.keys(headers).sort(), ["RateLimit", "RateLimit-Policy", "Retry-After"]);
          const retryAfter = deref(doc, headers["Retry-After"] as { $ref: string }) as unknown as { schema: JsonSchema };
          assert.equal(retryAfter.schema.type, "integer");
        }
      }
    }
    const error = schemaOf(doc, "Error");
    assert.deepEqual(error.required, ["code", "status", "message"]);
    assert.deepEqual(Object.keys(error.properties as object), ["code", "status", "message", "reason", "requestId", "details"]);
    assert.deepEqual(check(error, { code: "invalid_argument", status: 400, message: "bad", details: [{ field: "slug", message: "too short", rule: "string.min_len" }] }), []);
    assert.notDeepEqual(check(error, { code: "invalid_argument", message: "no status" }), []);
  });

  it("takes descriptions from the proto comments when given a descriptor set with source info", function () {
    const dir = mkdtempSync(join(tmpdir(), "outpost-openapi-"));
    try {
      const image = join(dir, "outpost.binpb");
      const buf = new URL("../../node_modules/.bin/buf", import.meta.url).pathname;
      execFileSync(buf, ["build", "--exclude-imports", "--path", "proto/outpost", "-o", image], { cwd: new URL("../..", import.meta.url).pathname });
      const described = createOpenApiDocument({ serverUrl, version, sourceInfo: readFileSync(image) });
      const createServer = operation(described, "/api/http/servers/createServer");
      assert.equal(createServer.summary, "Create server");
      assert.match(createServer.description ?? "", /agent key is in this response only/);
      const online = (schemaOf(described, "outpost.servers.v1.Server").properties as Record<string, JsonSchema>).online;
      assert.equal(online.description, "True while the server's agent is connected.");
      assert.match(described.tags.find((t) => t.name === "servers")!.description ?? "", /Game servers of an organization/);
      // Comments change descriptions only.
      assert.deepEqual(Object.keys(described.paths), Object.keys(doc.paths));
      assert.deepEqual(Object.keys(described.components.schemas), Object.keys(doc.components.schemas));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("describes only the services it is given", () => {
    const only: DescService[] = services.filter((s) => httpRouter(s) === "servers");
    const small = createOpenApiDocument({ serverUrl, version, services: only });
    assert.ok(Object.keys(small.paths).every((p) => p.startsWith("/api/http/servers/")));
    assert.ok(!Object.keys(small.components.schemas).some((name) => name.startsWith("outpost.auth.")));
  });
});

describe("http api: docs page", function () {
  this.timeout(30_000);
  const page = createApiDocsPage();

  it("loads the document from /api/http/openapi.json with no inline script, under a strict CSP", () => {
    assert.match(page.html, /data-spec-url="\/api\/http\/openapi\.json"/);
    const scripts = [...page.html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length >= 2);
    for (const [, attributes, body] of scripts) {
      assert.match(attributes, /src="\/api\/http\/docs\/assets\//);
      assert.equal(body.trim(), "");
    }
    assert.ok(!/\sstyle=|<style/i.test(page.html), "inline style");
    assert.ok(!/https?:\/\//.test(page.html), "a remote URL in the page");
    assert.ok(!/unsafe-inline|unsafe-eval|\*/.test(page.contentSecurityPolicy), page.contentSecurityPolicy);
    assert.match(page.contentSecurityPolicy, /script-src 'self'/);
    for (const [, name] of page.html.matchAll(/\/api\/http\/docs\/assets\/([\w.-]+)\?v=/g)) assert.ok(page.assets.has(name), name);
    assert.match(page.assets.get("docs.js")!.body.toString(), /SwaggerUIBundle\(/);
    assert.ok(page.assets.get("swagger-ui-bundle.js")!.body.length > 500_000);
  });

  it("is served with the document and the assets by the middleware", async () => {
    const doc = createOpenApiDocument({ serverUrl, version });
    const app = new Koa();
    app.use(apiDocs({ document: doc, page }));
    app.use(async (ctx) => {
      ctx.status = 418;
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const json = await fetch(base + apiDocsPaths.document);
      assert.equal(json.status, 200);
      assert.match(json.headers.get("content-type") ?? "", /^application\/json/);
      assert.deepEqual(await json.json(), JSON.parse(JSON.stringify(doc)));
      const again = await fetch(base + apiDocsPaths.document, { headers: { "if-none-match": json.headers.get("etag")! } });
      assert.equal(again.status, 304);

      const html = await fetch(base + apiDocsPaths.page);
      assert.equal(html.status, 200);
      assert.match(html.headers.get("content-type") ?? "", /^text\/html/);
      assert.equal(html.headers.get("content-security-policy"), page.contentSecurityPolicy);
      assert.equal(await html.text(), page.html);

      for (const [name, asset] of page.assets) {
        const response = await fetch(`${base}${apiDocsPaths.assets}${name}?v=${asset.hash}`);
        assert.equal(response.status, 200, name);
        assert.equal(response.headers.get("content-type"), asset.contentType);
        assert.match(response.headers.get("cache-control") ?? "", /immutable/);
        assert.equal(Buffer.from(await response.arrayBuffer()).equals(asset.body), true, name);
      }
      assert.equal((await fetch(`${base}${apiDocsPaths.assets}..%2fpackage.json`)).status, 404);
      assert.equal((await fetch(`${base}${apiDocsPaths.assets}nope.js`)).status, 404);
      const post = await fetch(base + apiDocsPaths.document, { method: "POST" });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get("allow"), "GET, HEAD");
      assert.equal((await fetch(`${base}/api/http/servers/listServers`)).status, 418, "other paths go on");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
