import { Migration } from "@mikro-orm/migrations";
import { redactUrl } from "../../outbound/redact-url.ts";

/**
 * Webhook URLs shown redacted: until now a webhook integration's `display_url`, and the `url` in
 * its `integration.created`/`integration.updated` events, held the full URL, whose path or query
 * often carries the receiver's token. They are rewritten to the redacted form that new rows get
 * (`redactUrl`); the full URL stays only in the sealed credentials. Discord rows already showed
 * their URL without its token and are left as they are.
 */
export class Migration0025RedactedWebhookUrls extends Migration {
  override name = "0025_redacted_webhook_urls";

  override async up(): Promise<void> {
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
