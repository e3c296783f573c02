/**
 * NotificationsService: the caller's own notifications. Every statement names the caller's user
 * id, so no id of someone else's can be read or marked; such ids are simply not found.
 */
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  GetNotificationPreferencesResponseSchema,
  GetUnreadCountResponseSchema,
  KindPreferenceSchema,
  ListNotificationsResponseSchema,
  MarkAllReadResponseSchema,
  MarkReadResponseSchema,
  NotificationKind,
  NotificationSchema,
  NotificationsService,
  UpdateNotificationPreferencesResponseSchema,
  type KindPreference,
} from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import type { CoreDeps } from "../deps.ts";
import { entityManager, requireUser } from "../context.ts";
import { fieldFail } from "../errors.ts";
import type { SqlRunner } from "../db/sql.ts";
import { notificationKinds, type NotificationKindName } from "./notify.ts";
import {
  findPreferences,
  listNotificationRows,
  markAllRead,
  markRead,
  mergePreferences,
  countUnread,
  type NotificationRow,
  type StoredPreferences,
} from "./notification-queries.ts";
import { watchUnreadCount } from "./unread-watch.ts";
import { decodeCursor, pageOf } from "../page-cursor.ts";

const kindToProto: Record<NotificationKindName, NotificationKind> = {
  membership: NotificationKind.MEMBERSHIP,
  api_key: NotificationKind.API_KEY,
  alert: NotificationKind.ALERT,
  access_request: NotificationKind.ACCESS_REQUEST,
};

function kindFromProto(kind: NotificationKind): NotificationKindName {
  const name = notificationKinds.find((k) => kindToProto[k] === kind);
  if (!name) throw fieldFail([{ field: "preferences", message: "an unknown notification kind" }]); // validation refuses it first
  return name;
}

const defaultPageSize = 30;

function toProto(row: NotificationRow) {
  return create(NotificationSchema, {
    id: row.id,
    kind: kindToProto[row.kind as NotificationKindName] ?? NotificationKind.UNSPECIFIED,
    title: row.title,
    body: row.body,
    link: row.link ?? "",
    organizationId: row.organization_id ?? "",
    createdAt: timestampFromDate(new Date(row.created_at)),
    readAt: row.read_at ? timestampFromDate(new Date(row.read_at)) : undefined,
  });
}

/** Every kind's preference, the defaults (shown, not pushed) where the user set none. */
function preferencesToProto(stored: StoredPreferences): KindPreference[] {
  return notificationKinds.map((kind) =>
    create(KindPreferenceSchema, { kind: kindToProto[kind], inApp: stored[kind]?.inApp ?? true, push: stored[kind]?.push ?? false }),
  );
}

export function createNotificationsService(deps: CoreDeps): ServiceImpl<typeof NotificationsService> {
  const on = (ctx: HandlerContext): SqlRunner => deps.statements.on(entityManager(ctx));
  return {
    async listNotifications(req, ctx) {
      const caller = requireUser(ctx);
      const limit = req.limit ?? defaultPageSize;
      const after = req.cursor === undefined ? undefined : decodeCursor(req.cursor);
      const rows = await listNotificationRows(on(ctx), caller.user.id, { unreadOnly: req.unreadOnly, limit: limit + 1, after });
      const { page, nextCursor } = pageOf(rows, limit);
      return create(ListNotificationsResponseSchema, {
        notifications: page.map(toProto),
        nextCursor,
      });
    },

    async getUnreadCount(_req, ctx) {
      return create(GetUnreadCountResponseSchema, { unread: await countUnread(on(ctx), requireUser(ctx).user.id) });
    },

    async markRead(req, ctx) {
      const caller = requireUser(ctx);
      const marked = await markRead(on(ctx), caller.user.id, req.notificationIds, deps.clock.now());
      if (marked) deps.notifier.changed(caller.user.id);
      return create(MarkReadResponseSchema, { marked });
    },

    async markAllRead(_req, ctx) {
      const caller = requireUser(ctx);
      const marked = await markAllRead(on(ctx), caller.user.id, deps.clock.now());
      if (marked) deps.notifier.changed(caller.user.id);
      return create(MarkAllReadResponseSchema, { marked });
    },

    async getNotificationPreferences(_req, ctx) {
      const stored = await findPreferences(on(ctx), requireUser(ctx).user.id);
      return create(GetNotificationPreferencesResponseSchema, { preferences: preferencesToProto(stored) });
    },

    async updateNotificationPreferences(req, ctx) {
      const caller = requireUser(ctx);
      const changes: StoredPreferences = {};
      for (const p of req.preferences) {
        const kind = kindFromProto(p.kind);
        if (kind in changes) throw fieldFail([{ field: "preferences", message: `the kind ${kind} is listed twice` }]);
        changes[kind] = { inApp: p.inApp, push: p.push };
      }
      const stored = await mergePreferences(on(ctx), caller.user.id, changes, deps.clock.now());
      return create(UpdateNotificationPreferencesResponseSchema, { preferences: preferencesToProto(stored) });
    },

    watchUnreadCount(_req, ctx) {
      return watchUnreadCount(deps, ctx);
    },
  };
}
