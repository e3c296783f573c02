import { Migration } from "@mikro-orm/migrations";
import { redactUrl } from "../../outbound/redact-url.ts";

/**
 * Activity times from the database's clock: `activity_events.created_at` defaults to the
 * statement's time on the database (`clock_timestamp()`, to the millisecond, which is what the
 * page cursor carries), and Outpost no longer writes it, so events from instances whose clocks
 * differ still sort in the order they were written.
 *
 * Webhook URLs shown redacted: until now a webhook integration's `display_url`, and the `url` in
 * its `integration.created`/`integration.updated` events, held the full URL, whose path or query
 * often carries the receiver's token. They are rewritten to the redacted form that new rows get
 * (`redactUrl`); the full URL stays only in the sealed credentials. Discord rows already showed
 * their URL without its token and are left as they are.
 */
export class Migration0025Hardening extends Migration {
  override name = "0025_hardening";

  override async up(): Promise<void> {
    await this.execute(`alter table "activity_events" alter column "created_at" set default date_trunc('milliseconds', clock_timestamp())`);
    const integrations = (await this.execute(`select "id", "display_url" from "integrations" where "kind" = 'webhook'`)) as Array<{ id: string; display_url: string }>;
    for (const row of integrations) {
      await this.execute(`update "integrations" set "display_url" = ? where "id" = ?`, [redactUrl(row.display_url), row.id]);
    }
    const events = (await this.execute(
      `select "id", "details"->>'url' as "url" from "activity_events" where "action" like 'integration.%' and "details"->>'kind' = 'webhook' and "details"->>'url' is not null`,
    )) as Array<{ id: string; url: string }>;
    for (const event of events) {
      await this.execute(`update "activity_events" set "details" = jsonb_set("details", '{url}', to_jsonb(?::text)) where "id" = ?`, [redactUrl(event.url), event.id]);
    }
  }
}
