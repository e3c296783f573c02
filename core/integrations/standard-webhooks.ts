/**
 * Webhook signatures per the Standard Webhooks specification (standardwebhooks.com): each delivery
 * carries `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature` =
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, under the secret's bytes (the base64 after
 * `whsec_`). The receiver recomputes it, compares in constant time and refuses old timestamps.
 */
import { createHmac, randomBytes } from "node:crypto";
import { secretPrefixes } from "../../contract/secrets.ts";

/** A new signing secret: `whsec_` and 24 random bytes in base64 (the spec asks for 24 to 64). */
export function issueWebhookSecret(): string {
  return `${secretPrefixes.webhookSecret}${randomBytes(24).toString("base64")}`;
}

/** What a list shows of a secret to recognise it: `whsec_` and four characters. */
export function webhookSecretPrefix(secret: string): string {
  return secret.slice(0, secretPrefixes.webhookSecret.length + 4);
}

/** `v1,<signature>` of the delivery. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(secretPrefixes.webhookSecret.length), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

/** The three headers of a signed delivery (and its JSON content type). */
export function webhookHeaders(secret: string, id: string, sentAt: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(sentAt.getTime() / 1000);
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signWebhook(secret, id, timestamp, body),
  };
}
