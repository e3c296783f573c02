/**
 * notifications/watchUnreadCount: the dashboard bell's live count. It sends the count at once,
 * then again whenever the user's notifications change on any instance (the bus), and at most
 * every {@link recheckMs} it checks the credential again (a sign-out ends it) and recounts,
 * because the bus delivers at most once. Bells are bounded per user and per instance
 * (core/notifications/notify.ts).
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { WatchUnreadCountResponseSchema, type WatchUnreadCountResponse } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import type { CoreDeps } from "../deps.ts";
import { entityManager, requireUser } from "../context.ts";
import { createWaker, releaseWhenCallEnds } from "../stream-wait.ts";
import { countUnread } from "./notification-queries.ts";

export const recheckMs = 30_000;

type BellDeps = Pick<CoreDeps, "clock" | "config" | "notifier" | "statements" | "credentials">;

export async function* watchUnreadCount(deps: BellDeps, ctx: HandlerContext): AsyncGenerator<WatchUnreadCountResponse> {
  const caller = requireUser(ctx);
  const releaseSlot = deps.notifier.bells.open(caller.user.id);
  const waker = createWaker();
  let changed = true;
  const unsubscribe = deps.notifier.subscribe(caller.user.id, () => {
    changed = true;
    waker.wake();
  });
  const release = releaseWhenCallEnds(ctx.signal, waker, () => {
    unsubscribe();
    releaseSlot();
  });
  try {
    let last = -1;
    let recheckAt = Date.now() + recheckMs;
    while (!ctx.signal.aborted) {
      if (!changed) await waker.sleep(Math.max(0, recheckAt - Date.now()));
      if (ctx.signal.aborted) break;
      const query = deps.statements.on(entityManager(ctx).fork());
      if (Date.now() >= recheckAt) {
        recheckAt = Date.now() + recheckMs;
        await deps.credentials.recheck(ctx.requestHeader);
        changed = true;
      }
      if (!changed) continue;
      changed = false;
      const unread = await countUnread(query, caller.user.id);
      if (unread === last) continue;
      last = unread;
      yield create(WatchUnreadCountResponseSchema, { unread });
    }
  } finally {
    release();
  }
}
