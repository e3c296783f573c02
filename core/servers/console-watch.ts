/**
 * servers/watchConsole: the dashboard's live console. It starts with whether the agent is
 * connected and, when its stream is on this instance, the recent lines; then the lines as they
 * come and each change of presence, from whichever instance holds the stream (core/agents/
 * console-feed.ts). Same access as the console's commands, checked again every
 * {@link recheckMs} (a revoked grant or a deleted server ends it), which also catches an agent
 * whose instance died without saying so. A caller that reads slowly loses the oldest lines past
 * {@link maxPendingLines}, counted in `dropped`.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { WatchConsoleResponseSchema, type WatchConsoleRequest, type WatchConsoleResponse } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { requireServer } from "../access.ts";
import { isOnline } from "../agents/presence.ts";
import type { ConsoleEvent } from "../agents/console-feed.ts";

/** How often an open console checks the caller's access and the server's presence again. */
export const recheckMs = 30_000;
/** Lines held for a caller that has not read them yet. */
export const maxPendingLines = 1_000;

type WatchDeps = Pick<CoreDeps, "clock" | "consoles" | "agents">;

export async function* watchConsole(deps: WatchDeps, req: WatchConsoleRequest, ctx: HandlerContext): AsyncGenerator<WatchConsoleResponse> {
  const caller = requireUser(ctx);
  const em = entityManager(ctx);
  const { server } = await requireServer(em, caller, req.serverId);
  if (ctx.signal.aborted) return;
  const releaseSlot = deps.consoles.watches.open(caller.user.id);

  let online = isOnline(server, deps.clock.now());
  let lines: string[] = [];
  let dropped = 0;
  let changed = false;
  let wake: (() => void) | undefined;
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
    wake?.();
  };
  // Subscribed and the recent lines read in one go: no line printed meanwhile is lost or doubled.
  const watch = deps.consoles.watch(server.id, hear);
  const holder = server.agentConnectionId ? deps.agents.holding(server.agentConnectionId) : undefined;
  const recent = holder?.console.recent() ?? [];
  if (holder) online = true;

  // Given back when the call ends, not only when this generator resumes (it may wait at a yield).
  const release = () => {
    watch.close();
    releaseSlot();
    ctx.signal.removeEventListener("abort", onAbort);
  };
  const onAbort = () => {
    release();
    wake?.();
  };
  ctx.signal.addEventListener("abort", onAbort);
  try {
    yield create(WatchConsoleResponseSchema, { online, lines: recent, dropped: 0 });
    let recheckAt = Date.now() + recheckMs;
    while (!ctx.signal.aborted) {
      if (!lines.length && !changed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(0, recheckAt - Date.now()));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      if (ctx.signal.aborted) break;
      if (Date.now() >= recheckAt) {
        recheckAt = Date.now() + recheckMs;
        const fresh = await requireServer(em.fork(), caller, req.serverId);
        const now = isOnline(fresh.server, deps.clock.now());
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
