/**
 * The email verification links' SQL. Every time a link is made, checked or used is the database's
 * (now()), so instances whose clocks differ agree on when one expires.
 */
import { sql, type SqlRunner } from "../db/sql.ts";
import { bool, oneOf, row, text, timestamp, type Row } from "../db/rows.ts";

/** How long a verification link works (an interval, passed as one). */
export const verificationLifetime = "24 hours";

const expiresRow = row({ expires_at: timestamp });

/**
 * Stores a new link for the account's current address, replacing its links not yet used: the
 * newest link mailed is the one that works. Returns when it expires.
 */
export async function insertVerification(query: SqlRunner, values: { id: string; userId: string; email: string; tokenHash: string }): Promise<Date> {
  await query.run(sql`delete from email_verifications where user_id = ${values.userId} and used_at is null`);
  const inserted = await query.one(
    sql`insert into email_verifications (id, user_id, email, token_hash, created_at, expires_at)
        values (${values.id}, ${values.userId}, ${values.email}, ${values.tokenHash}, now(), now() + ${verificationLifetime}::interval) returning expires_at`,
    expiresRow,
  );
  return inserted!.expires_at;
}

/** A link as it stands, found by the hash of its secret. */
const verificationRow = row({
  id: text,
  user_id: text,
  /** The address it was mailed to. */
  email: text,
  /** The account's address now (it verifies only that one). */
  current_email: text,
  status: oneOf("pending", "used", "expired"),
  verified: bool,
});
export type VerificationRow = Row<typeof verificationRow>;

const verifiedRow = row({ user_id: text, email: text });

/**
 * Uses the link, once, and verifies the account's address if it is still the one the link was
 * mailed to: of any number of concurrent uses, one updates the row; the others wait for its lock,
 * see it used and update nothing. Returns the account and address verified, or undefined when the
 * link was not pending (or the address changed): then {@link findVerification} says why.
 */
export function useVerification(query: SqlRunner, tokenHash: string): Promise<Row<typeof verifiedRow> | undefined> {
  return query.one(
    sql`with used as (
          update email_verifications set used_at = now()
           where token_hash = ${tokenHash} and used_at is null and expires_at > now()
           returning user_id, email)
        update users u set email_verified_at = coalesce(u.email_verified_at, now())
          from used where u.id = used.user_id and u.email = used.email
        returning u.id as user_id, u.email`,
    verifiedRow,
  );
}

/** The link with this hash and where it stands, or undefined (an equality on a hash: nothing about the secret leaks by timing). */
export function findVerification(query: SqlRunner, tokenHash: string): Promise<VerificationRow | undefined> {
  return query.one(
    sql`select v.id, v.user_id, v.email, u.email as current_email,
               case when v.used_at is not null then 'used' when v.expires_at <= now() then 'expired' else 'pending' end as status,
               u.email_verified_at is not null as verified
          from email_verifications v join users u on u.id = v.user_id
         where v.token_hash = ${tokenHash}`,
    verificationRow,
  );
}
