/**
 * Reading the OpenAPI document in the HTTP API's tests: its operations, a schema by name or by an
 * operation's body, a local $ref followed, and a JSON Schema checker over its components.
 */
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { httpRouter, services } from "../../contract/services.ts";
import type { JsonSchema, OpenApiDocument, OpenApiOperation } from "../../edge/http-api/openapi.ts";

const addFormats = addFormatsModule.default;
export const version = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
export const serverUrl = "https://outpost.example";

export const exposed = services.filter((s) => httpRouter(s) !== undefined);

export function operations(doc: OpenApiDocument): Array<{ path: string; method: "get" | "post" | "put"; operation: OpenApiOperation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    (["get", "post", "put"] as const).filter((m) => item[m]).map((method) => ({ path, method, operation: item[method]! })),
  );
}

export function operation(doc: OpenApiDocument, path: string): OpenApiOperation {
  const item = doc.paths[path];
  assert.ok(item, `no path ${path}`);
  const found = item.get ?? item.post ?? item.put;
  assert.ok(found);
  return found;
}

/** Follows a local $ref ("#/components/…") once. */
export function deref<T>(doc: OpenApiDocument, value: T | { $ref: string }): T {
  if (value && typeof value === "object" && "$ref" in value) {
    const parts = value.$ref.replace(/^#\//, "").split("/");
    let node: unknown = doc;
    for (const part of parts) node = (node as Record<string, unknown>)[part];
    assert.ok(node, `unresolved ${value.$ref}`);
    return node as T;
  }
  return value as T;
}

export function schemaOf(doc: OpenApiDocument, typeName: string): JsonSchema {
  const schema = doc.components.schemas[typeName];
  assert.ok(schema, `no component ${typeName}`);
  return schema;
}

/** Ajv (JSON Schema 2020-12) over the document's components, for checking real JSON against them. */
export function schemaChecker(doc: OpenApiDocument) {
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

export function requestSchemaOf(doc: OpenApiDocument, path: string): JsonSchema {
  const body = operation(doc, path).requestBody;
  assert.ok(body, `${path} has no request body`);
  return deref(doc, body.content["application/json"].schema) as JsonSchema;
}

export function okSchemaOf(doc: OpenApiDocument, path: string): JsonSchema {
  const ok = operation(doc, path).responses["200"] as { content: { "application/json": { schema: JsonSchema } } };
  return ok.content["application/json"].schema;
}
