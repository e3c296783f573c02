/**
 * The persistent model. Secrets are never stored: only their SHA-256 (hex) and a short display
 * prefix. Column names are snake_case; timestamps are timestamptz.
 */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

const id = () =>
  p
    .uuid()
    .primary()
    .onCreate(() => randomUUID());
const createdAt = () => p.datetime().onCreate(() => new Date());
/** An activity event's time: when the database wrote it, to the millisecond (what page cursors carry). */
const activityCreatedAtDefault = "date_trunc('milliseconds', clock_timestamp())";

export const User = defineEntity({
  name: "User",
  tableName: "users",
  properties: {
    id: id(),
    /** Lower-cased on write, so uniqueness is case-insensitive. */
    email: p.string().length(254).unique(),
    name: p.string().length(80).default(""),
    passwordHash: p.text().lazy(),
    platformAdmin: p.boolean().default(false),
    /**
     * When the account proved it receives mail at `email` (a mailed link, or the operator's CLI);
     * null: unverified. Invitations and email alert recipients match verified addresses only.
     */
    emailVerifiedAt: p.datetime().nullable(),
    createdAt: createdAt(),
  },
});
export type User = InferEntity<typeof User>;

export const Session = defineEntity({
  name: "Session",
  tableName: "sessions",
  properties: {
    id: id(),
    user: () => p.manyToOne(User).deleteRule("cascade"),
    tokenHash: p.string().length(64).unique(),
    createdAt: createdAt(),
    expiresAt: p.datetime().index(),
    /** Written at most once a minute (core/auth/sessions.ts), for the idle timeout. */
    lastUsedAt: p.datetime(),
    /** The client IP and user agent the edge saw at sign-in, when it said. */
    ip: p.string().length(64).nullable(),
    userAgent: p.string().length(512).nullable(),
  },
});
export type Session = InferEntity<typeof Session>;

export const ApiKey = defineEntity({
  name: "ApiKey",
  tableName: "api_keys",
  properties: {
    id: id(),
    user: () => p.manyToOne(User).deleteRule("cascade").index(),
    name: p.string().length(64),
    prefix: p.string().length(16),
    secretHash: p.string().length(64).unique(),
    createdAt: createdAt(),
    expiresAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
    /** Set for an organization API key: it acts with its user's current role there, and nowhere else. */
    organization: () => p.manyToOne(Organization).deleteRule("cascade").nullable().index(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;

export const Organization = defineEntity({
  name: "Organization",
  tableName: "organizations",
  properties: {
    id: id(),
    slug: p.string().length(40).unique(),
    name: p.string().length(80),
    plan: p.string().length(40),
    /** Set by a platform admin: its Game OAuth clients may receive authorization errors by direct redirect. */
    verified: p.boolean().default(false),
    createdAt: createdAt(),
  },
});
export type Organization = InferEntity<typeof Organization>;

export const Membership = defineEntity({
  name: "Membership",
  tableName: "memberships",
  properties: {
    id: id(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    user: () => p.manyToOne(User).deleteRule("cascade").index(),
    /** "owner" | "admin" | "member" */
    role: p.string().length(16),
    createdAt: createdAt(),
  },
  uniques: [{ properties: ["organization", "user"], name: "memberships_organization_user_unique" }],
});
export type Membership = InferEntity<typeof Membership>;

export const Server = defineEntity({
  name: "Server",
  tableName: "servers",
  properties: {
    id: id(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade").index(),
    name: p.string().length(64),
    /** "minecraft" | "hytale" */
    game: p.string().length(16),
    agentKeyHash: p.string().length(64).unique(),
    agentKeyPrefix: p.string().length(16),
    /** Set while an agent stream holds the server; readers also check `lastSeenAt` (see core/agents/presence.ts). */
    online: p.boolean().default(false),
    lastSeenAt: p.datetime().nullable(),
    playerCount: p.integer().default(0),
    /** "online" | "proxy" | "offline" | "insecure", as the agent last reported; null before its first Hello. */
    playerAuth: p.string().length(16).nullable(),
    /** Whether the agent that last said Hello can run console commands. */
    agentConsole: p.boolean().default(false),
    /** What the agent that last said Hello lets Outpost do with the server's files: "off" | "read-only" | "on". */
    agentFiles: p.string().length(16).default("off"),
    /** Whether the agent that last said Hello runs the server's process (start, stop, restart, kill). */
    agentLifecycle: p.boolean().default(false),
    agentVersion: p.string().length(64).nullable(),
    /** The agent stream that last said Hello: only it may take the server offline. */
    agentConnectionId: p.uuid().nullable(),
    /** The run of the agent that last said Hello (Hello.boot_id); null for an agent that names none. */
    agentBootId: p.uuid().nullable(),
    /** The game's own state as the agent that runs it reported it ("starting" … "crashed"); null when none did. */
    gameState: p.string().length(16).nullable(),
    gameStateDetail: p.string().length(200).nullable(),
    gameStateAt: p.datetime().nullable(),
    /** The stream that reported it: the state holds only while that stream holds the server. */
    gameStateConnectionId: p.uuid().nullable(),
    /** The last presence event in the activity log: "connected" | "disconnected". */
    presenceEvent: p.string().length(16).nullable(),
    createdAt: createdAt(),
  },
});
export type Server = InferEntity<typeof Server>;

/**
 * A player online on a server, as the stream holding it last reported (core/agents/players.ts):
 * replaced with each report, cleared when the server goes offline, deleted with the server.
 */
export const ServerPlayer = defineEntity({
  name: "ServerPlayer",
  tableName: "server_players",
  properties: {
    server: () => p.manyToOne(Server).primary().deleteRule("cascade"),
    uuid: p.uuid().primary(),
    name: p.string().length(32),
    /** When the agent first reported the player in this stay of theirs. */
    since: p.datetime(),
  },
});
export type ServerPlayer = InferEntity<typeof ServerPlayer>;

export const AccessGrant = defineEntity({
  name: "AccessGrant",
  tableName: "access_grants",
  properties: {
    id: id(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade").index(),
    server: () => p.manyToOne(Server).deleteRule("cascade"),
    user: () => p.manyToOne(User).deleteRule("cascade").index(),
    createdAt: createdAt(),
    /** What it allows (core/grant-rules.ts `serverActions`), always with "view". */
    actions: p.array(),
    expiresAt: p.datetime().nullable(),
    /** Acting calls it allows; `uses` counts them (core/access-queries.ts spends them atomically). */
    maxUses: p.integer().nullable(),
    /** How long it lasts after `firstUsedAt`. */
    durationSeconds: p.integer().nullable(),
    /** Where its file actions reach: selectors under the server's directory (core/file-paths.ts); empty: everywhere. */
    filePaths: p.array(),
    uses: p.integer().default(0),
    /** Its first use of any action, viewing included. */
    firstUsedAt: p.datetime().nullable(),
  },
  uniques: [{ properties: ["server", "user"], name: "access_grants_server_user_unique" }],
});
export type AccessGrant = InferEntity<typeof AccessGrant>;

export const ActivityEvent = defineEntity({
  name: "ActivityEvent",
  tableName: "activity_events",
  properties: {
    id: id(),
    /** Null for events about an account alone (sign-in, API keys). */
    organizationId: p.uuid().nullable(),
    /** "user" | "agent" | "system" */
    actorKind: p.string().length(16),
    actorUserId: p.uuid().nullable(),
    actorEmail: p.string().length(254).nullable(),
    actorApiKeyId: p.uuid().nullable(),
    action: p.string().length(64),
    targetType: p.string().length(32),
    targetId: p.string().length(64),
    /** Kept as plain ids, not foreign keys, so the log outlives what it speaks of. */
    serverId: p.uuid().nullable(),
    details: p.json<Record<string, string>>().default("{}"),
    /** From the action, by core/activity/kinds.ts: "status", "access", "security", … */
    kind: p.string().length(16),
    /** "info" | "warning" | "error", from the action too. */
    severity: p.string().length(8),
    /** Set once, by the first owner or admin who acknowledges the event. */
    acknowledgedAt: p.datetime().nullable(),
    acknowledgedByUserId: p.uuid().nullable(),
    acknowledgedByEmail: p.string().length(254).nullable(),
    /** The database's clock (migration 0025's default), never this process's: see core/activity/record.ts. */
    createdAt: p.datetime().defaultRaw(activityCreatedAtDefault),
  },
  indexes: [
    { properties: ["organizationId", "createdAt"], name: "activity_events_organization_created_idx" },
    { properties: ["actorUserId", "createdAt"], name: "activity_events_actor_created_idx" },
  ],
});
export type ActivityEvent = InferEntity<typeof ActivityEvent>;

export const entities = [User, Session, ApiKey, Organization, Membership, Server, ServerPlayer, AccessGrant, ActivityEvent];
