/**
 * The invitations' SQL. Every time an invitation is made, checked or closed is the database's
 * (now()), so instances whose clocks differ agree on when one expires.
 */
import { empty, sql, type SqlRunner } from "../db/sql.ts";
import { int, nullable, oneOf, row, text, timestamp, type Row } from "../db/rows.ts";

/** How long an invitation can be accepted (an interval, passed as one). */
export const invitationLifetime = "7 days";

/** An invitation with where it stands, its organization and who sent it. */
const invitationRow = row({
  id: text,
  organization_id: text,
  organization_slug: text,
  organization_name: text,
  email: text,
  role: text,
  status: oneOf("pending", "accepted", "revoked", "expired"),
  inviter_user_id: nullable(text),
  inviter_email: nullable(text),
  inviter_name: nullable(text),
  created_at: timestamp,
  expires_at: timestamp,
  accepted_at: nullable(timestamp),
  revoked_at: nullable(timestamp),
});
export type InvitationRow = Row<typeof invitationRow>;

const selectInvitation = sql`select i.id, i.organization_id, o.slug as organization_slug, o.name as organization_name, i.email, i.role,
         case when i.accepted_at is not null then 'accepted' when i.revoked_at is not null then 'revoked'
              when i.expires_at <= now() then 'expired' else 'pending' end as status,
         u.id as inviter_user_id, u.email as inviter_email, u.name as inviter_name,
         i.created_at, i.expires_at, i.accepted_at, i.revoked_at
    from invitations i join organizations o on o.id = i.organization_id left join users u on u.id = i.invited_by_id`;

/** An invitation `i` that can still be accepted: neither accepted nor revoked, and not expired (by the database's clock). */
const pending = sql`i.accepted_at is null and i.revoked_at is null and i.expires_at > now()`;

export async function insertInvitation(
  query: SqlRunner,
  values: { id: string; organizationId: string; email: string; role: string; tokenHash: string; invitedBy: string },
): Promise<void> {
  await query.run(
    sql`insert into invitations (id, organization_id, email, role, token_hash, invited_by_id, created_at, expires_at)
        values (${values.id}, ${values.organizationId}, ${values.email}, ${values.role}, ${values.tokenHash}, ${values.invitedBy},
                now(), now() + ${invitationLifetime}::interval)`,
  );
}

export function findInvitationById(query: SqlRunner, id: string): Promise<InvitationRow | undefined> {
  return query.one(sql`${selectInvitation} where i.id = ${id}`, invitationRow);
}

/** Looked up by the hash of the link's secret (an equality on a hash: nothing about the secret leaks by timing). */
export function findInvitationByToken(query: SqlRunner, tokenHash: string): Promise<InvitationRow | undefined> {
  return query.one(sql`${selectInvitation} where i.token_hash = ${tokenHash}`, invitationRow);
}

/** Whether the address has an invitation to the organization that can still be accepted. */
export async function hasPendingInvitation(query: SqlRunner, organizationId: string, email: string): Promise<boolean> {
  const found = await query.one(
    sql`select 1 as found from invitations i where i.organization_id = ${organizationId} and i.email = ${email} and ${pending}`,
    row({ found: int }),
  );
  return found !== undefined;
}

/** The organization's invitations, newest first: the pending ones, or the latest 200 of every state. */
export function listInvitationRows(query: SqlRunner, organizationId: string, includeClosed: boolean): Promise<InvitationRow[]> {
  return query.rows(
    sql`${selectInvitation} where i.organization_id = ${organizationId} ${includeClosed ? empty : sql`and ${pending}`} order by i.created_at desc, i.id limit 200`,
    invitationRow,
  );
}

/**
 * Uses the invitation, once: of any number of concurrent accepts, one updates the row; the others
 * wait for its lock, see it accepted and update nothing. False when it was not pending.
 */
export async function markAccepted(query: SqlRunner, id: string, userId: string): Promise<boolean> {
  const accepted = await query.run(sql`update invitations i set accepted_at = now(), accepted_by_id = ${userId} where i.id = ${id} and ${pending}`);
  return accepted > 0;
}

/** Revokes the organization's invitation unless it was accepted or revoked already; false then. */
export async function markRevoked(query: SqlRunner, organizationId: string, id: string): Promise<boolean> {
  const revoked = await query.run(
    sql`update invitations set revoked_at = now() where id = ${id} and organization_id = ${organizationId} and accepted_at is null and revoked_at is null`,
  );
  return revoked > 0;
}

const revokedRow = row({ id: text, email: text, role: text });

/**
 * Revokes the organization's pending invitations that `inviterId` sent, only those inviting as
 * `role` when given; returns them (id, email, role).
 */
export function revokeInvitationsSentBy(query: SqlRunner, organizationId: string, inviterId: string, role?: string): Promise<Array<Row<typeof revokedRow>>> {
  return query.rows(
    sql`update invitations i set revoked_at = now()
         where i.organization_id = ${organizationId} and i.invited_by_id = ${inviterId} and ${pending} ${role ? sql`and i.role = ${role}` : empty}
        returning id, email, role`,
    revokedRow,
  );
}
