/**
 * The organization's hourly email cap (its plan's `emailsPerHour`): at most that many emails in any
 * hour from all its email integrations together, alerts and test sends alike, each recipient of a
 * message counting one. Counted in PostgreSQL (`organization_emails`, migration 0029), so it holds
 * across instances: a reservation locks the organization's row, so two instances sending at once
 * count one after the other. An email is counted when it is handed to the SMTP server, sent or not:
 * a failing server is not a way around the cap.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { executeOn } from "../db/statements.ts";
import type { CoreConfig } from "../deps.ts";
import { planLimits } from "../access.ts";

export type EmailReservation = { allowed: true } | { allowed: false; reason: string };

/**
 * Counts `recipients` emails against the organization's cap for the hour before now (by the
 * database's clock) if they fit, in a transaction of its own; otherwise counts nothing and says why.
 */
export async function reserveOrganizationEmail(em: EntityManager, config: CoreConfig, organizationId: string, recipients: number): Promise<EmailReservation> {
  return em.fork().transactional(async (tx) => {
    const query = executeOn(tx);
    const [organization] = await query<{ plan: string }>(`select plan from organizations where id = ? for no key update`, [organizationId]);
    if (!organization) return { allowed: false, reason: "refused: the organization no longer exists" };
    const limit = planLimits(config, organization.plan).emailsPerHour;
    await query(`delete from organization_emails where organization_id = ? and sent_at <= now() - interval '1 hour'`, [organizationId]);
    const [{ used }] = await query<{ used: number }>(`select coalesce(sum(recipients), 0)::int as used from organization_emails where organization_id = ?`, [organizationId]);
    if (used + recipients > limit) {
      return {
        allowed: false,
        reason: `refused: the organization's email cap is reached (its ${organization.plan} plan allows ${limit} emails an hour, each recipient counting one; ${used} sent in the last hour, this one has ${recipients})`,
      };
    }
    await query(`insert into organization_emails (organization_id, sent_at, recipients) values (?, now(), ?)`, [organizationId, recipients]);
    return { allowed: true };
  });
}
