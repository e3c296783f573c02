/** Web Push's plain SQL: the deployment's VAPID key row and the users' push subscriptions. */
import { randomUUID } from "node:crypto";
import { empty, sql, type SqlRunner } from "../db/sql.ts";
import { bytes, int, nullable, row, text, timestamp, type Row } from "../db/rows.ts";

/** The VAPID key's columns: its public key, and its private key sealed under the KEK. */
export interface VapidKeyColumns {
  public_key: string;
  private_key_ciphertext: Uint8Array;
  private_key_iv: Uint8Array;
  private_key_tag: Uint8Array;
  kek_id: string;
}

const vapidKeyRow = row({ public_key: text, private_key_ciphertext: bytes, private_key_iv: bytes, private_key_tag: bytes, kek_id: text });
export type VapidKeyRow = Row<typeof vapidKeyRow>;

/** Stores the first VAPID key; a key another instance stored first wins (nothing happens here). */
export async function insertVapidKeyIfNone(query: SqlRunner, key: VapidKeyColumns, now: Date): Promise<void> {
  await query.run(
    sql`insert into vapid_keys (id, public_key, private_key_ciphertext, private_key_iv, private_key_tag, kek_id, created_at)
        values (1, ${key.public_key}, ${key.private_key_ciphertext}, ${key.private_key_iv}, ${key.private_key_tag}, ${key.kek_id}, ${now})
        on conflict (id) do nothing`,
  );
}

/** The deployment's VAPID key, if one was made; `lock` holds its row until the transaction ends. */
export function selectVapidKey(query: SqlRunner, lock = false): Promise<VapidKeyRow | undefined> {
  return query.one(
    sql`select public_key, private_key_ciphertext, private_key_iv, private_key_tag, kek_id from vapid_keys where id = 1 ${lock ? sql`for update` : empty}`,
    vapidKeyRow,
  );
}

export async function updateVapidKeySeal(
  query: SqlRunner,
  sealed: Pick<VapidKeyColumns, "private_key_ciphertext" | "private_key_iv" | "private_key_tag" | "kek_id">,
): Promise<void> {
  await query.run(
    sql`update vapid_keys set private_key_ciphertext = ${sealed.private_key_ciphertext}, private_key_iv = ${sealed.private_key_iv},
               private_key_tag = ${sealed.private_key_tag}, kek_id = ${sealed.kek_id}
         where id = 1`,
  );
}

const subscriptionFields = {
  id: text,
  user_id: text,
  endpoint: text,
  p256dh: text,
  auth: text,
  user_agent: text,
  created_at: timestamp,
  last_success_at: nullable(timestamp),
};
const subscriptionRow = row(subscriptionFields);
export type SubscriptionRow = Row<typeof subscriptionRow>;

const subscriptionColumns = sql`id, user_id, endpoint, p256dh, auth, user_agent, created_at, last_success_at`;

export interface NewSubscription {
  userId: string;
  /** The dashboard session it was made in (it ends with it); null through an API key. */
  sessionId: string | null;
  endpoint: string;
  p256dh: string;
  auth: string;
  userAgent: string;
}

const savedSubscriptionRow = row({ ...subscriptionFields, previous_user_id: nullable(text) });

/**
 * Saves a subscription: a known endpoint gets the new keys and label and moves to this user (the
 * browser that holds it subscribed again, perhaps signed in as someone else). Returns the row and
 * the user it belonged to before, when it was another's.
 */
export async function upsertSubscription(query: SqlRunner, s: NewSubscription, now: Date): Promise<Row<typeof savedSubscriptionRow>> {
  const saved = await query.one(
    sql`with before as (select user_id from push_subscriptions where endpoint = ${s.endpoint})
        insert into push_subscriptions as s (id, user_id, session_id, endpoint, p256dh, auth, user_agent, created_at)
        values (${randomUUID()}, ${s.userId}, ${s.sessionId}, ${s.endpoint}, ${s.p256dh}, ${s.auth}, ${s.userAgent}, ${now})
        on conflict (endpoint) do update set user_id = excluded.user_id, session_id = excluded.session_id, p256dh = excluded.p256dh, auth = excluded.auth,
          user_agent = excluded.user_agent, created_at = case when s.user_id = excluded.user_id then s.created_at else excluded.created_at end,
          last_success_at = case when s.user_id = excluded.user_id then s.last_success_at end
        returning ${subscriptionColumns}, (select user_id from before) as previous_user_id`,
    savedSubscriptionRow,
  );
  return saved!;
}

const counted = row({ count: int });

/**
 * Locks the user's row until the transaction ends (so one user's subscribes run one at a time),
 * then counts their subscriptions other than `endpoint` (which a subscribe would only refresh).
 */
export async function lockAndCountOtherSubscriptions(query: SqlRunner, userId: string, endpoint: string): Promise<number> {
  await query.run(sql`select id from users where id = ${userId} for no key update`);
  const found = await query.one(sql`select count(*) as count from push_subscriptions where user_id = ${userId} and endpoint <> ${endpoint}`, counted);
  return found?.count ?? 0;
}

/** The user's subscriptions, newest first. */
export function listSubscriptions(query: SqlRunner, userId: string): Promise<SubscriptionRow[]> {
  return query.rows(sql`select ${subscriptionColumns} from push_subscriptions where user_id = ${userId} order by created_at desc, id`, subscriptionRow);
}

/** Deletes the user's subscription with this id or endpoint; returns it, or nothing when the user has none such. */
export function deleteSubscription(query: SqlRunner, userId: string, target: { id: string } | { endpoint: string }): Promise<SubscriptionRow | undefined> {
  const which = "id" in target ? sql`id = ${target.id}` : sql`endpoint = ${target.endpoint}`;
  return query.one(sql`delete from push_subscriptions where user_id = ${userId} and ${which} returning ${subscriptionColumns}`, subscriptionRow);
}

/** The push service said it is gone: deleted, unless the browser subscribed again meanwhile (new keys). */
export async function deleteGoneSubscription(query: SqlRunner, id: string, p256dh: string): Promise<boolean> {
  return (await query.run(sql`delete from push_subscriptions where id = ${id} and p256dh = ${p256dh}`)) > 0;
}

export async function markDelivered(query: SqlRunner, id: string, now: Date): Promise<void> {
  await query.run(sql`update push_subscriptions set last_success_at = ${now} where id = ${id}`);
}
