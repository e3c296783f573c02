/**
 * Server-sent event streams (the hosted sign-in page's live status, the dashboard's live console)
 * and the instance shutting down: each stream ends with an event that tells the browser to
 * reconnect soon, which reaches another instance behind the proxy (or this one once restarted).
 * An EventSource reconnects by itself after a stream ends normally, waiting the `retry` it was
 * last given; both pages already show "reconnecting" on `unavailable`.
 */
import type { Context } from "koa";

/** How long the browser waits before reconnecting to a stream that ended for a shutdown. */
export const shutdownRetryMs = 1_000;

/** The last words of a stream ended by a shutdown: reconnect after {@link shutdownRetryMs}. */
export const shutdownEvent = `retry: ${shutdownRetryMs}\nevent: unavailable\ndata: {"reason":"shutting_down"}\n\n`;

/**
 * Aborts `abort` when `shutdown` is aborted (at once if it already is), which ends the stream's
 * core call; returns the unhook, for when the stream ends first.
 */
export function endOnShutdown(shutdown: AbortSignal | undefined, abort: AbortController): () => void {
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
export function answeredShutdown(ctx: Context, shutdown: AbortSignal | undefined): boolean {
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

function answerReconnect(ctx: Context, event: string): void {
  ctx.set("Cache-Control", "no-store");
  ctx.type = "text/event-stream; charset=utf-8";
  ctx.body = event;
}
