import { Migration } from "@mikro-orm/migrations";

/**
 * `verified`: a platform admin knows who runs the organization. Only its Game OAuth clients get
 * an authorization error as a direct redirect to their redirect URI; any other client's users see
 * an Outpost page naming the destination first, so the issuer's origin is not an open redirector
 * for anyone who signs up and registers a client (RFC 9700 §4.11.2). Existing organizations start
 * unverified.
 */
export class Migration0012OrganizationVerified extends Migration {
  override name = "0012_organization_verified";

  override async up(): Promise<void> {
    this.addSql(`alter table "organizations" add column "verified" boolean not null default false;`);
  }
}
