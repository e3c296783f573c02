/**
 * Notifications addressed to one user, as every producer makes them: kept in the producer's
 * transaction (so a membership change and its notification commit together), then announced once
 * it committed: the user's bells on every instance recount, and the kinds the user chose are
 * pushed to their browsers.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Bus } from "../bus.ts";
import type { SqlRunner } from "../db/sql.ts";
import { createWatchSlots, type WatchSlots } from "../watch-slots.ts";
import { sendPushToUser, type SendPushDeps } from "../pwa/push.ts";
import { insertNotification } from "./notification-queries.ts";
import { managerIds } from "../access-queries.ts";

/** Every kind, as stored; the proto's NotificationKind names the same ones. */
export const notificationKinds = ["membership", "api_key", "alert", "access_request"] as const;
export type NotificationKindName = (typeof notificationKinds)[number];

export interface NotificationDraft {
  userId: string;
  kind: NotificationKindName;
  title: string;
  body?: string;
  /** A dashboard path, e.g. "/app/o/acme". */
  link?: string;
  organizationId?: string;
  /** Keeps a notification a periodic job may find again to one per user. */
  dedupeKey?: string;
}

/** A notification that was kept, for {@link Notifier.announce}. */
export interface Kept {
  userId: string;
  push: boolean;
  title: string;
  body: string;
  link: string;
}

/** Keeps the notification unless its user turned the kind off (or has it already, by dedupe key). */
export async function keepNotification(query: SqlRunner, draft: NotificationDraft, now: Date): Promise<Kept | undefined> {
  const kept = await insertNotification(query, {
    id: randomUUID(),
    userId: draft.userId,
    kind: draft.kind,
    title: draft.title.slice(0, 200),
    body: (draft.body ?? "").slice(0, 1000),
    link: draft.link ?? null,
    organizationId: draft.organizationId ?? null,
    dedupeKey: draft.dedupeKey ?? null,
    createdAt: now,
  });
  if (!kept) return undefined;
  return { userId: draft.userId, push: kept.push, title: draft.title, body: draft.body ?? "", link: draft.link ?? "" };
}

/** The notification kept for each owner and admin of its organization, one at a time (each keeps to their own preferences). */
export async function notifyManagers(
  query: SqlRunner,
  draft: Omit<NotificationDraft, "userId"> & { organizationId: string },
  now: Date,
): Promise<Array<Kept | undefined>> {
  const kept: Array<Kept | undefined> = [];
  for (const userId of await managerIds(query, draft.organizationId)) kept.push(await keepNotification(query, { ...draft, userId }, now));
  return kept;
}

/** Sends a notification to the user's subscribed browsers (web push); failures are its own to log. */
export type PushToUser = (userId: string, message: { title: string; body: string; link: string }) => Promise<unknown>;

/**
 * Web push through core/pwa, as the service worker shows it (a click opens the link). Its deps
 * are core's, which the composition root builds after the notifier: hence a function.
 */
export function pushThroughPwa(deps: () => SendPushDeps): PushToUser {
  return (userId, message) => sendPushToUser(deps(), userId, { title: message.title, body: message.body, url: message.link || undefined });
}

export interface Notifier {
  /** After the transaction that kept them committed: wakes the users' bells, and pushes where asked. */
  announce(kept: ReadonlyArray<Kept | undefined>): void;
  /** The user's unread count changed (read, or new): their bells on every instance recount. */
  changed(userId: string): void;
  /** Calls `listener` when the user's count may have changed; returns the unsubscribe. */
  subscribe(userId: string, listener: () => void): () => void;
  /** The bells (notifications/watchUnreadCount) open on this instance: one per dashboard tab. */
  bells: WatchSlots;
}

/** The bells one user may hold open on an instance, and the instance in all. */
export const bellsPerUser = 20;
export const bellsInTotal = 5_000;

const topic = (userId: string) => `notifications/${userId}`;

export function createNotifier(deps: { bus: Bus; logger: Logger; push?: PushToUser }): Notifier {
  const notifier: Notifier = {
    announce(kept) {
      for (const k of kept) {
        if (!k) continue;
        notifier.changed(k.userId);
        if (k.push && deps.push) {
          deps.push(k.userId, { title: k.title, body: k.body, link: k.link }).catch((error) => deps.logger.warn({ err: error }, "pushing a notification failed"));
        }
      }
    },
    changed(userId) {
      void deps.bus.publish(topic(userId));
    },
    subscribe(userId, listener) {
      return deps.bus.subscribe(topic(userId), listener);
    },
    bells: createWatchSlots("notification_bell", { perUser: bellsPerUser, total: bellsInTotal }, "notification bells"),
  };
  return notifier;
}
