/**
 * Sends one message to one integration, whatever its kind: Discord and webhooks through the
 * SSRF-checked outbound sender (a webhook signed per Standard Webhooks), email through the
 * deployment's SMTP server. Never throws for a failed delivery (nor for credentials the KEK cannot
 * open): the outcome says what happened and whether trying again later could help. Alert deliveries and testIntegration both come here.
 */
import type { CoreDeps } from "../deps.ts";
import type { Integration } from "../db/integration-entities.ts";
import type { OutboundFailure, OutboundOutcome } from "../outbound/sender.ts";
import { openCredentials, type IntegrationCredentials } from "./credentials.ts";
import { KeyEncryptionError } from "../keys/key-encryption.ts";
import { discordPayload, emailContent, webhookPayload, type OutgoingMessage } from "./payloads.ts";
import { webhookHeaders } from "./standard-webhooks.ts";
import { memberRecipients } from "./email-recipients.ts";
import { reserveOrganizationEmail } from "./email-cap.ts";

export interface DeliveryOutcome {
  ok: boolean;
  /** The target's HTTP status; 0 when none came (and for email). */
  httpStatus: number;
  /** For a person; "" when ok. */
  error: string;
  /** Why, for a program (HTTP kinds), or "smtp" for a refused or unreachable email. */
  failure?: OutboundFailure | "smtp";
  /** Whether a later attempt may succeed (timeouts, lost connections, 5xx, 429, SMTP trouble). */
  retryable: boolean;
  /** The answer's Retry-After, in seconds, when it gave one. */
  retryAfterSeconds?: number;
  durationMs: number;
  /**
   * Nothing was sent because a rule of Outpost's refused it (no recipient left who is a verified
   * member, the organization's hourly email cap): never retried, and listed as refused.
   */
  refused?: boolean;
}

export type DeliveryDeps = Pick<CoreDeps, "outbound" | "mailer" | "keyEncryptionKey" | "orm" | "config" | "statements">;

function retryAfter(outcome: OutboundOutcome): number | undefined {
  const raw = outcome.responseHeaders["retry-after"];
  const seconds = raw === undefined ? NaN : Number(raw);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

function fromHttp(outcome: OutboundOutcome): DeliveryOutcome {
  const retryable = outcome.failure === "timeout" || outcome.failure === "connection" || outcome.failure === "dns" || outcome.status === 429 || outcome.status >= 500;
  return {
    ok: outcome.ok,
    httpStatus: outcome.status,
    error: outcome.error,
    failure: outcome.failure,
    retryable: !outcome.ok && retryable,
    retryAfterSeconds: retryAfter(outcome),
    durationMs: outcome.durationMs,
  };
}

const refusal = (error: string): DeliveryOutcome => ({ ok: false, httpStatus: 0, error, failure: "refused", retryable: false, durationMs: 0, refused: true });

/**
 * Email goes only to those of the integration's recipients that are verified addresses of the
 * organization's members now (email-recipients.ts): one who left or is no longer verified is
 * dropped; with none left, the delivery is refused, and no retry can help until someone edits it.
 * Then it must fit in the organization's hourly email cap (email-cap.ts), or it is refused too.
 */
async function deliverEmail(deps: DeliveryDeps, integration: Integration, message: OutgoingMessage): Promise<DeliveryOutcome> {
  const to = await memberRecipients(deps.statements.on(deps.orm.em.fork()), integration.organization.id, integration.recipients);
  if (!to.length) return refusal(`refused: none of the recipients (${integration.recipients.join(", ")}) is a verified address of a member of the organization now`);
  const reserved = await reserveOrganizationEmail(deps.orm.em, deps.config, integration.organization.id, to.length);
  if (!reserved.allowed) return refusal(reserved.reason);
  const sent = await deps.mailer.send({ to, ...emailContent(message, deps.config) });
  return {
    ok: sent.ok,
    httpStatus: 0,
    error: sent.error,
    ...(!sent.ok && { failure: "smtp" as const }),
    retryable: !sent.ok && deps.mailer.configured,
    durationMs: sent.durationMs,
  };
}

/** Delivers `message` to `integration` now (enabled or not: the caller decides whether to send). */
export async function deliverToIntegration(deps: DeliveryDeps, integration: Integration, message: OutgoingMessage): Promise<DeliveryOutcome> {
  let credentials: IntegrationCredentials;
  try {
    credentials = openCredentials(deps.keyEncryptionKey(), integration);
  } catch (error) {
    if (!(error instanceof KeyEncryptionError)) throw error;
    // The operator's KEY_ENCRYPTION_KEY is not the one that sealed it: no retry helps until they fix that.
    return { ok: false, httpStatus: 0, error: error.message, failure: "refused", retryable: false, durationMs: 0 };
  }
  switch (integration.kind) {
    case "discord":
      return fromHttp(
        await deps.outbound.send({ url: credentials.url ?? "", headers: { "content-type": "application/json" }, body: discordPayload(message, deps.config) }),
      );
    case "webhook": {
      const body = webhookPayload(message);
      const headers = webhookHeaders(credentials.secret ?? "", message.id, new Date(), body);
      return fromHttp(await deps.outbound.send({ url: credentials.url ?? "", headers, body }));
    }
    case "email":
      return deliverEmail(deps, integration, message);
  }
}
