/** Access requests (issue 16): a member asks for a server grant; an owner or admin decides. */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization, Server, User } from "./entities.ts";

export const AccessRequest = defineEntity({
  name: "AccessRequest",
  tableName: "access_requests",
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    server: () => p.manyToOne(Server).deleteRule("cascade"),
    user: () => p.manyToOne(User).deleteRule("cascade"),
    /** The actions asked for, always with "view". */
    actions: p.array(),
    expiresAt: p.datetime().nullable(),
    maxUses: p.integer().nullable(),
    durationSeconds: p.integer().nullable(),
    /** The file paths asked for (core/file-paths.ts selectors); empty: everywhere. */
    filePaths: p.array(),
    reason: p.string().length(500).default(""),
    /** "pending" | "approved" | "denied" | "cancelled"; one pending per member and server. */
    status: p.string().length(16),
    decidedAt: p.datetime().nullable(),
    /** Plain ids and emails, so the record outlives the account that decided. */
    decidedByUserId: p.uuid().nullable(),
    decidedByEmail: p.string().length(254).nullable(),
    decisionReason: p.string().length(500).nullable(),
    accessGrantId: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type AccessRequest = InferEntity<typeof AccessRequest>;

export const accessRequestEntities = [AccessRequest];
