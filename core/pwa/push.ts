/**
 * Sending Web Push messages: `web-push` only builds each request (RFC 8291 aes128gcm payload
 * encryption, RFC 8292 VAPID Authorization header), and a {@link PushPost} given by the
 * composition root sends it, so the outbound guard (https only, no private addresses, no
 * redirects, capped size and time) is the deployment's one, not a second HTTP client here.
 */
import type { OutboundSender } from "../outbound/sender.ts";
import webPush from "web-push";
import type { Logger } from "pino";
import type { Orm } from "../db/orm.ts";
import type { Clock } from "../clock.ts";
import type { Statements } from "../db/sql.ts";
import type { SqlRunner } from "../db/sql.ts";
import type { VapidKeys } from "./vapid-keys.ts";
import { deleteGoneSubscription, listSubscriptions, markDelivered, type SubscriptionRow } from "./push-queries.ts";

/**
 * Posts one push request. Resolves to the push service's status, or to an error (refused target,
 * timeout, connection failure); it never throws and never follows a redirect.
 */
export type PushPost = (url: string, request: { headers: Record<string, string>; body: Buffer }) => Promise<{ status: number } | { error: string }>;

/** What core needs for Web Push (built in the composition root, in CoreDeps.push). */
export interface PushDeps {
  /** The VAPID `sub` claim: VAPID_SUBJECT, a mailto: or https: URL. */
  subject: string;
  vapid: VapidKeys;
  post: PushPost;
}

/** What the service worker shows (public/sw.js reads these fields). */
export interface PushMessage {
  title: string;
  body: string;
  /** A path of the dashboard to open when the notification is clicked, e.g. "/app/account/security". */
  url?: string;
  /** Notifications with the same tag replace each other on the device. */
  tag?: string;
}

export interface PushOptions {
  /** How long the push service keeps it for an offline device; 24 h otherwise. */
  ttlSeconds?: number;
  urgency?: "very-low" | "low" | "normal" | "high";
}

/** One subscription's result. */
export interface PushOutcome {
  subscriptionId: string;
  endpoint: string;
  delivered: boolean;
  /** The push service's HTTP status; 0 when none came. */
  status: number;
  /** Why it was not delivered; "" when it was. */
  error: string;
  /** The push service said the subscription is gone (404, 410): it was deleted. */
  removed: boolean;
}

/** A payload must fit one 4096-byte aes128gcm record: 86 bytes of header, 16 of tag, 1 of padding delimiter. */
export const maxPushPayloadBytes = 4096 - 86 - 16 - 1;

/** Push requests sent through the outbound sender: SSRF-checked, no redirects, bounded in time and size. */
export function pushPostThrough(outbound: OutboundSender): PushPost {
  return async (url, { headers, body }) => {
    const outcome = await outbound.send({ url, method: "POST", headers, body });
    return outcome.status ? { status: outcome.status } : { error: `the push service: ${outcome.error}` };
  };
}

/** The request for one subscription, headers as strings (fetch sets Content-Length itself). */
function buildRequest(push: PushDeps, keys: { publicKey: string; privateKey: string }, row: SubscriptionRow, payload: Buffer, options: PushOptions) {
  const details = webPush.generateRequestDetails({ endpoint: row.endpoint, keys: { p256dh: row.p256dh, auth: row.auth } }, payload, {
    vapidDetails: { subject: push.subject, publicKey: keys.publicKey, privateKey: keys.privateKey },
    TTL: options.ttlSeconds ?? 86_400,
    urgency: options.urgency ?? "normal",
    contentEncoding: "aes128gcm",
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(details.headers)) if (name.toLowerCase() !== "content-length") headers[name] = String(value);
  return { headers, body: details.body };
}

function outcomeOf(row: SubscriptionRow, answer: { status: number } | { error: string }): PushOutcome {
  const base = { subscriptionId: row.id, endpoint: row.endpoint, removed: false };
  if ("error" in answer) return { ...base, delivered: false, status: 0, error: answer.error };
  const { status } = answer;
  if (status >= 200 && status < 300) return { ...base, delivered: true, status, error: "" };
  const error =
    status === 404 || status === 410
      ? "the push service says the subscription is gone"
      : status === 413
        ? "the push service refused the message as too large"
        : status === 429
          ? "the push service is limiting this sender; try again later"
          : status >= 300 && status < 400
            ? "the push service answered with a redirect, which is not followed"
            : `the push service answered ${status}`;
  return { ...base, delivered: false, status, error };
}

/** Sends to one subscription and records what happened (delivered, or deleted as gone). */
async function sendOne(
  query: SqlRunner,
  push: PushDeps,
  keys: { publicKey: string; privateKey: string },
  row: SubscriptionRow,
  payload: Buffer,
  options: PushOptions,
  clock: Clock,
): Promise<PushOutcome> {
  let answer: { status: number } | { error: string };
  try {
    const request = buildRequest(push, keys, row, payload, options);
    answer = await push.post(row.endpoint, request);
  } catch (error) {
    answer = { error: `the push request cannot be made: ${(error as Error).message}` };
  }
  const outcome = outcomeOf(row, answer);
  if (outcome.delivered) await markDelivered(query, row.id, clock.now());
  if (outcome.status === 404 || outcome.status === 410) outcome.removed = await deleteGoneSubscription(query, row.id, row.p256dh);
  return outcome;
}

export interface SendPushDeps {
  orm: Orm;
  statements: Statements;
  clock: Clock;
  logger: Logger;
  push: PushDeps;
}

/**
 * Sends `message` to every push subscription of the user, at once, and returns one outcome per
 * subscription (none when the user has none). Never throws for a push service's answer: a 404 or
 * 410 deletes that subscription, any other failure is only reported (callers that retry decide
 * when). Throws for a message over {@link maxPushPayloadBytes} once encoded as JSON.
 */
export async function sendPushToUser(deps: SendPushDeps, userId: string, message: PushMessage, options: PushOptions = {}): Promise<PushOutcome[]> {
  const payload = Buffer.from(JSON.stringify(message));
  if (payload.length > maxPushPayloadBytes) throw new Error(`a push message is at most ${maxPushPayloadBytes} bytes as JSON, not ${payload.length}`);
  const query = deps.statements.on(deps.orm.em.fork());
  const rows = await listSubscriptions(query, userId);
  if (!rows.length) return [];
  const keys = await deps.push.vapid.get(query, deps.clock.now());
  const outcomes = await Promise.all(rows.map((row) => sendOne(query, deps.push, keys, row, payload, options, deps.clock)));
  for (const o of outcomes) if (!o.delivered) deps.logger.info({ subscriptionId: o.subscriptionId, status: o.status, removed: o.removed }, "push not delivered");
  return outcomes;
}
