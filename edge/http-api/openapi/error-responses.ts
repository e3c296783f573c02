/**
 * What every operation shares: the error answers (one `Error` shape, one reusable response per
 * status), the rate-limit headers and the two ways to authenticate. Fixed text, not generated.
 */
import type { JsonSchema, OpenApiDocument } from "./openapi-types.ts";
import { secretPrefixes } from "../../../contract/secrets.ts";

/** The reusable error responses, by HTTP status: the component's name, its description and an example body. */
const errorResponses = {
  "400": {
    name: "BadRequest",
    text: "The input is invalid: a malformed body or parameter, an unknown field, or a validation rule. `details` names the fields.",
    example: {
      code: "invalid_argument",
      status: 400,
      message: "validation failed",
      details: [{ field: "slug", message: "value length must be at least 3 characters", rule: "string.min_len" }],
    },
  },
  "401": {
    name: "Unauthorized",
    text: "No credential, or an unknown, expired or revoked one (agent keys and Bearer tokens are refused too).",
    example: { code: "unauthenticated", status: 401, message: "sign in or send an API key in the X-API-Key header" },
  },
  "403": {
    name: "Forbidden",
    text: "The caller may not do this: membership, role, server grant or platform admin; also a cross-site request made with the session cookie.",
    example: { code: "permission_denied", status: 403, message: "only an owner or an admin may do this" },
  },
  "404": {
    name: "NotFound",
    text: "No such procedure, or a resource that does not exist or that the caller cannot see.",
    example: { code: "not_found", status: 404, message: "no such organization" },
  },
  "409": {
    name: "Conflict",
    text: "The resource's state does not allow it (already exists, the last owner, a plan limit, the first request with this `Idempotency-Key` still running: `reason` says which).",
    example: { code: "failed_precondition", status: 409, message: "the plan allows 3 servers", reason: "plan_limit_reached" },
  },
  "413": {
    name: "PayloadTooLarge",
    text: "The JSON body is too large.",
    example: { code: "payload_too_large", status: 413, message: "the body is larger than 65536 bytes" },
  },
  "415": {
    name: "UnsupportedMediaType",
    text: "The body is not sent as `application/json`.",
    example: { code: "unsupported_media_type", status: 415, message: "send the input as a JSON object with Content-Type: application/json" },
  },
  "422": {
    name: "UnprocessableEntity",
    text: "The `Idempotency-Key` was used before, by the same caller, for a different procedure or body. Use a new key for a new request.",
    example: { code: "invalid_argument", status: 422, message: "this Idempotency-Key was used for a different request", reason: "idempotency_key_reused" },
  },
  "429": {
    name: "TooManyRequests",
    text: "Rate limited: try again after `Retry-After` seconds.",
    example: { code: "resource_exhausted", status: 429, message: "too many requests", reason: "rate_limited" },
  },
  "500": {
    name: "InternalError",
    text: "The request failed. The answer says nothing more; quote `requestId` when reporting it.",
    example: { code: "internal", status: 500, message: "the request failed; quote the request id when reporting it", requestId: "8f14e45f-ceea-467f-a0e6-7c2b1c5d9a3e" },
  },
} as const;

const errorStatuses = {
  query: ["400", "401", "403", "404", "409", "429", "500"],
  // Only a body can be too large or of the wrong media type.
  mutation: ["400", "401", "403", "404", "409", "413", "415", "422", "429", "500"],
  // A transfer's raw bytes: a file larger than the deployment takes (413) either way, any media type.
  transfer: ["400", "401", "403", "404", "409", "413", "429", "500"],
} as const satisfies { [kind: string]: ReadonlyArray<keyof typeof errorResponses> };

/** The error answers of a read-only (GET), other (POST) or transfer operation, as $refs to the shared responses. */
export function errorResponseRefs(kind: keyof typeof errorStatuses): { [status: string]: { $ref: string } } {
  return Object.fromEntries(errorStatuses[kind].map((status) => [status, { $ref: `#/components/responses/${errorResponses[status].name}` }]));
}

/**
 * The fixed components: the error schemas, responses and headers, and the security schemes (the
 * session cookie by the name it has on this deployment).
 */
export function fixedComponents(sessionCookieName: string): OpenApiDocument["components"] {
  const schemas: { [name: string]: JsonSchema } = {
    Error: {
      type: "object",
      description: "Every error of the HTTP API.",
      properties: {
        code: {
          type: "string",
          description:
            "The error's code: a Connect code in snake_case (`invalid_argument`, `unauthenticated`, `permission_denied`, `not_found`, `already_exists`, `failed_precondition`, `resource_exhausted`, `internal`, …) or, for what the edge decides itself, `method_not_allowed`, `payload_too_large` or `unsupported_media_type`.",
        },
        status: { type: "integer", description: "The HTTP status, repeated." },
        message: { type: "string", description: "What went wrong, for people; do not parse it." },
        reason: { type: "string", description: 'A stable snake_case reason to branch on, e.g. "plan_limit_reached".' },
        requestId: { type: "string", description: "The request's id (also the `x-request-id` header), on a 5xx." },
        details: { type: "array", description: "The fields that failed validation.", items: { $ref: "#/components/schemas/FieldViolation" } },
      },
      required: ["code", "status", "message"],
    },
    FieldViolation: {
      type: "object",
      properties: {
        field: { type: "string", description: "The field's path by JSON names, e.g. `slug`." },
        message: { type: "string" },
        rule: { type: "string", description: "The id of the rule it broke, e.g. `string.max_len`." },
      },
      required: ["field", "message"],
    },
  };
  const headers = {
    "Retry-After": { description: "Seconds to wait before trying again.", required: true, schema: { type: "integer", minimum: 1 } },
    "RateLimit-Policy": { description: 'The limit that applies, e.g. `"default";q=600;w=60` (draft-ietf-httpapi-ratelimit-headers).', schema: { type: "string" } },
    RateLimit: { description: 'What is left of it, e.g. `"default";r=0;t=42`.', schema: { type: "string" } },
  };
  const responses = Object.fromEntries(
    Object.entries(errorResponses).map(([status, { name, text, example }]) => [
      name,
      {
        description: text,
        // A 429 carries every rate-limit header.
        ...(status === "429" && { headers: Object.fromEntries(Object.keys(headers).map((header) => [header, { $ref: `#/components/headers/${header}` }])) }),
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" }, example } },
      },
    ]),
  );
  const parameters = {
    IdempotencyKey: {
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description:
        "1 to 255 printable ASCII characters, chosen by the caller (a UUID, or an id of its own such as a purchase id). A retry within 24 hours with the same key and the same credential (API key or session) gets the first request's answer (status and body, with `Idempotent-Replayed: true`) without running it again; the same key with a different procedure or body is 422 `idempotency_key_reused`; while the first is still running, a retry waits for it, up to 10 s, then gets 409 `idempotency_key_in_flight`. A request refused before it acted (invalid input, no access, the agent offline) does not keep its key.",
      schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" },
    },
  };
  return {
    schemas,
    responses,
    headers,
    parameters,
    securitySchemes: {
      apiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: `A user API key (\`${secretPrefixes.apiKey}…\`), acting with its user's access.` },
      session: {
        type: "apiKey",
        in: "cookie",
        name: sessionCookieName,
        description: "The dashboard session cookie, set by `POST /sign-in`. Cross-site requests made with it are refused.",
      },
    },
  };
}
