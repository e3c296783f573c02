/** Web Push's plain SQL: the deployment's VAPID key row and the users' push subscriptions. */
import { randomUUID } from "node:crypto";
import type { Query } from "../db/statements.ts";

export interface VapidKeyRow {
  public_key: string;
  private_key_ciphertext: Uint8Array;
  private_key_iv: Uint8Array;
  private_key_tag: Uint8Array;
  kek_id: string;
}

/** Stores the first VAPID key; a key another instance stored first wins (nothing happens here). */
export async function insertVapidKeyIfNone(query: Query, key: VapidKeyRow, now: Date): Promise<void> {
  await query(
    `insert into vapid_keys (id, public_key, private_key_ciphertext, private_key_iv, private_key_tag, kek_id, created_at)
     values (1, ?, ?, ?, ?, ?, ?) on conflict (id) do nothing`,
    [key.public_key, key.private_key_ciphertext, key.private_key_iv, key.private_key_tag, key.kek_id, now],
  );
}

/** The deployment's VAPID key, if one was made; `lock` holds its row until the transaction ends. */
export async function selectVapidKey(query: Query, lock = false): Promise<VapidKeyRow | undefined> {
  const [row] = await query<VapidKeyRow>(
    `select public_key, private_key_ciphertext, private_key_iv, private_key_tag, kek_id from vapid_keys where id = 1${lock ? " for update" : ""}`,
    [],
  );
  return row;
}

export async function updateVapidKeySeal(query: Query, sealed: Pick<VapidKeyRow, "private_key_ciphertext" | "private_key_iv" | "private_key_tag" | "kek_id">): Promise<void> {
  await query(`update vapid_keys set private_key_ciphertext = ?, private_key_iv = ?, private_key_tag = ?, kek_id = ? where id = 1`, [
    sealed.private_key_ciphertext,
    sealed.private_key_iv,
    sealed.private_key_tag,
    sealed.kek_id,
  ]);
}

export interface SubscriptionRow {
  id: string;
  user_id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  user_agent: string;
  created_at: Date;
  last_success_at: Date | null;
}

export interface NewSubscription {
  userId: string;
  /** The dashboard session it was made in (it ends with it); null through an API key. */
  sessionId: string | null;
  endpoint: string;
  p256dh: string;
  auth: string;
  userAgent: string;
}

/**
 * Saves a subscription: a known endpoint gets the new keys and label and moves to this user (the
 * browser that holds it subscribed again, perhaps signed in as someone else). Returns the row and
 * the user it belonged to before, when it was another's.
 */
export async function upsertSubscription(query: Query, s: NewSubscription, now: Date): Promise<SubscriptionRow & { previous_user_id: string | null }> {
  const [row] = await query<SubscriptionRow & { previous_user_id: string | null }>(
    `with before as (select user_id from push_subscriptions where endpoint = ?)
     insert into push_subscriptions as s (id, user_id, session_id, endpoint, p256dh, auth, user_agent, created_at)
     values (?, ?, ?, ?, ?, ?, ?, ?)
     on conflict (endpoint) do update set user_id = excluded.user_id, session_id = excluded.session_id, p256dh = excluded.p256dh, auth = excluded.auth,
       user_agent = excluded.user_agent, created_at = case when s.user_id = excluded.user_id then s.created_at else excluded.created_at end,
       last_success_at = case when s.user_id = excluded.user_id then s.last_success_at end
     returning s.*, (select user_id from before) as previous_user_id`,
    [s.endpoint, randomUUID(), s.userId, s.sessionId, s.endpoint, s.p256dh, s.auth, s.userAgent, now],
  );
  return row;
}

/**
 * Locks the user's row until the transaction ends (so one user's subscribes run one at a time),
 * then counts their subscriptions other than `endpoint` (which a subscribe would only refresh).
 */
export async function lockAndCountOtherSubscriptions(query: Query, userId: string, endpoint: string): Promise<number> {
  await query(`select id from users where id = ? for no key update`, [userId]);
  const [{ count }] = await query<{ count: number }>(`select count(*)::int as count from push_subscriptions where user_id = ? and endpoint <> ?`, [userId, endpoint]);
  return count;
}

/** The user's subscriptions, newest first. */
export function listSubscriptions(query: Query, userId: string): Promise<SubscriptionRow[]> {
  return query<SubscriptionRow>(`select * from push_subscriptions where user_id = ? order by created_at desc, id`, [userId]);
}

/** Deletes the user's subscription with this id or endpoint; returns it, or nothing when the user has none such. */
export async function deleteSubscription(query: Query, userId: string, target: { id: string } | { endpoint: string }): Promise<SubscriptionRow | undefined> {
  const [column, value] = "id" in target ? ["id", target.id] : ["endpoint", target.endpoint];
  const [row] = await query<SubscriptionRow>(`delete from push_subscriptions where user_id = ? and ${column} = ? returning *`, [userId, value]);
  return row;
}

/** The push service said it is gone: deleted, unless the browser subscribed again meanwhile (new keys). */
export async function deleteGoneSubscription(query: Query, id: string, p256dh: string): Promise<boolean> {
  const rows = await query(`delete from push_subscriptions where id = ? and p256dh = ? returning id`, [id, p256dh]);
  return rows.length > 0;
}

export async function markDelivered(query: Query, id: string, now: Date): Promise<void> {
  await query(`update push_subscriptions set last_success_at = ? where id = ?`, [now, id]);
}
