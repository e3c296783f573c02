/** The activity of a change made inside an organization, as the organization methods record it. */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { UserCaller } from "../context.ts";
import type { OrganizationAccess } from "../access.ts";
import { recordActivity, type ActivityFacts } from "../activity/record.ts";

/** Records what the caller did in the organization they reached through `access`, in the transaction `tx`. */
export function recordInOrganization(tx: EntityManager, caller: UserCaller, access: OrganizationAccess, facts: Omit<ActivityFacts, "organizationId">): void {
  recordActivity(tx, caller, { ...facts, organizationId: access.organization.id });
}
