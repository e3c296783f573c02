/**
 * Integrations (issue 15): the outside services an organization sends messages to. What is a
 * credential (a webhook's signing secret, a Discord webhook URL, whose token is in its path) is
 * stored only sealed under the key-encryption key (core/integrations/sealed-secrets.ts); what is
 * shown (a webhook's URL, Discord's address with its token hidden, email recipients) is plain.
 */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./entities.ts";

export const integrationKinds = ["discord", "webhook", "email"] as const;
export type IntegrationKindName = (typeof integrationKinds)[number];

export const Integration = defineEntity({
  name: "Integration",
  tableName: "integrations",
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    organization: () => p.manyToOne(Organization).deleteRule("cascade").index(),
    kind: p.string().length(16).$type<IntegrationKindName>(),
    name: p.string().length(80),
    enabled: p.boolean().default(true),
    /** Webhook: its URL. Discord: the address with the token hidden. Email: empty. */
    displayUrl: p.string().length(2048).default(""),
    /** Email: the recipients. */
    recipients: p.json<string[]>(),
    /** Webhook: the start of the signing secret, for recognising it. */
    secretPrefix: p.string().length(16).default(""),
    /** The credentials (JSON: Discord's `url`, a webhook's `url` and `secret`), AES-256-GCM under the KEK. */
    sealedCiphertext: p.blob(),
    sealedIv: p.blob(),
    sealedTag: p.blob(),
    /** Which key-encryption key sealed them (an id, not the key). */
    kekId: p.string().length(32),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Integration = InferEntity<typeof Integration>;

export const integrationEntities = [Integration];
