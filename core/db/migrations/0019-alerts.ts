import { Migration } from "@mikro-orm/migrations";

/**
 * Alerts (issue 15):
 * - `alert_rules`: what an organization's rule matches (server, kinds, severities as JSON arrays;
 *   empty = all), whether it notifies the dashboard, its quiet hours and its hourly cap.
 * - `alert_rule_integrations`: the integrations a rule sends to (deleting either deletes the link).
 * - `alert_deliveries`: the outbox, one row per matched event and target (an integration, or the
 *   dashboard when `integration_id` is null). `next_attempt_at` is when it is due; claiming it
 *   moves that past the lease, so a row whose instance died is due again once the lease ends.
 * - `alert_match()`: a trigger on `activity_events` that writes the deliveries of the event's
 *   matching enabled rules, in the event's own transaction and in one indexed statement, whichever
 *   way the event was written (`recordActivity`'s unit of work or `appendActivity`'s statement).
 */
export class Migration0019Alerts extends Migration {
  override name = "0019_alerts";

  override async up(): Promise<void> {
    this.addSql(
      `create table "alert_rules" ("id" uuid not null, "organization_id" uuid not null, "name" varchar(80) not null, "enabled" boolean not null default true, "server_id" uuid null, "kinds" jsonb not null, "severities" jsonb not null, "notify_dashboard" boolean not null default false, "quiet_start" varchar(5) null, "quiet_end" varchar(5) null, "quiet_time_zone" varchar(64) null, "max_per_hour" int not null default 20, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "alert_rules" add constraint "alert_rules_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "alert_rules" add constraint "alert_rules_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`);
    this.addSql(`create index "alert_rules_organization_enabled_index" on "alert_rules" ("organization_id") where "enabled";`);
    this.addSql(`create index "alert_rules_server_id_index" on "alert_rules" ("server_id");`);
    this.addSql(`create table "alert_rule_integrations" ("rule_id" uuid not null, "integration_id" uuid not null, primary key ("rule_id", "integration_id"));`);
    this.addSql(
      `alter table "alert_rule_integrations" add constraint "alert_rule_integrations_rule_id_foreign" foreign key ("rule_id") references "alert_rules" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "alert_rule_integrations" add constraint "alert_rule_integrations_integration_id_foreign" foreign key ("integration_id") references "integrations" ("id") on delete cascade;`,
    );
    this.addSql(`create index "alert_rule_integrations_integration_id_index" on "alert_rule_integrations" ("integration_id");`);
    this.addSql(
      `create table "alert_deliveries" ("id" uuid not null, "rule_id" uuid not null, "organization_id" uuid not null, "integration_id" uuid null, "event_id" uuid not null, "status" varchar(16) not null default 'pending', "attempts" int not null default 0, "last_status" int not null default 0, "last_error" varchar(1000) not null default '', "next_attempt_at" timestamptz not null, "lease_until" timestamptz null, "delivered_at" timestamptz null, "summary_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "alert_deliveries" add constraint "alert_deliveries_rule_id_foreign" foreign key ("rule_id") references "alert_rules" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "alert_deliveries" add constraint "alert_deliveries_integration_id_foreign" foreign key ("integration_id") references "integrations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "alert_deliveries" add constraint "alert_deliveries_event_id_foreign" foreign key ("event_id") references "activity_events" ("id") on delete cascade;`,
    );
    this.addSql(`create index "alert_deliveries_due_index" on "alert_deliveries" ("next_attempt_at") where "status" = 'pending';`);
    this.addSql(`create index "alert_deliveries_organization_newest_index" on "alert_deliveries" ("organization_id", "created_at" desc, "id" desc);`);
    this.addSql(`create index "alert_deliveries_rule_sent_index" on "alert_deliveries" ("rule_id", "integration_id", "delivered_at");`);
    this.addSql(`create index "alert_deliveries_event_id_index" on "alert_deliveries" ("event_id");`);
    this.addSql(`create function "alert_match"() returns trigger language plpgsql as $$
begin
  if new.organization_id is null then return null; end if;
  insert into "alert_deliveries" ("id", "rule_id", "organization_id", "integration_id", "event_id", "next_attempt_at", "created_at")
  select gen_random_uuid(), r."id", r."organization_id", t."integration_id", new."id", new."created_at", new."created_at"
  from "alert_rules" r
  cross join lateral (
    select ri."integration_id" from "alert_rule_integrations" ri where ri."rule_id" = r."id"
    union all select null::uuid where r."notify_dashboard"
  ) t
  where r."organization_id" = new."organization_id" and r."enabled"
    and (r."server_id" is null or r."server_id" = new."server_id")
    and (jsonb_array_length(r."kinds") = 0 or r."kinds" @> jsonb_build_array(new."kind"))
    and (jsonb_array_length(r."severities") = 0 or r."severities" @> jsonb_build_array(new."severity"));
  return null;
end $$;`);
    this.addSql(`create trigger "activity_events_alert_match" after insert on "activity_events" for each row execute function "alert_match"();`);
  }
}
