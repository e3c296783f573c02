import { Migration } from "@mikro-orm/migrations";

/**
 * Ocelot, the assistant (issue 17):
 * - `ocelot_configs`: an organization's settings, one row once someone saved them (no row: the
 *   defaults). `version` is bumped by every change (optimistic concurrency); the two switches keep
 *   who set them and when, break-glass also when it turns itself off.
 * - `ocelot_daily_usage`: questions and tool-action weight per organization per UTC day, counted
 *   by conditional updates (`… where used + n <= cap`), so concurrent callers never pass a cap.
 * - `ocelot_tool_actions`: the gate's tokens (SHA-256 of each), bound to the organization, the
 *   caller and the tool; `status` moves authorized → confirmed → completed, or ends released,
 *   denied, expired or stopped. `usage_day` is the day whose quota the action holds.
 */
export class Migration0024Ocelot extends Migration {
  override name = "0024_ocelot";

  override async up(): Promise<void> {
    this.addSql(
      `create table "ocelot_configs" ("organization_id" uuid not null, "enabled" boolean not null, "console_read" boolean not null, "console_command" boolean not null, "players" boolean not null, "knowledge_read" boolean not null, "knowledge_write" boolean not null, "server_lifecycle" boolean not null, "files" boolean not null, "daily_query_cap" int not null default 0, "response_style" varchar(16) not null default 'concise', "custom_instructions" varchar(4000) not null default '', "emergency_stop" boolean not null default false, "emergency_stop_by" uuid null, "emergency_stop_at" timestamptz null, "break_glass" boolean not null default false, "break_glass_by" uuid null, "break_glass_at" timestamptz null, "break_glass_expires_at" timestamptz null, "version" int not null default 0, "updated_at" timestamptz not null, primary key ("organization_id"));`,
    );
    this.addSql(
      `alter table "ocelot_configs" add constraint "ocelot_configs_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "ocelot_configs" add constraint "ocelot_configs_emergency_stop_by_foreign" foreign key ("emergency_stop_by") references "users" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "ocelot_configs" add constraint "ocelot_configs_break_glass_by_foreign" foreign key ("break_glass_by") references "users" ("id") on delete set null;`,
    );
    this.addSql(
      `create table "ocelot_daily_usage" ("organization_id" uuid not null, "day" date not null, "queries" int not null default 0, "tool_actions" int not null default 0, primary key ("organization_id", "day"));`,
    );
    this.addSql(
      `alter table "ocelot_daily_usage" add constraint "ocelot_daily_usage_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "ocelot_tool_actions" ("id" uuid not null, "organization_id" uuid not null, "user_id" uuid not null, "tool" varchar(64) not null, "server_id" uuid null, "conversation_id" varchar(200) not null default '', "arguments_summary" varchar(1000) not null default '', "token_hash" char(64) not null, "weight" int not null, "usage_day" date not null, "requires_confirmation" boolean not null, "status" varchar(16) not null default 'authorized', "outcome" varchar(16) null, "result_summary" varchar(1000) not null default '', "expires_at" timestamptz not null, "created_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "ocelot_tool_actions" add constraint "ocelot_tool_actions_token_hash_unique" unique ("token_hash");`);
    this.addSql(
      `alter table "ocelot_tool_actions" add constraint "ocelot_tool_actions_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "ocelot_tool_actions" add constraint "ocelot_tool_actions_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "ocelot_tool_actions" add constraint "ocelot_tool_actions_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`,
    );
    this.addSql(
      `create index "ocelot_tool_actions_open_index" on "ocelot_tool_actions" ("organization_id", "expires_at") where "status" in ('authorized', 'confirmed');`,
    );
    this.addSql(`create index "ocelot_tool_actions_user_id_index" on "ocelot_tool_actions" ("user_id");`);
    this.addSql(`create index "ocelot_tool_actions_server_id_index" on "ocelot_tool_actions" ("server_id");`);
  }
}
