import { Migration } from "@mikro-orm/migrations";

/**
 * `alert_match()` runs once per statement that writes activity events, over the rows it wrote (a
 * transition table), instead of once per row: the same deliveries, in the same transaction, but
 * one plpgsql call and one insert-select for a batch of events. The activity writer puts the events
 * of many concurrent calls in one statement, and the per-row trigger was about a third of that
 * statement's cost in PostgreSQL, with or without any alert rule.
 */
export class Migration0028AlertMatchPerStatement extends Migration {
  override name = "0028_alert_match_per_statement";

  override async up(): Promise<void> {
    this.addSql(`drop trigger "activity_events_alert_match" on "activity_events";`);
    this.addSql(`drop function "alert_match"();`);
    this.addSql(`create function "alert_match"() returns trigger language plpgsql as $$
begin
  insert into "alert_deliveries" ("id", "rule_id", "organization_id", "integration_id", "event_id", "next_attempt_at", "created_at")
  select gen_random_uuid(), r."id", r."organization_id", t."integration_id", e."id", e."created_at", e."created_at"
  from "written_events" e
  join "alert_rules" r on r."organization_id" = e."organization_id" and r."enabled"
  cross join lateral (
    select ri."integration_id" from "alert_rule_integrations" ri where ri."rule_id" = r."id"
    union all select null::uuid where r."notify_dashboard"
  ) t
  where (r."server_id" is null or r."server_id" = e."server_id")
    and (jsonb_array_length(r."kinds") = 0 or r."kinds" @> jsonb_build_array(e."kind"))
    and (jsonb_array_length(r."severities") = 0 or r."severities" @> jsonb_build_array(e."severity"));
  return null;
end $$;`);
    this.addSql(
      `create trigger "activity_events_alert_match" after insert on "activity_events" referencing new table as "written_events" for each statement execute function "alert_match"();`,
    );
  }
}
