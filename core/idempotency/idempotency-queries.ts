/**
 * The claims of idempotency keys (`idempotency_keys`): one row per caller and key, inserted before
 * the request runs (so that exactly one of several at once runs it) and completed with its answer,
 * which every retry with the key is then given. Only a claim still running is forgotten or
 * abandoned: a completed answer is never overwritten.
 */
import { sql, type SqlRunner } from "../db/sql.ts";
import { bytes, json, nullable, row, timestamp, type Row } from "../db/rows.ts";

/** How long a key's answer is kept: a retry after that runs the request again. */
export const idempotencyKeptMs = 24 * 60 * 60_000;

/** Whose key it is: the credential a request came with, and that credential's user. */
export interface KeyOwner {
  userId: string;
  credentialId: string;
}

export interface Claim extends KeyOwner {
  key: string;
  /** The procedure's full name ("outpost.servers.v1.ServersService/ExecuteConsoleCommand"). */
  procedure: string;
  /** SHA-256 of the procedure and its request in binary. */
  requestHash: Buffer;
  at: Date;
}

/**
 * Claims the key for a request; false when the caller already used it (that row then tells the
 * rest). A claim past {@link idempotencyKeptMs} that the sweep has not removed yet is taken over.
 */
export async function claimKey(query: SqlRunner, c: Claim): Promise<boolean> {
  const expired = new Date(c.at.getTime() - idempotencyKeptMs);
  const claimed = await query.run(
    sql`insert into idempotency_keys (user_id, credential_id, key, procedure, request_hash, created_at)
        values (${c.userId}, ${c.credentialId}, ${c.key}, ${c.procedure}, ${c.requestHash}, ${c.at})
        on conflict (user_id, credential_id, key) do update
          set procedure = excluded.procedure, request_hash = excluded.request_hash, response = null, error = null,
              created_at = excluded.created_at, completed_at = null
          where idempotency_keys.created_at < ${expired}`,
  );
  return claimed === 1;
}

const claimRow = row({
  request_hash: bytes,
  response: nullable(bytes),
  error: nullable(json),
  created_at: timestamp,
  completed_at: nullable(timestamp),
});

export type ClaimRow = Row<typeof claimRow>;

/** The caller's claim of the key, as it is now; undefined when there is none (never made, forgotten or expired). */
export function readClaim(query: SqlRunner, owner: KeyOwner, key: string): Promise<ClaimRow | undefined> {
  return query.one(
    sql`select request_hash, response, error, created_at, completed_at from idempotency_keys
        where user_id = ${owner.userId} and credential_id = ${owner.credentialId} and key = ${key}`,
    claimRow,
  );
}

/** The request's answer: its response in binary, or the error a retry is to get. */
export type Answer = { response: Uint8Array } | { error: StoredError };

/** An error as kept for replay: its Connect code, message and details (each its type and base64 binary). */
export interface StoredError {
  code: number;
  message: string;
  details: { type: string; value: string }[];
}

/** Completes the running claim with its answer. */
export async function completeClaim(query: SqlRunner, owner: KeyOwner, key: string, answer: Answer, at: Date): Promise<void> {
  const response = "response" in answer ? Buffer.from(answer.response) : null;
  const error = "error" in answer ? JSON.stringify(answer.error) : null;
  await query.run(
    sql`update idempotency_keys set response = ${response}, error = ${error}::jsonb, completed_at = ${at}
        where user_id = ${owner.userId} and credential_id = ${owner.credentialId} and key = ${key} and completed_at is null`,
  );
}

/** Drops the running claim of a request that did nothing (refused, or failed before acting), so a retry runs it. */
export async function forgetClaim(query: SqlRunner, owner: KeyOwner, key: string): Promise<void> {
  await query.run(sql`delete from idempotency_keys where user_id = ${owner.userId} and credential_id = ${owner.credentialId} and key = ${key} and completed_at is null`);
}

/**
 * Completes with `error` a claim still running since before `before` (its instance stopped
 * mid-request): true when this call did, so that a retry does not wait for it forever.
 */
export async function abandonClaim(query: SqlRunner, owner: KeyOwner, key: string, before: Date, error: StoredError, at: Date): Promise<boolean> {
  const changed = await query.run(
    sql`update idempotency_keys set error = ${JSON.stringify(error)}::jsonb, completed_at = ${at}
        where user_id = ${owner.userId} and credential_id = ${owner.credentialId} and key = ${key} and completed_at is null and created_at < ${before}`,
  );
  return changed === 1;
}

/** Deletes the claims made before `before` (the sweep: {@link idempotencyKeptMs}). */
export function deleteOldClaims(query: SqlRunner, before: Date): Promise<number> {
  return query.run(sql`delete from idempotency_keys where created_at < ${before}`);
}
