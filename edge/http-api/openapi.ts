/**
 * The HTTP API's OpenAPI 3.1 document; the generator lives in openapi/ (the entry is
 * openapi/document.ts). This module is the import path that the app, the docs page and the tests use.
 */
export {
  createOpenApiDocument,
  httpApiBasePath,
  type JsonSchema,
  type OpenApiDocument,
  type OpenApiOperation,
  type OpenApiOptions,
  type OpenApiParameter,
} from "./openapi/document.ts";
