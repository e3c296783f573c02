/** The notifications' plain SQL: one user's own rows, always by user id. */
import type { Query } from "../db/statements.ts";

export interface NotificationRow {
  id: string;
  kind: string;
  title: string;
  body: string;
  link: string | null;
  organization_id: string | null;
  created_at: Date | string;
  read_at: Date | string | null;
}

export interface NewNotification {
  id: string;
  userId: string;
  kind: string;
  title: string;
  body: string;
  link: string | null;
  organizationId: string | null;
  dedupeKey: string | null;
  createdAt: Date;
}

/**
 * Keeps the notification unless the user turned its kind off, or already has one with its
 * dedupe key; returns whether it was kept and whether the user wants its kind pushed.
 */
export async function insertNotification(query: Query, n: NewNotification): Promise<{ push: boolean } | undefined> {
  const rows = await query<{ push: boolean }>(
    `with preference as (select kinds -> ?::text as kind from notification_preferences where user_id = ?)
     insert into notifications (id, user_id, kind, title, body, link, organization_id, dedupe_key, created_at)
     select ?, ?, ?, ?, ?, ?, ?, ?, ?
     where coalesce((select (kind ->> 'inApp')::boolean from preference), true)
     on conflict (user_id, dedupe_key) where dedupe_key is not null do nothing
     returning coalesce((select (kind ->> 'push')::boolean from preference), false) as push`,
    [n.kind, n.userId, n.id, n.userId, n.kind, n.title, n.body, n.link, n.organizationId, n.dedupeKey, n.createdAt],
  );
  return rows[0];
}

const columns = "id, kind, title, body, link, organization_id, created_at, read_at";

/** A page, newest first, after the (created_at, id) position `after` when given. */
export function listNotificationRows(
  query: Query,
  userId: string,
  options: { unreadOnly: boolean; limit: number; after?: { createdAt: Date; id: string } },
): Promise<NotificationRow[]> {
  const unread = options.unreadOnly ? "and read_at is null" : "";
  if (!options.after) {
    return query(`select ${columns} from notifications where user_id = ? ${unread} order by created_at desc, id desc limit ?`, [userId, options.limit]);
  }
  return query(
    `select ${columns} from notifications where user_id = ? ${unread} and (created_at, id) < (?::timestamptz, ?::uuid)
     order by created_at desc, id desc limit ?`,
    [userId, options.after.createdAt, options.after.id, options.limit],
  );
}

export async function countUnread(query: Query, userId: string): Promise<number> {
  const rows = await query<{ unread: number }>(`select count(*)::int as unread from notifications where user_id = ? and read_at is null`, [userId]);
  return rows[0]?.unread ?? 0;
}

/** Marks the user's own unread ones among `ids` as read; returns how many. */
export async function markRead(query: Query, userId: string, ids: readonly string[], now: Date): Promise<number> {
  const rows = await query<{ marked: number }>(
    `with marked as (
       update notifications set read_at = ?
       where user_id = ? and read_at is null and id = any(string_to_array(?, ',')::uuid[])
       returning 1)
     select count(*)::int as marked from marked`,
    [now, userId, ids.join(",")],
  );
  return rows[0]?.marked ?? 0;
}

export async function markAllRead(query: Query, userId: string, now: Date): Promise<number> {
  const rows = await query<{ marked: number }>(
    `with marked as (update notifications set read_at = ? where user_id = ? and read_at is null returning 1)
     select count(*)::int as marked from marked`,
    [now, userId],
  );
  return rows[0]?.marked ?? 0;
}

export type StoredPreferences = Record<string, { inApp: boolean; push: boolean }>;

export async function findPreferences(query: Query, userId: string): Promise<StoredPreferences> {
  const rows = await query<{ kinds: StoredPreferences | string }>(`select kinds from notification_preferences where user_id = ?`, [userId]);
  return parseKinds(rows[0]?.kinds);
}

/** Merges `kinds` into the user's preferences (kinds not named keep theirs); returns them all. */
export async function mergePreferences(query: Query, userId: string, kinds: StoredPreferences, now: Date): Promise<StoredPreferences> {
  const rows = await query<{ kinds: StoredPreferences | string }>(
    `insert into notification_preferences (user_id, kinds, updated_at) values (?, ?::jsonb, ?)
     on conflict (user_id) do update set kinds = notification_preferences.kinds || excluded.kinds, updated_at = excluded.updated_at
     returning kinds`,
    [userId, JSON.stringify(kinds), now],
  );
  return parseKinds(rows[0]?.kinds);
}

function parseKinds(kinds: StoredPreferences | string | undefined): StoredPreferences {
  if (kinds === undefined) return {};
  return typeof kinds === "string" ? (JSON.parse(kinds) as StoredPreferences) : kinds;
}

export interface ExpiringKey {
  id: string;
  user_id: string;
  name: string;
  expires_at: Date | string;
}

/** Live API keys that expire before `until` and whose owner has not been told yet. */
export function findExpiringKeys(query: Query, now: Date, until: Date): Promise<ExpiringKey[]> {
  return query(
    `select k.id, k.user_id, k.name, k.expires_at from api_keys k
     where k.revoked_at is null and k.expires_at > ? and k.expires_at <= ?
       and not exists (select 1 from notifications n where n.user_id = k.user_id and n.dedupe_key = 'api_key_expiring:' || k.id::text)
     order by k.expires_at limit 500`,
    [now, until],
  );
}
