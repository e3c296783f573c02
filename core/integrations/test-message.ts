/** The message testIntegration sends: says who asked, from which organization, to which integration. */
import { randomUUID } from "node:crypto";
import type { Organization } from "../db/entities.ts";
import type { Integration } from "../db/integration-entities.ts";
import type { UserCaller } from "../context.ts";
import type { OutgoingMessage } from "./payloads.ts";

export function testMessage(organization: Organization, integration: Integration, caller: UserCaller, now: Date): OutgoingMessage {
  return {
    id: `msg_${randomUUID().replaceAll("-", "")}`,
    type: "integration.test",
    title: `Test message for "${integration.name}"`,
    text: `${caller.user.email} sent this test from the organization ${organization.name} (${organization.slug}). If you can read it, the integration works.`,
    severity: "info",
    occurredAt: now,
    data: {
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      integration: { id: integration.id, kind: integration.kind, name: integration.name },
      requestedBy: { userId: caller.user.id, email: caller.user.email },
    },
  };
}
