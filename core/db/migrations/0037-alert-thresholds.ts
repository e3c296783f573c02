import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 30 (alert thresholds): a rule may watch a condition on its servers' statistics or game
 * state instead of matching events (`alert_rules.threshold`: the condition, its value and its
 * minutes). Every minute one instance checks each such rule on each server it covers
 * (core/alerts/thresholds.ts); `alert_threshold_states` holds the pairs where it holds now, so a
 * rule sends once as it starts to hold (`server.threshold_crossed`) and once as it stops
 * (`server.threshold_cleared`). `alert_match()` (0028's) routes those two events to their own rule
 * only, and keeps other rules from matching them. `servers.memory_limit_bytes` is the memory
 * limit the agent last reported, for the memory threshold.
 */
export class Migration0037AlertThresholds extends Migration {
  override name = "0037_alert_thresholds";

  override async up(): Promise<void> {
    this.addSql(`alter table "alert_rules" add column "threshold" jsonb null;`);
    this.addSql(`alter table "servers" add column "memory_limit_bytes" bigint null;`);
    this.addSql(
      `create table "alert_threshold_states" ("rule_id" uuid not null, "server_id" uuid not null, "since" timestamptz not null, "observed" double precision null, primary key ("rule_id", "server_id"));`,
    );
    this.addSql(
      `alter table "alert_threshold_states" add constraint "alert_threshold_states_rule_id_foreign" foreign key ("rule_id") references "alert_rules" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "alert_threshold_states" add constraint "alert_threshold_states_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`,
    );
    this.addSql(`create or replace function "alert_match"() returns trigger language plpgsql as $$
begin
  insert into "alert_deliveries" ("id", "rule_id", "organization_id", "integration_id", "event_id", "next_attempt_at", "created_at")
  select gen_random_uuid(), r."id", r."organization_id", t."integration_id", e."id", e."created_at", e."created_at"
  from "written_events" e
  join "alert_rules" r on r."organization_id" = e."organization_id" and r."enabled"
  cross join lateral (
    select ri."integration_id" from "alert_rule_integrations" ri where ri."rule_id" = r."id"
    union all select null::uuid where r."notify_dashboard"
  ) t
  where case when e."action" in ('server.threshold_crossed', 'server.threshold_cleared')
          then e."details"->>'ruleId' = r."id"::text
          else r."threshold" is null
            and (r."server_id" is null or r."server_id" = e."server_id")
            and (jsonb_array_length(r."kinds") = 0 or r."kinds" @> jsonb_build_array(e."kind"))
            and (jsonb_array_length(r."severities") = 0 or r."severities" @> jsonb_build_array(e."severity"))
        end;
  return null;
end $$;`);
  }
}
