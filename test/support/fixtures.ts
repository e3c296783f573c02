/** People and organizations that many suites start from. */
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { Transport } from "@connectrpc/connect";
import { createClient } from "@connectrpc/connect";
import type { TestCore } from "./core.ts";
import type { TestOutpost } from "./outpost.ts";

export type Account = { token: string; userId: string; email: string };

/**
 * Marks the address verified through core's path for `outpost user verify-email` (what the
 * mailed link does), on a test core or a whole test Outpost.
 */
export async function verifyEmail(on: TestCore | TestOutpost, email: string): Promise<void> {
  const transport: Transport = "outpost" in on ? on.outpost.runtime.core.transport() : on.core.transport();
  await createClient(IdentityService, transport).markEmailVerified({ email });
}

/**
 * Brings `who` into the organization as a new person comes in: their address verified, invited by
 * `by` (an owner or admin), accepting the invitation.
 */
export async function joinOrganization(t: TestCore, by: Pick<Account, "token">, organizationSlug: string, who: Account, role: Role): Promise<void> {
  await verifyEmail(t, who.email);
  const orgs = (a: Pick<Account, "token">) => t.client(OrganizationsService, { session: a.token });
  const { token } = await orgs(by).inviteMember({ organizationSlug, email: who.email, role });
  await orgs(who).acceptInvitation({ token });
}

/**
 * On a whole test Outpost: the account of `email` verifies its address (the operator's CLI path)
 * and accepts the invitation `token` through the HTTP API, with a key issued for it. Its user id.
 */
export async function acceptOnOutpost(t: TestOutpost, email: string, token: string): Promise<string> {
  await verifyEmail(t, email);
  const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
  const { key } = await identity.issueApiKey({ email, name: "accepts an invitation" });
  const res = await fetch(`${t.baseUrl}/api/http/organizations/acceptInvitation`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  const body = (await res.json()) as { member?: { userId: string } };
  if (res.status !== 200 || !body.member) throw new Error(`accepting the invitation failed: ${res.status} ${JSON.stringify(body)}`);
  return body.member.userId;
}

export interface AcmeCast {
  owner: Account;
  admin: Account;
  member: Account;
  /** Belongs to "elsewhere", not to "acme". */
  outsider: Account;
}

/**
 * Signs up owner@, admin@, member@ and outsider@example.com, every address verified; the owner
 * creates "acme" (named `name`) with the admin and the member in it (invited, and accepting), and
 * the outsider creates "elsewhere".
 */
export async function acmeWithMembers(t: TestCore, name = "Acme"): Promise<AcmeCast> {
  const owner = await t.signUp("owner@example.com");
  const admin = await t.signUp("admin@example.com");
  const member = await t.signUp("member@example.com");
  const outsider = await t.signUp("outsider@example.com");
  for (const who of [owner, outsider]) await verifyEmail(t, who.email);
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  await orgs(owner).createOrganization({ name, slug: "acme" });
  await joinOrganization(t, owner, "acme", admin, Role.ADMIN);
  await joinOrganization(t, owner, "acme", member, Role.MEMBER);
  await orgs(outsider).createOrganization({ name: "Elsewhere", slug: "elsewhere" });
  return { owner, admin, member, outsider };
}
