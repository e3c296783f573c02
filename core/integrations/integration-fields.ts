/**
 * An integration's target as the contract gives it (one of discord, webhook, email), checked
 * beyond the contract's rules: URLs by the outbound sender's own rules (https, no private or
 * loopback host; the addresses a name resolves to are checked again at each send), a Discord URL
 * must be a Discord webhook; and the record as the API shows it (no credential in it).
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  IntegrationKind,
  IntegrationSchema,
  type CreateIntegrationRequest,
  type Integration as IntegrationMessage,
} from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import type { Integration, IntegrationKindName } from "../db/integration-entities.ts";
import type { OutboundSender } from "../outbound/sender.ts";
import { fieldFail } from "../errors.ts";
import { redactUrl } from "../outbound/redact-url.ts";

export type Target = { kind: "discord"; url: string } | { kind: "webhook"; url: string } | { kind: "email"; recipients: string[] };

const kinds: Record<IntegrationKindName, IntegrationKind> = {
  discord: IntegrationKind.DISCORD,
  webhook: IntegrationKind.WEBHOOK,
  email: IntegrationKind.EMAIL,
};

const discordHosts = /^(?:(?:canary\.|ptb\.)?discord\.com|discordapp\.com)$/;
const discordPath = /^\/api\/(?:v\d+\/)?webhooks\/(\d{1,32})\/([\w-]{1,200})\/?$/;

/** The request's target, or undefined when the oneof is empty (an update that keeps it). */
export function targetOf(target: CreateIntegrationRequest["target"]): Target | undefined {
  switch (target.case) {
    case "discord":
      return { kind: "discord", url: target.value.url };
    case "webhook":
      return { kind: "webhook", url: target.value.url };
    case "email":
      return { kind: "email", recipients: target.value.recipients.map((r) => r.toLowerCase()) };
    default:
      return undefined;
  }
}

/**
 * Refuses a URL the sender would refuse, and a Discord URL that is not a Discord webhook (on
 * discord.com, unless local development allows any host). Returns what the list may show.
 */
export function checkTarget(target: Target, outbound: OutboundSender): { displayUrl: string } {
  if (target.kind === "email") return { displayUrl: "" };
  const problem = outbound.urlProblem(target.url);
  if (problem) throw fieldFail([{ field: target.kind, message: `url: ${problem}` }]);
  if (target.kind === "discord") {
    const url = new URL(target.url);
    if (!discordPath.test(url.pathname) || (!discordHosts.test(url.hostname) && !outbound.allowLocal)) {
      throw fieldFail([{ field: "discord", message: "url: must be a Discord webhook URL, like https://discord.com/api/webhooks/123/abc…" }]);
    }
  }
  return { displayUrl: redactUrl(target.url) };
}

export function integrationToProto(row: Integration): IntegrationMessage {
  return create(IntegrationSchema, {
    id: row.id,
    organizationId: row.organization.id,
    kind: kinds[row.kind] ?? IntegrationKind.UNSPECIFIED,
    name: row.name,
    enabled: row.enabled,
    url: row.displayUrl,
    recipients: [...row.recipients],
    secretPrefix: row.secretPrefix,
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  });
}
