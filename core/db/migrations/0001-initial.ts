import { Migration } from "@mikro-orm/migrations";

/** Accounts, sessions, API keys, organizations, members, servers, grants, activity. */
export class Migration0001Initial extends Migration {
  override name = "0001_initial";

  override async up(): Promise<void> {
    this.addSql(
      `create table "users" ("id" uuid not null, "email" varchar(254) not null, "name" varchar(80) not null default '', "password_hash" text not null, "platform_admin" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);

    this.addSql(
      `create table "sessions" ("id" uuid not null, "user_id" uuid not null, "token_hash" varchar(64) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "sessions" add constraint "sessions_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "sessions_user_id_index" on "sessions" ("user_id");`);
    this.addSql(`create index "sessions_expires_at_index" on "sessions" ("expires_at");`);

    this.addSql(
      `create table "api_keys" ("id" uuid not null, "user_id" uuid not null, "name" varchar(64) not null, "prefix" varchar(16) not null, "secret_hash" varchar(64) not null, "created_at" timestamptz not null, "expires_at" timestamptz null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "api_keys_user_id_index" on "api_keys" ("user_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_secret_hash_unique" unique ("secret_hash");`);

    this.addSql(
      `create table "organizations" ("id" uuid not null, "slug" varchar(40) not null, "name" varchar(80) not null, "plan" varchar(40) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "organizations" add constraint "organizations_slug_unique" unique ("slug");`);

    this.addSql(
      `create table "memberships" ("id" uuid not null, "organization_id" uuid not null, "user_id" uuid not null, "role" varchar(16) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "memberships_user_id_index" on "memberships" ("user_id");`);
    this.addSql(`alter table "memberships" add constraint "memberships_organization_user_unique" unique ("organization_id", "user_id");`);

    this.addSql(
      `create table "servers" ("id" uuid not null, "organization_id" uuid not null, "name" varchar(64) not null, "game" varchar(16) not null, "agent_key_hash" varchar(64) not null, "agent_key_prefix" varchar(16) not null, "online" boolean not null default false, "last_seen_at" timestamptz null, "player_count" int not null default 0, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "servers_organization_id_index" on "servers" ("organization_id");`);
    this.addSql(`alter table "servers" add constraint "servers_agent_key_hash_unique" unique ("agent_key_hash");`);

    this.addSql(
      `create table "access_grants" ("id" uuid not null, "organization_id" uuid not null, "server_id" uuid not null, "user_id" uuid not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "access_grants_organization_id_index" on "access_grants" ("organization_id");`);
    this.addSql(`create index "access_grants_user_id_index" on "access_grants" ("user_id");`);
    this.addSql(`alter table "access_grants" add constraint "access_grants_server_user_unique" unique ("server_id", "user_id");`);

    this.addSql(
      `create table "activity_events" ("id" uuid not null, "organization_id" uuid null, "actor_kind" varchar(16) not null, "actor_user_id" uuid null, "actor_email" varchar(254) null, "actor_api_key_id" uuid null, "action" varchar(64) not null, "target_type" varchar(32) not null, "target_id" varchar(64) not null, "server_id" uuid null, "details" jsonb not null default '{}', "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "activity_events_organization_created_idx" on "activity_events" ("organization_id", "created_at");`);
    this.addSql(`create index "activity_events_actor_created_idx" on "activity_events" ("actor_user_id", "created_at");`);

    this.addSql(`alter table "sessions" add constraint "sessions_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(
      `alter table "memberships" add constraint "memberships_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "memberships" add constraint "memberships_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(
      `alter table "servers" add constraint "servers_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "access_grants" add constraint "access_grants_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "access_grants" add constraint "access_grants_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`);
    this.addSql(`alter table "access_grants" add constraint "access_grants_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
  }
}
