/**
 * createOutpostClient: one typed client per public service, over the Connect protocol at
 * `<baseUrl>/api/rpc` with fetch, so the same code runs in Node, Deno, Bun and browsers.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { createClient, type CallOptions as ConnectCallOptions, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { callHeaders, callUnary, type CallContext, type CallOptions, type StreamOptions } from "./call.ts";
import { OutpostError } from "./errors.ts";
import { paged, pageItemsField } from "./paging.ts";
import { retryPolicy, type RetryOptions } from "./retry.ts";
import { publicServices } from "./services.ts";
import type { OutpostClient } from "./types.ts";

export interface OutpostClientOptions {
  /** Where Outpost is (its ACCOUNT_BASE_URL), e.g. "https://outpost.example". */
  baseUrl: string;
  /**
   * A user or organization API key (`opk_…`), sent as X-API-Key. Leave it out only in a page on
   * Outpost's own origin, where the browser's session cookie is the credential.
   */
  apiKey?: string;
  /** Retries of rate limits and outages (default: 3 attempts in all, waits of at most 30 s). */
  retry?: RetryOptions;
  /**
   * Give a mutation called without an idempotency key a random one, so that the client's own
   * retries cannot run it twice. Only while retries are on (maxAttempts > 1). Default true.
   */
  autoIdempotencyKey?: boolean;
  /** The fetch to use (default: the global fetch at the time of each call). */
  fetch?: typeof globalThis.fetch;
}

/** The API's root as Connect addresses it: `<baseUrl>/api/rpc/<service>/<Method>`. */
function rpcBaseUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch (error) {
    throw new TypeError(`baseUrl must be an absolute URL such as "https://outpost.example" (got ${JSON.stringify(baseUrl)})`, { cause: error });
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}/api/rpc`;
}

type AnyMethod = (request: unknown, options: ConnectCallOptions) => unknown;

/**
 * A server stream's messages as they come, its failure as an OutpostError. The call starts at the
 * first iteration, so that a failure to start it (a header that cannot be sent) is one too.
 */
async function* outpostStream(connect: AnyMethod, request: object, options: StreamOptions, context: CallContext): AsyncGenerator<unknown> {
  try {
    yield* connect(request, { headers: callHeaders(options, context), signal: options.signal, timeoutMs: options.timeoutMs }) as AsyncIterable<unknown>;
  } catch (error) {
    throw OutpostError.from(error);
  }
}

function methodOf(method: DescMethod, connect: AnyMethod, context: CallContext): ((request: object, options?: CallOptions) => unknown) | undefined {
  if (method.methodKind === "server_streaming") return (request, options: StreamOptions = {}) => outpostStream(connect, request, options, context);
  if (method.methodKind !== "unary") return undefined;
  const call = (request: object, options: CallOptions = {}) => callUnary(method, (attempt) => connect(request, attempt) as Promise<unknown>, options, context);
  const items = pageItemsField(method);
  if (!items) return call;
  return (request, options) => paged((page: object) => call(page, options), request, items);
}

function serviceClient(service: DescService, transport: Transport, context: CallContext): Record<string, unknown> {
  const connect = createClient(service, transport) as unknown as Record<string, AnyMethod>;
  const methods: Record<string, unknown> = {};
  for (const method of service.methods) {
    const fn = methodOf(method, connect[method.localName], context);
    if (fn) methods[method.localName] = fn;
  }
  return Object.freeze(methods);
}

/**
 * A client for the Outpost at `baseUrl`. Every method takes its request (a plain object with
 * the request's fields) and {@link CallOptions}, and answers the response message; every failure
 * is an {@link OutpostError}.
 */
export function createOutpostClient(options: OutpostClientOptions): OutpostClient {
  const transport = createConnectTransport({ baseUrl: rpcBaseUrl(options.baseUrl), fetch: options.fetch });
  const context: CallContext = { apiKey: options.apiKey, policy: retryPolicy(options.retry), autoIdempotencyKey: options.autoIdempotencyKey ?? true };
  const client: Record<string, unknown> = {};
  for (const [router, service] of Object.entries(publicServices)) client[router] = serviceClient(service, transport, context);
  return Object.freeze(client) as OutpostClient;
}
