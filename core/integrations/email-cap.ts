/**
 * The organization's hourly email cap (its plan's `emailsPerHour`): at most that many emails in any
 * hour from all its email integrations together, alerts and test sends alike, each recipient of a
 * message counting one. Counted in PostgreSQL (`organization_emails`, migration 0029), so it holds
 * across instances: a reservation locks the organization's row, so two instances sending at once
 * count one after the other. An email is counted when it is handed to the SMTP server, sent or not:
 * a failing server is not a way around the cap.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { inTransaction, sql } from "../db/sql.ts";
import { int, row, text } from "../db/rows.ts";
import type { CoreConfig } from "../deps.ts";
import { planLimits } from "../access.ts";

export type EmailReservation = { allowed: true } | { allowed: false; reason: string };

/**
 * Counts `recipients` emails against the organization's cap for the hour before now (by the
 * database's clock) if they fit, in a transaction of its own; otherwise counts nothing and says why.
 */
export async function reserveOrganizationEmail(em: EntityManager, config: CoreConfig, organizationId: string, recipients: number): Promise<EmailReservation> {
  return em.fork().transactional(async (tx) => {
    const query = inTransaction(tx);
    const organization = await query.one(sql`select plan from organizations where id = ${organizationId} for no key update`, row({ plan: text }));
    if (!organization) return { allowed: false, reason: "refused: the organization no longer exists" };
    const limit = planLimits(config, organization.plan).emailsPerHour;
    await query.run(sql`delete from organization_emails where organization_id = ${organizationId} and sent_at <= now() - interval '1 hour'`);
    const sum = await query.one(sql`select coalesce(sum(recipients), 0) as used from organization_emails where organization_id = ${organizationId}`, row({ used: int }));
    const used = sum?.used ?? 0;
    if (used + recipients > limit) {
      return {
        allowed: false,
        reason: `refused: the organization's email cap is reached (its ${organization.plan} plan allows ${limit} emails an hour, each recipient counting one; ${used} sent in the last hour, this one has ${recipients})`,
      };
    }
    await query.run(sql`insert into organization_emails (organization_id, sent_at, recipients) values (${organizationId}, now(), ${recipients})`);
    return { allowed: true };
  });
}
