/**
 * One call of a unary method: the credential and idempotency key as headers, the caller's
 * deadline over every attempt, and retries of the failures that say "not now" (retry.ts).
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { CallOptions as ConnectCallOptions } from "@connectrpc/connect";
import { apiKeyHeader, idempotencyKeyHeader } from "../../../contract/credentials.ts";
import { OutpostError } from "./errors.ts";
import { isRetryable, retryDelayMs, type RetryPolicy } from "./retry.ts";

/** What every method takes besides its request. */
export interface CallOptions {
  /**
   * Sent as the `Idempotency-Key` header (1–255 printable ASCII characters): Outpost runs a
   * mutation with a given key at most once per caller, and answers a repeat within 24 hours with
   * the first call's result. It also lets the client retry the mutation by itself.
   */
  idempotencyKey?: string;
  /** Aborts the call, and any wait before a retry (the call then fails with code "canceled"). */
  signal?: AbortSignal;
  /** The longest the whole call may take, retries and the waits between them included. */
  timeoutMs?: number;
  /** More request headers (anything `new Headers()` takes: HeadersInit). */
  headers?: ConstructorParameters<typeof Headers>[0];
}

/** What a server-streaming method takes besides its request: a stream is never retried, so no key. */
export type StreamOptions = Omit<CallOptions, "idempotencyKey">;

/** What every call of one client shares. */
export interface CallContext {
  apiKey: string | undefined;
  policy: RetryPolicy;
  /** Give a mutation called without a key one of its own (crypto.randomUUID()) when retries are on. */
  autoIdempotencyKey: boolean;
}

/**
 * Runs `build` on request headers, a value fetch cannot send (a line break, a character past
 * U+00FF) being the caller's invalid_argument rather than a TypeError from inside fetch.
 */
function sendable<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    throw new OutpostError(`a request header cannot be sent (${(error as Error).message}); an idempotency key is 1 to 255 printable ASCII characters`, {
      code: "invalid_argument",
      cause: error,
    });
  }
}

/** The request headers of a call: the caller's, the API key (unless the caller set its own) and the idempotency key. */
export function callHeaders(options: StreamOptions, context: CallContext, idempotencyKey?: string): Headers {
  return sendable(() => {
    const headers = new Headers(options.headers);
    if (context.apiKey !== undefined && !headers.has(apiKeyHeader)) headers.set(apiKeyHeader, context.apiKey);
    if (idempotencyKey !== undefined) headers.set(idempotencyKeyHeader, idempotencyKey);
    return headers;
  });
}

/**
 * The key a call goes with: the caller's (option or header); for a mutation without one, a fresh
 * UUID when the client may retry, so that its own retries cannot run the mutation twice. Without
 * retries a key nobody knows would protect nothing, and Outpost would keep it for a day.
 */
function idempotencyKeyFor(query: boolean, options: CallOptions, context: CallContext): string | undefined {
  const given = options.idempotencyKey ?? sendable(() => new Headers(options.headers).get(idempotencyKeyHeader)) ?? undefined;
  if (given !== undefined || query) return given;
  return context.autoIdempotencyKey && context.policy.maxAttempts > 1 ? crypto.randomUUID() : undefined;
}

/** Calls `attempt` until it succeeds, fails for good, runs out of attempts or reaches the caller's deadline. */
export async function callUnary<Res>(
  method: DescMethod,
  attempt: (options: ConnectCallOptions) => Promise<Res>,
  options: CallOptions,
  context: CallContext,
): Promise<Res> {
  const query = method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
  const key = idempotencyKeyFor(query, options, context);
  const headers = callHeaders(options, context, key);
  const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
  for (let n = 1; ; n++) {
    const timeoutMs = deadline === undefined ? undefined : deadline - Date.now();
    // Connect reads a timeout of 0 or less as none at all.
    if (timeoutMs !== undefined && timeoutMs <= 0) throw new OutpostError(`the call took longer than ${options.timeoutMs} ms`, { code: "deadline_exceeded" });
    try {
      return await attempt({ headers, signal: options.signal, timeoutMs });
    } catch (thrown) {
      const error = OutpostError.from(thrown);
      if (n >= context.policy.maxAttempts || !isRetryable(error, { query, keyed: key !== undefined })) throw error;
      const delay = retryDelayMs(error, n, context.policy);
      // A retry that could only start after the caller's deadline would be cut short: fail now, with the reason.
      if (deadline !== undefined && Date.now() + delay >= deadline) throw error;
      await sleep(delay, options.signal);
    }
  }
}

/** Waits `ms`, or fails with "canceled" as soon as the signal aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const canceled = () => new OutpostError("the call was canceled", { code: "canceled", cause: signal?.reason });
    if (signal?.aborted) return reject(canceled());
    const onAbort = () => {
      clearTimeout(timer);
      reject(canceled());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
