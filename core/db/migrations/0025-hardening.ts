import { Migration } from "@mikro-orm/migrations";

/**
 * The redaction as it stood when this migration was written (core/outbound/redact-url.ts then):
 * kept here, not imported, so that a later change to how URLs are shown cannot change what this
 * migration did to rows that were already migrated, or does to rows migrated later.
 */
function redactUrlAsOf0025(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "…";
  }
  let path = url.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // Kept encoded.
  }
  const tail = path
    .replace(/\/+$/, "")
    .slice(-4)
    .replace(/^[/…]+/, "");
  return `${url.protocol}//${url.host}/${tail ? `…${tail}` : ""}`;
}

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
      await this.execute(`update "integrations" set "display_url" = ? where "id" = ?`, [redactUrlAsOf0025(row.display_url), row.id]);
    }
    const events = (await this.execute(
      `select "id", "details"->>'url' as "url" from "activity_events" where "action" like 'integration.%' and "details"->>'kind' = 'webhook' and "details"->>'url' is not null`,
    )) as Array<{ id: string; url: string }>;
    for (const event of events) {
      await this.execute(`update "activity_events" set "details" = jsonb_set("details", '{url}', to_jsonb(?::text)) where "id" = ?`, [
        redactUrlAsOf0025(event.url),
        event.id,
      ]);
    }
  }
}
