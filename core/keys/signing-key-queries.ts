/** The signing keys' plain SQL (the rows themselves go through the ORM in signing-key-store.ts). */
import { sql, type SqlRunner } from "../db/sql.ts";

/** Takes the issuer's lock until the transaction ends: one instance at a time creates, rotates or purges its keys. */
export async function lockIssuerKeys(query: SqlRunner, issuer: string): Promise<void> {
  await query.run(sql`select pg_advisory_xact_lock(hashtext(${`outpost.signing_keys.${issuer}`}))`);
}
