/**
 * The HTTP API's OpenAPI 3.1 document, generated from the same proto descriptors the router walks:
 * a new RPC method appears here with no code. Nothing in it is written per procedure.
 *
 * - every service with an `http_router` option is a tag, every unary method an operation
 *   (operations.ts);
 * - schemas are protobuf JSON as the API speaks it (message-schemas.ts): request schemas refuse
 *   unknown fields and carry the buf.validate rules that JSON Schema can express (rule-keywords.ts),
 *   response schemas mark every field that is always present as required;
 * - an operation's summary is the method's name in words; comments in the proto become
 *   descriptions (of tags, operations, schemas and fields) when a descriptor set with source info is
 *   given (source-comments.ts), because the runtime descriptors in gen/ carry none.
 *
 * The document's shapes are openapi-types.ts, which every part imports.
 */
import type { DescService } from "@bufbuild/protobuf";
import type { FileDescriptorSet } from "@bufbuild/protobuf/wkt";
import { services as contractServices } from "../../../contract/services.ts";
import { fixedComponents } from "./error-responses.ts";
import { sessionCookie } from "../../../contract/credentials.ts";
import { cookieName } from "../../cookies.ts";
import { MessageSchemas } from "./message-schemas.ts";
import { describeServices } from "./operations.ts";
import { readComments } from "./source-comments.ts";
import type { JsonSchema, OpenApiDocument } from "./openapi-types.ts";

export { httpApiBasePath } from "./operations.ts";
export type { JsonSchema, OpenApiDocument, OpenApiOperation, OpenApiParameter } from "./openapi-types.ts";

/** What {@link createOpenApiDocument} needs besides the descriptors. */
export interface OpenApiOptions {
  /** The public origin the API is served on (ACCOUNT_BASE_URL). */
  serverUrl: string;
  /** The API's version (package.json's). */
  version: string;
  /** The services to describe; those without http_router are left out. Default: the contract's. */
  services?: readonly DescService[];
  /**
   * A FileDescriptorSet (or a buf image, e.g. `buf build -o outpost.binpb`) that keeps source info:
   * its comments become summaries and descriptions. Without it the summaries come from names.
   */
  sourceInfo?: Uint8Array | FileDescriptorSet;
}

const infoDescription = [
  "Outpost's HTTP API, generated from its RPC services.",
  "",
  "- Procedures that only read are `GET /api/http/<router>/<procedure>` with query parameters (a repeated field repeats its key); every other procedure is a `POST` with a JSON object as its body. The answer is the JSON result itself, with no envelope.",
  "- Field names are lowerCamelCase; enums are short lower-case names (`minecraft`); timestamps are RFC 3339 strings; ids are strings. Unknown fields are refused.",
  "- Authenticate with exactly one credential: a user API key in `X-API-Key`, or the dashboard session cookie. Both at once is a 400; keys in the URL are refused.",
  "- Errors are `{code, status, message}` (plus `reason`, and `details` for validation). Limits are per credential; a 429 says when to try again.",
].join("\n");

/**
 * The OpenAPI 3.1 document of the HTTP API. Pure: the same descriptors and options give the same
 * document. Throws if a method's `http_response_field` names no field of its output.
 */
export function createOpenApiDocument(options: OpenApiOptions): OpenApiDocument {
  const messageSchemas = new MessageSchemas(readComments(options.sourceInfo));
  const { tags, paths } = describeServices(messageSchemas, options.services ?? contractServices);
  const fixed = fixedComponents(cookieName(sessionCookie, new URL(options.serverUrl).protocol === "https:"));
  const schemas: { [name: string]: JsonSchema } = { ...fixed.schemas };
  for (const name of [...messageSchemas.schemas.keys()].sort()) schemas[name] = messageSchemas.schemas.get(name)!;

  return {
    openapi: "3.1.0",
    info: { title: "Outpost HTTP API", version: options.version, description: infoDescription },
    servers: [{ url: options.serverUrl.replace(/\/+$/, "") }],
    security: [{ apiKey: [] }, { session: [] }],
    tags,
    paths,
    components: { ...fixed, schemas },
  };
}
