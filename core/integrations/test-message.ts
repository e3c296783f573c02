/**
 * The message testIntegration sends: says who asked, from which organization, to which
 * integration. It links to the integrations page as an alert links to the activity log, so a test
 * goes through what a real alert's link does (a receiver that refuses the link refuses the test).
 */
import { randomUUID } from "node:crypto";
import { orgLink } from "../organizations/links.ts";
import type { Organization } from "../db/entities.ts";
import type { Integration } from "../db/integration-entities.ts";
import type { UserCaller } from "../context.ts";
import type { OutgoingMessage } from "./payloads.ts";

export function testMessage(organization: Organization, integration: Integration, caller: UserCaller, now: Date): OutgoingMessage {
  return {
    // A UUID, as an alert's id (its delivery's) is: `webhook-id` has one form (docs/alerts.md).
    id: randomUUID(),
    type: "integration.test",
    title: `Test message for "${integration.name}"`,
    text: `${caller.user.email} sent this test from the organization ${organization.name} (${organization.slug}). If you can read it, the integration works.`,
    severity: "info",
    occurredAt: now,
    link: orgLink(organization.slug, "/integrations"),
    data: {
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      integration: { id: integration.id, kind: integration.kind, name: integration.name },
      requestedBy: { userId: caller.user.id, email: caller.user.email },
    },
  };
}
