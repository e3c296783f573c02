/**
 * The Game OAuth client suites' setting: a core, "acme" on the pro plan with its owner, admin,
 * member and an outsider (whose "elsewhere" has a server of its own), and two servers of acme.
 */
import { createHash } from "node:crypto";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { VerifierPolicy } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { acmeWithMembers } from "../support/fixtures.ts";
import { startTestCore, type TestCore } from "../support/core.ts";

export type Account = { token: string; userId: string; email: string };

export const sha256 = (value: string) => createHash("sha256").update(value, "utf8").digest("hex");
export const callback = "https://app.example.com/callback";

export interface ClientsSetting {
  t: TestCore;
  owner: Account;
  admin: Account;
  member: Account;
  outsider: Account;
  survival: string;
  creative: string;
  elsewhere: string;
}

export async function startClientsSetting(): Promise<ClientsSetting> {
  const t = await startTestCore();
  const { owner, admin, member, outsider } = await acmeWithMembers(t);
  await t.orm.em.fork().getConnection().execute(`update organizations set plan = 'pro' where slug = 'acme'`);
  const servers = (who: Account) => t.client(ServersService, { session: who.token });
  const survival = (await servers(owner).createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT })).server!.id;
  const creative = (await servers(owner).createServer({ organizationSlug: "acme", name: "Creative", game: Game.HYTALE })).server!.id;
  const elsewhere = (await servers(outsider).createServer({ organizationSlug: "elsewhere", name: "Theirs", game: Game.MINECRAFT })).server!.id;
  return { t, owner, admin, member, outsider, survival, creative, elsewhere };
}

let counter = 0;
/** A fresh organization on the pro plan (room for many clients), owned by `owner`. */
export async function proOrganization(t: TestCore, owner: Account): Promise<string> {
  const slug = `pro-${++counter}`;
  await t.client(OrganizationsService, { session: owner.token }).createOrganization({ name: "Pro", slug });
  await t.orm.em.fork().getConnection().execute(`update organizations set plan = 'pro' where slug = ?`, [slug]);
  return slug;
}

/** A client any server of the organization may verify for. */
export const anyServer = (slug: string, redirectUris: string[] = [callback]) => ({
  organizationSlug: slug,
  name: "My App",
  redirectUris,
  verifierPolicy: VerifierPolicy.ANY_SERVER,
});
