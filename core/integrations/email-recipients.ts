/**
 * Who an organization's email may go to: the verified addresses of its current members, and no one
 * else. An email integration naming anyone else is refused when it is saved (naming the addresses:
 * only a manager saves one, and managers see the members anyway), and each send keeps only those of
 * its recipients that still qualify, so a member who left, or an address no longer verified, stops
 * receiving without anyone editing the integration.
 */
import { sql, type SqlRunner } from "../db/sql.ts";
import { row, text } from "../db/rows.ts";
import { fieldFail } from "../errors.ts";

const emailRow = row({ email: text });

/** Of `recipients` (normalized), those that are a verified address of a current member of the organization. */
export async function memberRecipients(query: SqlRunner, organizationId: string, recipients: readonly string[]): Promise<string[]> {
  if (!recipients.length) return [];
  const rows = await query.rows(
    sql`select u.email from users u join memberships m on m.user_id = u.id
         where m.organization_id = ${organizationId} and u.email_verified_at is not null
           and u.email = any(${recipients}::text[])`,
    emailRow,
  );
  const allowed = new Set(rows.map((r) => r.email));
  return recipients.filter((r) => allowed.has(r));
}

/** Refuses (400, on the `email` field) recipients that are not verified addresses of the organization's members, naming them. */
export async function requireMemberRecipients(query: SqlRunner, organizationId: string, recipients: readonly string[]): Promise<void> {
  const allowed = new Set(await memberRecipients(query, organizationId, recipients));
  const others = recipients.filter((r) => !allowed.has(r));
  if (!others.length) return;
  const named = others.join(", ");
  throw fieldFail([
    {
      field: "email",
      message: `${named} ${others.length === 1 ? "is not the verified address of a member" : "are not verified addresses of members"} of this organization: alert email goes only to members who confirmed their address`,
    },
  ]);
}
