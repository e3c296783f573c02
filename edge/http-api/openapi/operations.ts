/**
 * Tags, paths and operations: every service with an `http_router` option is a tag, every unary
 * method an operation at /api/http/<router>/<procedure>. NO_SIDE_EFFECTS methods are GETs whose
 * request fields are query parameters; every other method is a POST whose JSON body is the request
 * message. Nothing here is written per procedure: a new RPC method appears with no code. Streams
 * are not part of the API, but for transfers (a header, then bytes), which are raw-bytes routes.
 */
import { ScalarType, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { httpResponseField, httpRouter } from "../../../contract/services.ts";
import { codeList, joinText } from "./descriptions.ts";
import type { JsonSchema, OpenApiDocument, OpenApiOperation, OpenApiParameter } from "./openapi-types.ts";
import { errorResponseRefs } from "./error-responses.ts";
import type { MessageSchemas } from "./message-schemas.ts";
import { fieldRules, requiredInRequest } from "./validate-rules.ts";

/** Where the API lives; the router, the docs and the document agree on it. */
export const httpApiBasePath = "/api/http";

/**
 * The tags and paths of the services that have an `http_router` option (the others are left
 * out), in the services' and methods' order. Fills `schemas` with every component they refer to.
 */
export function describeServices(schemas: MessageSchemas, services: readonly DescService[]): Pick<OpenApiDocument, "tags" | "paths"> {
  const exposed = services
    .map((service) => ({ service, router: httpRouter(service) }))
    .filter((s): s is { service: DescService; router: string } => s.router !== undefined);
  const unary = (service: DescService) => service.methods.filter((m) => m.methodKind === "unary");
  for (const { service } of exposed) {
    for (const method of unary(service)) schemas.collectOutputs(method.output);
  }

  const paths: OpenApiDocument["paths"] = {};
  const tags: OpenApiDocument["tags"] = [];
  for (const { service, router } of exposed) {
    tags.push({ name: router, description: schemas.comment(`s:${service.typeName}`) ?? `${service.name} (\`${service.typeName}\`).` });
    for (const method of unary(service)) {
      const query = method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
      const operation = describeMethod(schemas, router, method, query);
      paths[`${httpApiBasePath}/${router}/${method.localName}`] = query ? { get: operation } : { post: operation };
    }
    for (const method of service.methods) {
      const raw = describeRawBytes(schemas, router, method);
      if (raw) paths[`${httpApiBasePath}/${router}/${method.localName}`] = raw;
    }
  }
  return { tags, paths };
}

/** The `header` message of a transfer's stream: a `part` oneof of a header message and `data` bytes. */
function transferHeader(desc: DescMessage): DescMessage | undefined {
  const header = desc.fields.find((f) => f.name === "header");
  const data = desc.fields.find((f) => f.name === "data");
  if (header?.fieldKind !== "message" || data?.fieldKind !== "scalar" || data.scalar !== ScalarType.BYTES) return undefined;
  return header.message;
}

/**
 * The raw-bytes routes that stand for a transfer's stream (edge/http-api/transfers.ts): a
 * server-streaming method whose messages are a header and then bytes is a GET answering the bytes
 * (application/octet-stream); a client-streaming one whose messages are the same is a PUT taking
 * them as its body, its header's fields in the query. Other streams are not part of the HTTP API.
 */
function describeRawBytes(schemas: MessageSchemas, router: string, method: DescMethod): OpenApiDocument["paths"][string] | undefined {
  const download = method.methodKind === "server_streaming" && transferHeader(method.output);
  const upload = method.methodKind === "client_streaming" && transferHeader(method.input);
  if (!download && !upload) return undefined;
  const operation = operationOf(router, method);
  const description = schemas.comment(`r:${method.parent.typeName}.${method.name}`);
  if (description) operation.description = description;
  const { parameters } = queryParameters(schemas, download ? method.input : (upload as DescMessage));
  if (parameters.length) operation.parameters = parameters;
  const bytes = { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } };
  if (download) {
    operation.responses["200"] = { description: "The file's bytes (Content-Disposition names it).", content: bytes };
    Object.assign(operation.responses, errorResponseRefs("transfer"));
    return { get: operation };
  }
  operation.requestBody = { required: true, content: bytes };
  schemas.collectOutputs(method.output);
  operation.responses["200"] = { description: "Success.", content: { "application/json": { schema: responseSchema(schemas, method) } } };
  Object.assign(operation.responses, errorResponseRefs("transfer"));
  return { put: operation };
}

/** The part of a method's operation that every kind shares: its names, tag and summary. */
function operationOf(router: string, method: DescMethod): OpenApiOperation {
  return {
    operationId: `${router}.${method.localName}`,
    tags: [router],
    // The name in words: short, and the same with or without comments; the comment describes.
    summary: words(method.name),
    responses: {},
    "x-connect-procedure": `${method.parent.typeName}/${method.name}`,
  };
}

/** One method's operation: a GET with query parameters when `query`, else a POST with a body. */
function describeMethod(schemas: MessageSchemas, router: string, method: DescMethod, query: boolean): OpenApiOperation {
  const operation = operationOf(router, method);
  let description = schemas.comment(`r:${method.parent.typeName}.${method.name}`);
  if (query) {
    const { parameters, skipped } = queryParameters(schemas, method.input);
    if (parameters.length) operation.parameters = parameters;
    if (skipped.length) description = joinText(description, `Not settable in a query string: ${codeList(skipped)}.`);
  } else {
    operation.parameters = [{ $ref: "#/components/parameters/IdempotencyKey" }];
    const schema = schemas.messageRef(method.input, "request");
    const hasRequired = method.input.fields.some((f) => requiredInRequest(f, fieldRules(f)));
    operation.requestBody = { required: hasRequired, content: { "application/json": { schema } } };
  }
  if (description) operation.description = description;
  if (method.deprecated) operation.deprecated = true;

  operation.responses["200"] = {
    description: "Success.",
    content: { "application/json": { schema: responseSchema(schemas, method) } },
  };
  Object.assign(operation.responses, errorResponseRefs(query ? "query" : "mutation"));
  return operation;
}

/**
 * One query parameter per field that a query string can carry (as the router decodes it); the
 * fields that it cannot carry are returned as `skipped`, by JSON name.
 */
function queryParameters(schemas: MessageSchemas, desc: DescMessage): { parameters: OpenApiParameter[]; skipped: string[] } {
  const parameters: OpenApiParameter[] = [];
  const skipped: string[] = [];
  for (const field of desc.fields) {
    const carried =
      field.fieldKind === "scalar" ||
      field.fieldKind === "enum" ||
      (field.fieldKind === "message" && field.message.typeName === "google.protobuf.Timestamp") ||
      (field.fieldKind === "list" && field.listKind !== "message");
    if (!carried) {
      skipped.push(field.jsonName);
      continue;
    }
    const { description, ...schema } = schemas.fieldSchema(field, "request");
    const parameter: OpenApiParameter = {
      name: field.jsonName,
      in: "query",
      required: requiredInRequest(field, fieldRules(field)),
      ...(typeof description === "string" && { description }),
      schema,
    };
    if (field.fieldKind === "list") {
      parameter.style = "form";
      parameter.explode = true;
    }
    parameters.push(parameter);
  }
  return { parameters, skipped };
}

/** The 200 body: the output message, or the one field that `http_response_field` names. */
function responseSchema(schemas: MessageSchemas, method: DescMethod): JsonSchema {
  const name = httpResponseField(method);
  if (!name) return schemas.messageRef(method.output, "response");
  const field = method.output.fields.find((f) => f.name === name) ?? method.output.fields.find((f) => f.jsonName === name);
  if (!field) throw new Error(`${method.parent.typeName}.${method.name}: http_response_field "${name}" is not a field of ${method.output.typeName}`);
  const schema = schemas.fieldSchema(field, "response");
  const description = schemas.comment(`r:${method.parent.typeName}.${method.name}`);
  return { ...schema, ...(description && !schema.description && { description }) };
}

/** "RegenerateAgentKey" → "Regenerate agent key". */
function words(name: string): string {
  const acronyms: Record<string, string> = { api: "API", id: "ID", ids: "IDs", oauth: "OAuth", url: "URL" };
  // "OAuth" is one word, not "O" and "Auth".
  const parts = name.match(/OAuth|[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+/g) ?? [name];
  return parts
    .map((part, i) => {
      const lower = part.toLowerCase();
      if (acronyms[lower]) return acronyms[lower];
      return i === 0 ? lower.charAt(0).toUpperCase() + lower.slice(1) : lower;
    })
    .join(" ");
}
