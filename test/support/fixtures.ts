/** People and organizations that many suites start from. */
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { TestCore } from "./core.ts";

export type Account = { token: string; userId: string; email: string };

export interface AcmeCast {
  owner: Account;
  admin: Account;
  member: Account;
  /** Belongs to "elsewhere", not to "acme". */
  outsider: Account;
}

/**
 * Signs up owner@, admin@, member@ and outsider@example.com; the owner creates "acme" (named
 * `name`) with the admin and the member in it, and the outsider creates "elsewhere".
 */
export async function acmeWithMembers(t: TestCore, name = "Acme"): Promise<AcmeCast> {
  const owner = await t.signUp("owner@example.com");
  const admin = await t.signUp("admin@example.com");
  const member = await t.signUp("member@example.com");
  const outsider = await t.signUp("outsider@example.com");
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  await orgs(owner).createOrganization({ name, slug: "acme" });
  await orgs(owner).addMember({ organizationSlug: "acme", email: admin.email, role: Role.ADMIN });
  await orgs(owner).addMember({ organizationSlug: "acme", email: member.email, role: Role.MEMBER });
  await orgs(outsider).createOrganization({ name: "Elsewhere", slug: "elsewhere" });
  return { owner, admin, member, outsider };
}
