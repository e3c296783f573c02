/**
 * @outpost/client: a typed client for Outpost's API, for scripts. `createOutpostClient` gives one
 * client per public service under its router name (`client.servers.executeConsoleCommand(…)`);
 * the request and response types are the generated protobuf-es messages of proto/outpost.
 */
export { createOutpostClient, type OutpostClientOptions } from "./client.ts";
export { OutpostError, type FieldViolation } from "./errors.ts";
export type { CallOptions, StreamOptions } from "./call.ts";
export type { RetryOptions } from "./retry.ts";
export type { Paged } from "./paging.ts";
export type { OutpostClient, ServiceClient, UnaryMethod, StreamMethod, PageItem } from "./types.ts";
export { publicServices } from "./services.ts";
