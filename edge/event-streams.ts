/**
 * Server-sent event streams relayed from core's streams (the hosted sign-in page's live status,
 * the dashboard's live console and its notification bell): {@link relayStream} is the one relay.
 *
 * The instance shutting down ends each stream with an event that tells the browser to reconnect
 * soon, which reaches another instance behind the proxy (or this one once restarted). An
 * EventSource reconnects by itself after a stream ends normally, waiting the `retry` it was last
 * given; the pages show "reconnecting" on `unavailable`.
 */
import type { ServerResponse } from "node:http";
import type { Context } from "koa";
import { errorBody, isUnexplainedFailure, retryHeaders } from "./errors.ts";

/** How long the browser waits before reconnecting to a stream that ended for a shutdown. */
export const shutdownRetryMs = 1_000;

/** A comment this often keeps proxies from closing a quiet stream. */
const heartbeatMs = 15_000;

/** The last words of a stream ended by a shutdown: reconnect after {@link shutdownRetryMs}. */
export const shutdownEvent = `retry: ${shutdownRetryMs}\nevent: unavailable\ndata: {"reason":"shutting_down"}\n\n`;

/**
 * Aborts `abort` when `shutdown` is aborted (at once if it already is), which ends the stream's
 * core call; returns the unhook, for when the stream ends first.
 */
function endOnShutdown(shutdown: AbortSignal | undefined, abort: AbortController): () => void {
  if (!shutdown) return () => {};
  const end = () => abort.abort();
  if (shutdown.aborted) end();
  else shutdown.addEventListener("abort", end, { once: true });
  return () => shutdown.removeEventListener("abort", end);
}

/**
 * Answers a stream that the shutdown ended before its first event: one event saying to reconnect,
 * as a whole 200 response (an error status would make the EventSource give up). False when the
 * instance is not shutting down, so the caller handles the failure as it would otherwise.
 */
function answeredShutdown(ctx: Context, shutdown: AbortSignal | undefined): boolean {
  if (!shutdown?.aborted) return false;
  answerReconnect(ctx, shutdownEvent);
  return true;
}

/**
 * Answers a stream whose first event core could not give because its database is out of reach:
 * one event saying to reconnect after `retryAfterSeconds`, as a whole 200 response (an error
 * status would make the EventSource give up for good).
 */
export function answerDatabaseUnavailable(ctx: Context, retryAfterSeconds: number): void {
  answerReconnect(ctx, `retry: ${retryAfterSeconds * 1000}\nevent: unavailable\ndata: {"reason":"database_unavailable"}\n\n`);
}

/** A JSON error with its status (and Retry-After when it has one), for a stream refused before it began. */
export function answerError(ctx: Context, error: unknown, what: string): void {
  const body = errorBody(error, ctx.state.requestId);
  if (isUnexplainedFailure(error)) ctx.state.log?.error({ err: error }, `${what} failed`);
  for (const [name, value] of Object.entries(retryHeaders(error) ?? {})) ctx.set(name, value);
  ctx.status = body.status;
  ctx.body = body;
}

function answerReconnect(ctx: Context, event: string): void {
  ctx.set("Cache-Control", "no-store");
  ctx.type = "text/event-stream; charset=utf-8";
  ctx.body = event;
}

/** What one stream relays, and how it answers when core refuses or ends it. */
export interface StreamRelay<T> {
  /** Names the stream in the log when it ends with an error. */
  what: string;
  /** Core's stream, opened with the relay's signal (ended when the page goes or the instance stops). */
  open: (signal: AbortSignal) => AsyncIterable<T>;
  /** Answers a stream core refused before its first message (a shutdown is answered already). */
  refused: (ctx: Context, error: unknown) => void;
  /** Writes one message as events; `false` ends the stream after it. */
  write: (res: ServerResponse, item: T) => boolean | void;
  /** The `retry` the browser is given up front, in ms (else its own default). */
  retryMs?: number;
  /** The stream ends after this long in any case, so the browser reconnects and core checks again. */
  lifetimeMs?: number;
  /** The event that says why core ended the stream with an error; undefined: `unavailable`, logged. */
  endedBy?: (error: unknown) => string | undefined;
}

/**
 * Relays core's stream to the browser as server-sent events: the first message decides between a
 * 200 event stream and the relay's refusal; then every message, a keep-alive comment every 15 s,
 * and at the end the reason (an error), or the reconnect hint of a shutdown. The page going away,
 * the lifetime and the shutdown each end core's stream at once.
 */
export async function relayStream<T>(ctx: Context, shutdown: AbortSignal | undefined, relay: StreamRelay<T>): Promise<void> {
  ctx.set("Cache-Control", "no-store");
  const abort = new AbortController();
  // Listening before the first await: a page that leaves while core answers ends the watch at once.
  const gone = () => abort.abort();
  ctx.res.once("close", gone);
  const unhook = endOnShutdown(shutdown, abort);
  try {
    let stream: AsyncIterator<T>;
    let first: IteratorResult<T>;
    try {
      stream = relay.open(abort.signal)[Symbol.asyncIterator]();
      first = await stream.next();
    } catch (error) {
      if (!answeredShutdown(ctx, shutdown)) relay.refused(ctx, error);
      return;
    }
    await relayFrom(ctx, first, stream, abort, shutdown, relay);
  } finally {
    unhook();
    ctx.res.off("close", gone);
    abort.abort();
  }
}

async function relayFrom<T>(
  ctx: Context,
  first: IteratorResult<T>,
  stream: AsyncIterator<T>,
  abort: AbortController,
  shutdown: AbortSignal | undefined,
  relay: StreamRelay<T>,
): Promise<void> {
  const res = ctx.res;
  ctx.respond = false;
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" });
  if (relay.retryMs !== undefined) res.write(`retry: ${relay.retryMs}\n\n`);
  const heartbeat = setInterval(() => res.write(": keep-alive\n\n"), heartbeatMs);
  const lifetime = relay.lifetimeMs === undefined ? undefined : setTimeout(() => abort.abort(), relay.lifetimeMs);
  try {
    for (let item = first; !item.done; item = await stream.next()) {
      if (relay.write(res, item.value) === false) break;
    }
  } catch (error) {
    // Unless the page left, the lifetime is over or the instance stops: then no one is told why.
    if (!abort.signal.aborted) {
      const reason = relay.endedBy?.(error);
      if (reason === undefined) ctx.state.log?.warn({ err: error }, `${relay.what} ended with an error`);
      res.write(reason ?? "event: unavailable\ndata: {}\n\n");
    }
  } finally {
    clearInterval(heartbeat);
    clearTimeout(lifetime);
    // Ended by the shutdown: the page reconnects (to another instance) sooner than it would.
    if (shutdown?.aborted && !res.writableEnded) res.write(shutdownEvent);
    res.end();
  }
}
