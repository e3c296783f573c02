import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 16 (finer access): invitations by email, stored with the hash of their link's secret and
 * closed once (accepted or revoked) by a conditional update; and organization API keys, which are
 * API keys tagged with the one organization they may be used for (deleted with it).
 */
export class Migration0021Invitations extends Migration {
  override name = "0021_invitations";

  override async up(): Promise<void> {
    this.addSql(
      `create table "invitations" ("id" uuid not null, "organization_id" uuid not null references "organizations" ("id") on delete cascade, "email" varchar(254) not null, "role" varchar(16) not null, "token_hash" varchar(64) not null, "invited_by_id" uuid null references "users" ("id") on delete set null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "accepted_at" timestamptz null, "accepted_by_id" uuid null references "users" ("id") on delete set null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "invitations" add constraint "invitations_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "invitations_organization_email_index" on "invitations" ("organization_id", "email", "created_at");`);
    this.addSql(`alter table "api_keys" add column "organization_id" uuid null references "organizations" ("id") on delete cascade;`);
    this.addSql(`create index "api_keys_organization_id_index" on "api_keys" ("organization_id");`);
  }
}
