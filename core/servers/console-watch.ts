/**
 * servers/watchConsole: the dashboard's live console. It starts with whether the agent is
 * connected and, when its stream is on this instance, the recent lines; then the lines as they
 * come and each change of presence, from whichever instance holds the stream (core/agents/
 * console-feed.ts). A member needs a grant with console_read; opening a watch spends one of its
 * uses, and the access is checked again (spending none) every
 * {@link recheckMs} with the credential the call was opened with: a sign-out, an ended or revoked
 * session, a revoked API key (unauthenticated), a revoked or expired grant, a deleted or a frozen
 * server (core/servers/frozen.ts) ends it within seconds. The same check catches an agent whose
 * instance died without saying so. A caller that reads slowly loses the oldest lines past
 * {@link maxPendingLines}, counted in `dropped`.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { WatchConsoleResponseSchema, type WatchConsoleRequest, type WatchConsoleResponse } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { requireServer, type ServerAddress } from "../access.ts";
import { isOnline } from "../agents/presence.ts";
import type { ConsoleEvent } from "../agents/console-feed.ts";
import { createWaker, releaseWhenCallEnds } from "../stream-wait.ts";

/**
 * How often an open console checks the caller's credential, their access and the server's presence
 * again: three or four indexed lookups per watch (the dashboard's status poll, every 2 s per visible
 * tab, costs more), so at most some 400 a second at the instance's 500 watches.
 */
export const recheckMs = 5_000;
/** Lines held for a caller that has not read them yet. */
export const maxPendingLines = 1_000;

type WatchDeps = Pick<CoreDeps, "clock" | "config" | "consoles" | "agents" | "statements" | "credentials">;

/**
 * The check a watch repeats: the call's credential still works (as the auth interceptor decides),
 * its holder still sees the server, and the server is not frozen. Returns whether the server's
 * agent is connected.
 */
async function recheck(deps: WatchDeps, ctx: HandlerContext, address: ServerAddress): Promise<boolean> {
  const db = deps.statements.db(entityManager(ctx).fork());
  const caller = await deps.credentials.recheck(ctx.requestHeader);
  const access = await requireServer(db, caller, address, { action: "console_read", now: deps.clock.now(), spend: false, plans: deps.config.plans });
  return isOnline(access.server, deps.clock.now());
}

export async function* watchConsole(deps: WatchDeps, req: WatchConsoleRequest, ctx: HandlerContext): AsyncGenerator<WatchConsoleResponse> {
  const caller = requireUser(ctx);
  const { server } = await requireServer(deps.statements.db(entityManager(ctx)), caller, req, {
    action: "console_read",
    now: deps.clock.now(),
    plans: deps.config.plans,
  });
  if (ctx.signal.aborted) return;
  const releaseSlot = deps.consoles.watches.open(caller.user.id);

  let online = isOnline(server, deps.clock.now());
  let lines: string[] = [];
  let dropped = 0;
  let changed = false;
  const waker = createWaker();
  const hear = (event: ConsoleEvent) => {
    if (event.kind === "online") {
      changed ||= event.online !== online;
      online = event.online;
    } else {
      lines.push(...event.lines);
      dropped += event.dropped;
      if (lines.length > maxPendingLines) {
        dropped += lines.length - maxPendingLines;
        lines = lines.slice(-maxPendingLines);
      }
    }
    waker.wake();
  };
  // Subscribed and the recent lines read in one go: no line printed meanwhile is lost or doubled.
  const watch = deps.consoles.watch(server.id, hear);
  const holder = server.agentConnectionId ? deps.agents.holding(server.agentConnectionId) : undefined;
  const recent = holder?.console.recent() ?? [];
  if (holder) online = true;

  const release = releaseWhenCallEnds(ctx.signal, waker, () => {
    watch.close();
    releaseSlot();
  });
  try {
    yield create(WatchConsoleResponseSchema, { online, lines: recent, dropped: 0 });
    let recheckAt = Date.now() + recheckMs;
    while (!ctx.signal.aborted) {
      if (!lines.length && !changed) await waker.sleep(Math.max(0, recheckAt - Date.now()));
      if (ctx.signal.aborted) break;
      if (Date.now() >= recheckAt) {
        recheckAt = Date.now() + recheckMs;
        const now = await recheck(deps, ctx, req);
        changed ||= now !== online;
        online = now;
      }
      if (!lines.length && !changed) continue;
      const message = create(WatchConsoleResponseSchema, { online, lines, dropped });
      lines = [];
      dropped = 0;
      changed = false;
      yield message;
    }
  } finally {
    release();
  }
}
