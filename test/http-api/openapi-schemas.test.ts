import { strict as assert } from "node:assert";
import { create, type DescMessage } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createContractValidator as createValidator } from "../../contract/validation.ts";
import { httpResponseField, httpRouter } from "../../contract/services.ts";
import { CreateOrganizationRequestSchema, AddMemberRequestSchema } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServerSchema, Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { createOpenApiDocument, type JsonSchema } from "../../edge/http-api/openapi.ts";
import { messageFromApiJson, messageToApiJson } from "../../edge/http-api/json.ts";
import { deref, exposed, okSchemaOf, operation, requestSchemaOf, schemaChecker, schemaOf, serverUrl, version } from "./openapi-helpers.ts";

/** The document's schemas: what a request must hold and what a response always carries, checked against the JSON the API reads and writes. */
describe("http api: openapi document's schemas", function () {
  this.timeout(30_000);
  const doc = createOpenApiDocument({ serverUrl, version });

  it("answers servers/listServers with a JSON array of Server", () => {
    const schema = okSchemaOf(doc, "/api/http/servers/listServers");
    assert.equal(schema.type, "array");
    assert.deepEqual(schema.items, { $ref: "#/components/schemas/outpost.servers.v1.Server" });
    const server = schemaOf(doc, "outpost.servers.v1.Server");
    assert.deepEqual(
      Object.keys(server.properties as object),
      ServerSchema.fields.map((f) => f.jsonName),
    );
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
    assert.match(
      properties.name.description as string,
      /Must not begin or end with a space\. Must be one line, without control characters or bidirectional text controls\./,
    );
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
});
