/**
 * What console.js reads on a server's page: the live console as server-sent events, relayed from
 * core's `servers/watchConsole` stream, and the players online as JSON. Like the status poll, these
 * answer the session cookie's holder with one core call (no viewer) and a JSON error otherwise.
 *
 * The stream's limits: a comment every 15 s keeps proxies from closing it; it ends when the page
 * goes away, and after {@link streamLifetimeMs} in any case, so the browser reconnects and core
 * checks the session and the access again; a reader too slow to take the output loses lines
 * (counted) rather than making this process hold them.
 *
 * A refusal (signed out, no access, too many consoles), whether before the first event or when
 * core's re-check ends the watch, reaches an EventSource as a 200 with one `refused` event holding
 * the status and why in words: an EventSource cannot read an error's body, and would otherwise
 * reconnect or fail without a reason. Other callers get the usual JSON error with its status.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { WatchConsoleResponse } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { readSessionCookie } from "../cookies.ts";
import { codeName, httpStatus } from "../errors.ts";
import type { DashboardDeps } from "./context.ts";
import { coreFor, type Core } from "./core.ts";
import { answerError, relayStream } from "../event-streams.ts";

const streamLifetimeMs = 10 * 60_000;
/** How long the browser waits before reconnecting after the stream ends. */
const retryMs = 2_000;
/** Output queued for a reader beyond this is dropped (and counted) instead of buffered. */
const maxQueuedBytes = 1 << 20;

/** Core as the session cookie's holder, or a 401 error when there is no cookie. */
function sessionCore(ctx: Context, deps: DashboardDeps): Core {
  if (!readSessionCookie(ctx.req.headers, deps.secureCookies)) throw new ConnectError("sign in again", Code.Unauthenticated);
  return coreFor(deps.calls, ctx);
}

/** A refusal the page explains and does not retry: its status and code, and why in words. */
interface Refusal {
  status: number;
  code: string;
  message: string;
}

/** Why core refused (or ended) the watch, for the page; undefined for failures that are not refusals. */
function refusalOf(error: unknown): Refusal | undefined {
  if (!(error instanceof ConnectError)) return undefined;
  const refusal = (message: string) => ({ status: httpStatus(error.code), code: codeName(error.code), message });
  switch (error.code) {
    case Code.Unauthenticated:
      return refusal("You are signed out, so the live output stopped. Reload the page to sign in again.");
    case Code.PermissionDenied:
      return refusal("You no longer have access to this server's console, so the live output stopped. Ask an owner or admin of the organization for access.");
    case Code.NotFound:
      return refusal("This server does not exist any more, or you no longer have access to it, so the live output stopped.");
    case Code.ResourceExhausted:
      return refusal(`The live output is off: ${error.rawMessage} (by reloading this page).`);
    default:
      return undefined;
  }
}

function refusedEvent(refusal: Refusal): string {
  return `event: refused\ndata: ${JSON.stringify(refusal)}\n\n`;
}

/** An EventSource asked (the script's stream), rather than a script or a person reading JSON. */
function wantsEvents(ctx: Context): boolean {
  return ctx.accepts("json", "text/event-stream") === "text/event-stream";
}

/**
 * The watch as events: `recent` first (the lines core still holds, which replace what the page
 * shows, so a reconnect does not repeat them), then `lines`; each with the lines, how many were
 * lost before them, and whether the agent is connected.
 */
function consoleEvents(ctx: Context, deps: DashboardDeps): Promise<void> {
  let event = "recent";
  let lost = 0;
  return relayStream<WatchConsoleResponse>(ctx, deps.shutdown, {
    what: "console watch",
    retryMs,
    lifetimeMs: streamLifetimeMs,
    open: (signal) => sessionCore(ctx, deps).servers.watchConsole({ serverId: ctx.params.id }, { signal }),
    refused: (ctx, error) => {
      // Before the first event. To an EventSource, a refusal is an event (a status it would not
      // retry, but whose reason it could not read); anything else a status it does not retry.
      const refusal = refusalOf(error);
      if (!refusal || !wantsEvents(ctx)) return answerError(ctx, error, "console watch");
      ctx.type = "text/event-stream; charset=utf-8";
      ctx.body = refusedEvent(refusal);
    },
    write: (res, { lines, dropped, online }) => {
      if (event !== "recent" && res.writableLength > maxQueuedBytes) {
        lost += dropped + lines.length;
        return;
      }
      res.write(`event: ${event}\ndata: ${JSON.stringify({ lines, dropped: dropped + lost, online })}\n\n`);
      event = "lines";
      lost = 0;
    },
    endedBy: (error) => {
      const refusal = refusalOf(error);
      return refusal && refusedEvent(refusal);
    },
  });
}

export function consoleEventRoutes(router: Router, deps: DashboardDeps): void {
  router.get("/app/o/:slug/servers/:id/console/events", (ctx) => consoleEvents(ctx, deps));

  router.get("/app/o/:slug/servers/:id/players", async (ctx) => {
    ctx.set("Cache-Control", "no-store");
    try {
      const { players } = await sessionCore(ctx, deps).servers.listPlayers({ serverId: ctx.params.id });
      ctx.body = { players: players.map((p) => ({ name: p.name, uuid: p.uuid, since: p.since ? timestampDate(p.since).toISOString() : null })) };
    } catch (error) {
      answerError(ctx, error, "players");
    }
  });
}
