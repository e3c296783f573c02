/**
 * The email verification links' SQL. Every time a link is made, checked or used is the database's
 * (now()), so instances whose clocks differ agree on when one expires.
 */
import type { Query } from "../db/statements.ts";

/** How long a verification link works. */
export const verificationLifetime = "24 hours";

/**
 * Stores a new link for the account's current address, replacing its links not yet used: the
 * newest link mailed is the one that works. Returns when it expires.
 */
export async function insertVerification(query: Query, values: { id: string; userId: string; email: string; tokenHash: string }): Promise<Date> {
  await query(`delete from email_verifications where user_id = ? and used_at is null`, [values.userId]);
  const [row] = await query<{ expires_at: Date }>(
    `insert into email_verifications (id, user_id, email, token_hash, created_at, expires_at)
     values (?, ?, ?, ?, now(), now() + interval '${verificationLifetime}') returning expires_at`,
    [values.id, values.userId, values.email, values.tokenHash],
  );
  return new Date(row.expires_at);
}

/** A link as it stands, found by the hash of its secret. */
export interface VerificationRow {
  id: string;
  user_id: string;
  /** The address it was mailed to. */
  email: string;
  /** The account's address now (it verifies only that one). */
  current_email: string;
  status: "pending" | "used" | "expired";
  verified: boolean;
}

/**
 * Uses the link, once, and verifies the account's address if it is still the one the link was
 * mailed to: of any number of concurrent uses, one updates the row; the others wait for its lock,
 * see it used and update nothing. Returns the account and address verified, or undefined when the
 * link was not pending (or the address changed): then {@link findVerification} says why.
 */
export async function useVerification(query: Query, tokenHash: string): Promise<{ user_id: string; email: string } | undefined> {
  const [row] = await query<{ user_id: string; email: string }>(
    `with used as (
       update email_verifications set used_at = now()
        where token_hash = ? and used_at is null and expires_at > now()
        returning user_id, email)
     update users u set email_verified_at = coalesce(u.email_verified_at, now())
       from used where u.id = used.user_id and u.email = used.email
     returning u.id as user_id, u.email`,
    [tokenHash],
  );
  return row;
}

/** The link with this hash and where it stands, or undefined (an equality on a hash: nothing about the secret leaks by timing). */
export async function findVerification(query: Query, tokenHash: string): Promise<VerificationRow | undefined> {
  const [row] = await query<VerificationRow>(
    `select v.id, v.user_id, v.email, u.email as current_email,
            case when v.used_at is not null then 'used' when v.expires_at <= now() then 'expired' else 'pending' end as status,
            u.email_verified_at is not null as verified
       from email_verifications v join users u on u.id = v.user_id
      where v.token_hash = ?`,
    [tokenHash],
  );
  return row;
}
