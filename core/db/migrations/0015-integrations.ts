import { Migration } from "@mikro-orm/migrations";

/**
 * Integrations (issue 15): Discord channels, signed webhooks and email recipients of an
 * organization. Credentials (a webhook's secret and URL, a Discord webhook URL) are sealed under
 * the key-encryption key, as the signing keys are; the row keeps only what may be shown.
 */
export class Migration0015Integrations extends Migration {
  override name = "0015_integrations";

  override async up(): Promise<void> {
    this.addSql(
      `create table "integrations" ("id" uuid not null, "organization_id" uuid not null, "kind" varchar(16) not null, "name" varchar(80) not null, "enabled" boolean not null default true, "display_url" varchar(2048) not null default '', "recipients" jsonb not null, "secret_prefix" varchar(16) not null default '', "sealed_ciphertext" bytea not null, "sealed_iv" bytea not null, "sealed_tag" bytea not null, "kek_id" varchar(32) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "integrations_organization_id_index" on "integrations" ("organization_id");`);
    this.addSql(
      `alter table "integrations" add constraint "integrations_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "integrations" add constraint "integrations_kind_check" check ("kind" in ('discord', 'webhook', 'email'));`);
  }
}
