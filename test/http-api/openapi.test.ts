import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Validator } from "@seriousme/openapi-schema-validator";
import { httpRouter, services } from "../../contract/services.ts";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { createOpenApiDocument, type JsonSchema } from "../../edge/http-api/openapi.ts";
import type { OpenApiOperation, OpenApiParameter } from "../../edge/http-api/openapi/openapi-types.ts";
import { deref, exposed, operation, operations, schemaChecker, schemaOf, serverUrl, version } from "./openapi-helpers.ts";

/** An operation's own parameters (its query's), without the shared ones it refers to. */
const queryParameters = (op: OpenApiOperation) => (op.parameters ?? []).filter((p): p is OpenApiParameter => !("$ref" in p));

describe("http api: openapi document", function () {
  /** The raw-bytes routes (a file's bytes, not JSON), beside the generated procedures. */
  const transfers = new Set(["servers.downloadFile", "servers.uploadFile"]);
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
      for (const parameter of queryParameters(operation)) check(parameter.schema, null);
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

  it("has every method of every exposed service, with GET for queries and POST for the rest, and the transfers' raw-bytes routes", () => {
    const expected = new Map<string, "get" | "post" | "put">([
      ["/api/http/servers/downloadFile", "get"],
      ["/api/http/servers/uploadFile", "put"],
    ]);
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
    const upload = doc.paths["/api/http/servers/uploadFile"].put!;
    assert.deepEqual(Object.keys(upload.requestBody!.content), ["application/octet-stream"]);
    assert.deepEqual(
      queryParameters(upload).map((p) => p.name),
      ["serverId", "path", "expectedSha256", "organizationId", "organizationSlug"],
    );
    const download = doc.paths["/api/http/servers/downloadFile"].get!;
    assert.deepEqual(Object.keys((download.responses["200"] as { content: object }).content), ["application/octet-stream"]);
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
      if (transfers.has(op.operationId)) continue; // raw bytes: checked in "has every method…"
      if (method === "get") {
        assert.equal(op.requestBody, undefined);
      } else {
        // Every POST takes an Idempotency-Key header, and no query parameter.
        assert.deepEqual(op.parameters, [{ $ref: "#/components/parameters/IdempotencyKey" }], op.operationId);
        assert.ok(op.requestBody?.content["application/json"].schema);
        assert.deepEqual(op.responses["422"], { $ref: "#/components/responses/UnprocessableEntity" }, op.operationId);
      }
    }
    const activity = operation(doc, "/api/http/activity/listOrganizationActivity");
    const params = new Map(queryParameters(activity).map((p) => [p.name, p]));
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
    assert.deepEqual((params.get("kind")!.schema.items as { enum: string[] }).enum, [
      "status",
      "access",
      "player_admin",
      "oauth",
      "security",
      "account",
      "configuration",
    ]);
    assert.deepEqual((params.get("severity")!.schema.items as { enum: string[] }).enum, ["info", "warning", "error"]);
    assert.deepEqual(
      queryParameters(operation(doc, "/api/http/servers/listServers")).map((p) => [p.name, p.required]),
      [["organizationSlug", true]],
    );
    assert.equal(operation(doc, "/api/http/auth/getSession").parameters, undefined);
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

  it("lists 400, 401, 403, 404, 409, 429 and 500 with the error schema on every operation (and 413, 415, 422 on POSTs)", () => {
    const check = schemaChecker(doc);
    for (const { method, operation: op } of operations(doc)) {
      const extra = transfers.has(op.operationId) ? ["413"] : method === "post" ? ["413", "415", "422"] : [];
      const statuses = ["200", "400", "401", "403", "404", "409", "429", "500", ...extra];
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
    assert.deepEqual(
      check(error, { code: "invalid_argument", status: 400, message: "bad", details: [{ field: "slug", message: "too short", rule: "string.min_len" }] }),
      [],
    );
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
