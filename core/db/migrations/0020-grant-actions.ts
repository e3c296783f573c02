import { Migration } from "@mikro-orm/migrations";

/**
 * Finer server access (issue 16):
 * - `access_grants` carry the actions they allow and optional constraints: an expiry, a number of
 *   acting uses, a duration after first use. Grants made before keep working as they did: they
 *   get every action and no constraint.
 * - `access_requests`: a member asks for a grant; an owner or admin approves (possibly narrowed)
 *   or denies. At most one pending request per member and server (a partial unique index).
 */
export class Migration0020GrantActions extends Migration {
  override name = "0020_grant_actions";

  override async up(): Promise<void> {
    this.addSql(
      `alter table "access_grants" add column "actions" text[] not null default '{view,console_read,console_command,manage_players,sign_in_verification}', add column "expires_at" timestamptz null, add column "max_uses" int null, add column "duration_seconds" int null, add column "uses" int not null default 0, add column "first_used_at" timestamptz null;`,
    );
    this.addSql(`alter table "access_grants" alter column "actions" drop default;`);
    this.addSql(
      `create table "access_requests" ("id" uuid not null, "organization_id" uuid not null, "server_id" uuid not null, "user_id" uuid not null, "actions" text[] not null, "expires_at" timestamptz null, "max_uses" int null, "duration_seconds" int null, "reason" varchar(500) not null default '', "status" varchar(16) not null, "decided_at" timestamptz null, "decided_by_user_id" uuid null, "decided_by_email" varchar(254) null, "decision_reason" varchar(500) null, "access_grant_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "access_requests" add constraint "access_requests_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "access_requests" add constraint "access_requests_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "access_requests" add constraint "access_requests_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(`create index "access_requests_organization_newest_index" on "access_requests" ("organization_id", "created_at" desc, "id" desc);`);
    this.addSql(`create unique index "access_requests_pending_unique" on "access_requests" ("server_id", "user_id") where "status" = 'pending';`);
  }
}
