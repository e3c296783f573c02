/**
 * What each kind of integration receives for one message: Discord's webhook JSON (an embed, no
 * mentions), the webhook's JSON envelope `{type, timestamp, data}` (docs/alerts.md), an email's
 * subject and text. Alerts and the test message share this one shape. A message's link is a
 * dashboard path; what goes out carries it as an absolute URL on ACCOUNT_BASE_URL (publicUrl).
 */
import type { CoreConfig } from "../deps.ts";
import { publicUrl } from "../public-url.ts";

/** What the payloads need of the configuration: the public base URL links are built on. */
export type PayloadConfig = Pick<CoreConfig, "accountBaseUrl">;

export type Severity = "info" | "warning" | "error";

/** One message to an integration. */
export interface OutgoingMessage {
  /** Unique per message and stable across retries: a webhook's `webhook-id`, the idempotency id. */
  id: string;
  /** What happened, e.g. "integration.test", "alert.fired": the envelope's `type`. */
  type: string;
  title: string;
  /** A few lines for a person. */
  text: string;
  severity: Severity;
  occurredAt: Date;
  /** Where to look in the dashboard, if anywhere: a dashboard path (e.g. "/app/o/acme/activity"). */
  link?: string;
  /** The webhook envelope's `data`: the facts, for a program. */
  data: Record<string, unknown>;
}

const colors: Record<Severity, number> = { info: 0x3b82f6, warning: 0xf59e0b, error: 0xef4444 };

/**
 * Discord's execute-webhook body: one embed within Discord's limits; `allowed_mentions` empty so
 * no text pings anyone. Its `url` is absolute: Discord refuses the whole message otherwise.
 */
export function discordPayload(message: OutgoingMessage, config: PayloadConfig): string {
  return JSON.stringify({
    username: "Outpost",
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title: message.title.slice(0, 256),
        description: message.text.slice(0, 4096),
        color: colors[message.severity],
        timestamp: message.occurredAt.toISOString(),
        ...(message.link && { url: publicUrl(config, message.link) }),
        footer: { text: `Outpost · ${message.type}` },
      },
    ],
  });
}

/** The webhook body: the Standard Webhooks envelope. */
export function webhookPayload(message: OutgoingMessage): string {
  return JSON.stringify({ type: message.type, timestamp: message.occurredAt.toISOString(), data: message.data });
}

/** An email's subject and plain text; its "Open:" line is an absolute URL, for a mail client has no page to resolve a path against. */
export function emailContent(message: OutgoingMessage, config: PayloadConfig): { subject: string; text: string } {
  const lines = [message.text, "", `Severity: ${message.severity}`, `When: ${message.occurredAt.toISOString()}`];
  if (message.link) lines.push(`Open: ${publicUrl(config, message.link)}`);
  lines.push("", "— Outpost");
  return { subject: `[Outpost] ${message.title}`.replace(/[\r\n]+/g, " ").slice(0, 200), text: lines.join("\n") };
}
