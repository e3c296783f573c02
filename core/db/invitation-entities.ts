/** Invitations to join an organization by email (core/organizations/invitation-methods.ts). */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization, User } from "./entities.ts";

export const Invitation = defineEntity({
  name: "Invitation",
  tableName: "invitations",
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Lower-cased, as users' emails are: only the account with this email may accept. */
    email: p.string().length(254),
    /** "admin" | "member" */
    role: p.string().length(16),
    /** SHA-256 of the link's secret; the secret itself is shown once. */
    tokenHash: p.string().length(64).unique(),
    invitedBy: () => p.manyToOne(User).deleteRule("set null").nullable(),
    /** Set by the database's clock (now()), as are the checks against it. */
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    acceptedAt: p.datetime().nullable(),
    acceptedBy: () => p.manyToOne(User).deleteRule("set null").nullable(),
    revokedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ["organization", "email", "createdAt"], name: "invitations_organization_email_index" }],
});
export type Invitation = InferEntity<typeof Invitation>;

export const invitationEntities = [Invitation];
