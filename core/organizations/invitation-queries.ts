/**
 * The invitations' SQL. Every time an invitation is made, checked or closed is the database's
 * (now()), so instances whose clocks differ agree on when one expires.
 */
import type { Query } from "../db/statements.ts";

/** How long an invitation can be accepted. */
export const invitationLifetime = "7 days";

/** An invitation with where it stands, its organization and who sent it. */
export interface InvitationRow {
  id: string;
  organization_id: string;
  organization_slug: string;
  organization_name: string;
  email: string;
  role: string;
  status: "pending" | "accepted" | "revoked" | "expired";
  inviter_user_id: string | null;
  inviter_email: string | null;
  inviter_name: string | null;
  created_at: Date;
  expires_at: Date;
  accepted_at: Date | null;
  revoked_at: Date | null;
}

const selectInvitation = `select i.id, i.organization_id, o.slug as organization_slug, o.name as organization_name, i.email, i.role,
         case when i.accepted_at is not null then 'accepted' when i.revoked_at is not null then 'revoked'
              when i.expires_at <= now() then 'expired' else 'pending' end as status,
         u.id as inviter_user_id, u.email as inviter_email, u.name as inviter_name,
         i.created_at, i.expires_at, i.accepted_at, i.revoked_at
    from invitations i join organizations o on o.id = i.organization_id left join users u on u.id = i.invited_by_id`;

/** An invitation that can still be accepted: neither accepted nor revoked, and not expired (by the database's clock). */
const pending = (alias = "") => `${alias}accepted_at is null and ${alias}revoked_at is null and ${alias}expires_at > now()`;

export async function insertInvitation(
  query: Query,
  values: { id: string; organizationId: string; email: string; role: string; tokenHash: string; invitedBy: string },
): Promise<void> {
  await query(
    `insert into invitations (id, organization_id, email, role, token_hash, invited_by_id, created_at, expires_at)
     values (?, ?, ?, ?, ?, ?, now(), now() + interval '${invitationLifetime}')`,
    [values.id, values.organizationId, values.email, values.role, values.tokenHash, values.invitedBy],
  );
}

export async function findInvitationById(query: Query, id: string): Promise<InvitationRow | undefined> {
  const [row] = await query<InvitationRow>(`${selectInvitation} where i.id = ?`, [id]);
  return row;
}

/** Looked up by the hash of the link's secret (an equality on a hash: nothing about the secret leaks by timing). */
export async function findInvitationByToken(query: Query, tokenHash: string): Promise<InvitationRow | undefined> {
  const [row] = await query<InvitationRow>(`${selectInvitation} where i.token_hash = ?`, [tokenHash]);
  return row;
}

/** Whether the address has an invitation to the organization that can still be accepted. */
export async function hasPendingInvitation(query: Query, organizationId: string, email: string): Promise<boolean> {
  const rows = await query(
    `select 1 from invitations where organization_id = ? and email = ? and ${pending()}`,
    [organizationId, email],
  );
  return rows.length > 0;
}

/** The organization's invitations, newest first: the pending ones, or the latest 200 of every state. */
export async function listInvitationRows(query: Query, organizationId: string, includeClosed: boolean): Promise<InvitationRow[]> {
  const onlyPending = includeClosed ? "" : `and ${pending("i.")}`;
  return query<InvitationRow>(`${selectInvitation} where i.organization_id = ? ${onlyPending} order by i.created_at desc, i.id limit 200`, [organizationId]);
}

/**
 * Uses the invitation, once: of any number of concurrent accepts, one updates the row; the others
 * wait for its lock, see it accepted and update nothing. False when it was not pending.
 */
export async function markAccepted(query: Query, id: string, userId: string): Promise<boolean> {
  const rows = await query(
    `update invitations set accepted_at = now(), accepted_by_id = ?
      where id = ? and ${pending()} returning id`,
    [userId, id],
  );
  return rows.length > 0;
}

/** Revokes the organization's invitation unless it was accepted or revoked already; false then. */
export async function markRevoked(query: Query, organizationId: string, id: string): Promise<boolean> {
  const rows = await query(
    `update invitations set revoked_at = now() where id = ? and organization_id = ? and accepted_at is null and revoked_at is null returning id`,
    [id, organizationId],
  );
  return rows.length > 0;
}

/**
 * Revokes the organization's pending invitations that `inviterId` sent, only those inviting as
 * `role` when given; returns them (id, email, role).
 */
export async function revokeInvitationsSentBy(
  query: Query,
  organizationId: string,
  inviterId: string,
  role?: string,
): Promise<Array<{ id: string; email: string; role: string }>> {
  return query<{ id: string; email: string; role: string }>(
    `update invitations set revoked_at = now()
      where organization_id = ? and invited_by_id = ? and ${pending()} ${role ? "and role = ?" : ""}
      returning id, email, role`,
    role ? [organizationId, inviterId, role] : [organizationId, inviterId],
  );
}
