/**
 * The shapes of the OpenAPI 3.1 document, as far as the generator writes them. Every part of the
 * generator speaks them; they live apart from document.ts, which imports those parts.
 */

/** A JSON Schema (2020-12 dialect, as OpenAPI 3.1 uses it). */
export type JsonSchema = { [keyword: string]: unknown };

/** A query parameter of a GET operation: one field of the request message. */
export interface OpenApiParameter {
  name: string;
  in: "query";
  required: boolean;
  description?: string;
  schema: JsonSchema;
  style?: "form";
  explode?: boolean;
}

/** One RPC method as an operation (GET for NO_SIDE_EFFECTS methods, POST for the others). */
export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  deprecated?: boolean;
  /** Query parameters, or a $ref to a shared one (the Idempotency-Key header of every POST). */
  parameters?: Array<OpenApiParameter | { $ref: string }>;
  /** A JSON body; a transfer's raw bytes (uploadFile) are application/octet-stream. */
  requestBody?: { required: boolean; content: { [mediaType: string]: { schema: JsonSchema } } };
  responses: { [status: string]: unknown };
  /** The Connect procedure behind the operation, e.g. "outpost.servers.v1.ServersService/ListServers". */
  "x-connect-procedure": string;
}

/** The document, as served at /api/http/openapi.json. */
export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string }>;
  security: Array<{ [scheme: string]: string[] }>;
  tags: Array<{ name: string; description?: string }>;
  paths: { [path: string]: { get?: OpenApiOperation; post?: OpenApiOperation; put?: OpenApiOperation } };
  components: {
    schemas: { [name: string]: JsonSchema };
    responses: { [name: string]: unknown };
    headers: { [name: string]: unknown };
    parameters: { [name: string]: unknown };
    securitySchemes: { [name: string]: unknown };
  };
}
