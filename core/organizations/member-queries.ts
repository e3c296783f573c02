/** The members' SQL that the ORM would say less plainly. */
import { sql, type SqlRunner } from "../db/sql.ts";
import { row, text } from "../db/rows.ts";

const userIdRow = row({ id: text });

/**
 * The account with this (normalized) email when its address is verified and it shares an
 * organization with `callerId`: someone the caller can already see in a members list, so adding
 * them at once tells the caller nothing new. Undefined for anyone else, account or not.
 */
export async function findVerifiedColleague(query: SqlRunner, callerId: string, email: string): Promise<string | undefined> {
  const found = await query.one(
    sql`select u.id from users u
         where u.email = ${email} and u.email_verified_at is not null
           and exists (select 1 from memberships mine join memberships theirs on theirs.organization_id = mine.organization_id
                        where mine.user_id = ${callerId} and theirs.user_id = u.id)`,
    userIdRow,
  );
  return found?.id;
}
