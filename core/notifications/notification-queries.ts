/** The notifications' plain SQL: one user's own rows, always by user id. */
import { empty, sql, type SqlRunner } from "../db/sql.ts";
import { bool, int, json, nullable, row, text, timestamp, type Row } from "../db/rows.ts";

const notificationRow = row({
  id: text,
  kind: text,
  title: text,
  body: text,
  link: nullable(text),
  organization_id: nullable(text),
  created_at: timestamp,
  read_at: nullable(timestamp),
});
export type NotificationRow = Row<typeof notificationRow>;

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
export function insertNotification(query: SqlRunner, n: NewNotification): Promise<{ push: boolean } | undefined> {
  return query.one(
    sql`with preference as (select kinds -> ${n.kind}::text as kind from notification_preferences where user_id = ${n.userId})
        insert into notifications (id, user_id, kind, title, body, link, organization_id, dedupe_key, created_at)
        select ${n.id}, ${n.userId}, ${n.kind}, ${n.title}, ${n.body}, ${n.link}, ${n.organizationId}, ${n.dedupeKey}, ${n.createdAt}
        where coalesce((select (kind ->> 'inApp')::boolean from preference), true)
        on conflict (user_id, dedupe_key) where dedupe_key is not null do nothing
        returning coalesce((select (kind ->> 'push')::boolean from preference), false) as push`,
    row({ push: bool }),
  );
}

/** A page, newest first, after the (created_at, id) position `after` when given. */
export function listNotificationRows(
  query: SqlRunner,
  userId: string,
  options: { unreadOnly: boolean; limit: number; after?: { createdAt: Date; id: string } },
): Promise<NotificationRow[]> {
  const { after } = options;
  return query.rows(
    sql`select id, kind, title, body, link, organization_id, created_at, read_at
          from notifications
         where user_id = ${userId}
               ${options.unreadOnly ? sql`and read_at is null` : empty}
               ${after ? sql`and (created_at, id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : empty}
         order by created_at desc, id desc limit ${options.limit}`,
    notificationRow,
  );
}

const counted = row({ n: int });

export async function countUnread(query: SqlRunner, userId: string): Promise<number> {
  const found = await query.one(sql`select count(*) as n from notifications where user_id = ${userId} and read_at is null`, counted);
  return found?.n ?? 0;
}

/** Marks the user's own unread ones among `ids` as read; returns how many. */
export function markRead(query: SqlRunner, userId: string, ids: readonly string[], now: Date): Promise<number> {
  return query.run(sql`update notifications set read_at = ${now} where user_id = ${userId} and read_at is null and id = any(${ids}::uuid[])`);
}

export function markAllRead(query: SqlRunner, userId: string, now: Date): Promise<number> {
  return query.run(sql`update notifications set read_at = ${now} where user_id = ${userId} and read_at is null`);
}

export type StoredPreferences = Record<string, { inApp: boolean; push: boolean }>;

/** The stored preferences: a JSON object of kind → { inApp, push }, kept as written by {@link mergePreferences}. */
const preferencesRow = row({ kinds: json });

export async function findPreferences(query: SqlRunner, userId: string): Promise<StoredPreferences> {
  const found = await query.one(sql`select kinds from notification_preferences where user_id = ${userId}`, preferencesRow);
  return (found?.kinds ?? {}) as StoredPreferences;
}

/** Merges `kinds` into the user's preferences (kinds not named keep theirs); returns them all. */
export async function mergePreferences(query: SqlRunner, userId: string, kinds: StoredPreferences, now: Date): Promise<StoredPreferences> {
  const merged = await query.one(
    sql`insert into notification_preferences (user_id, kinds, updated_at) values (${userId}, ${JSON.stringify(kinds)}::jsonb, ${now})
        on conflict (user_id) do update set kinds = notification_preferences.kinds || excluded.kinds, updated_at = excluded.updated_at
        returning kinds`,
    preferencesRow,
  );
  return (merged?.kinds ?? {}) as StoredPreferences;
}

const expiringKeyRow = row({ id: text, user_id: text, name: text, expires_at: timestamp });
export type ExpiringKey = Row<typeof expiringKeyRow>;

/** Live API keys that expire before `until` and whose owner has not been told yet. */
export function findExpiringKeys(query: SqlRunner, now: Date, until: Date): Promise<ExpiringKey[]> {
  return query.rows(
    sql`select k.id, k.user_id, k.name, k.expires_at from api_keys k
         where k.revoked_at is null and k.expires_at > ${now} and k.expires_at <= ${until}
           and not exists (select 1 from notifications n where n.user_id = k.user_id and n.dedupe_key = 'api_key_expiring:' || k.id::text)
         order by k.expires_at limit 500`,
    expiringKeyRow,
  );
}
