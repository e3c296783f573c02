/** Entities to the contract's messages. */
import { gameStates } from "./agents/game-state.ts";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ApiKeySchema, UserSchema, type ApiKey as ApiKeyMessage, type User as UserMessage } from "../gen/outpost/auth/v1/resources_pb.js";
import {
  AccessGrantSchema,
  MemberSchema,
  OrganizationSchema,
  type AccessGrant as AccessGrantMessage,
  type Member as MemberMessage,
  type Organization as OrganizationMessage,
} from "../gen/outpost/organizations/v1/resources_pb.js";
import {
  FilesMode,
  GameState,
  Game,
  OnlinePlayerSchema,
  PlayerAuth,
  ServerSchema,
  type OnlinePlayer as OnlinePlayerMessage,
  type Server as ServerMessage,
} from "../gen/outpost/servers/v1/resources_pb.js";
import { actionsToProto, grantEndsAt, grantState, limitsToProto, stateToProto } from "./grant-rules.ts";
import type { AccessGrant, ApiKey, Membership, Organization, Server, User } from "./db/entities.ts";
import type { CallerUser } from "./context.ts";
import { roleToProto } from "./roles.ts";
import { isOnline } from "./agents/presence.ts";
import type { StoredPlayer } from "./agents/players.ts";
import { signInAllowed, type TrustSettings } from "./agents/player-trust.ts";
import { frozenReason, type Freeze } from "./servers/frozen.ts";

const ts = (date: Date | null | undefined) => (date ? timestampFromDate(date) : undefined);

export function userToProto(user: User | (CallerUser & { createdAt?: Date })): UserMessage {
  return create(UserSchema, {
    id: user.id,
    email: user.email,
    name: user.name,
    platformAdmin: user.platformAdmin,
    createdAt: ts(user.createdAt),
    emailVerified: "emailVerifiedAt" in user && user.emailVerifiedAt != null,
  });
}

export function apiKeyToProto(key: ApiKey): ApiKeyMessage {
  return create(ApiKeySchema, {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    createdAt: ts(key.createdAt),
    expiresAt: ts(key.expiresAt),
    lastUsedAt: ts(key.lastUsedAt),
    organizationSlug: key.organization?.slug ?? "",
  });
}

export function organizationToProto(organization: Organization, role: string): OrganizationMessage {
  return create(OrganizationSchema, {
    id: organization.id,
    slug: organization.slug,
    name: organization.name,
    plan: organization.plan,
    role: roleToProto(role),
    createdAt: ts(organization.createdAt),
    verified: organization.verified,
  });
}

/** A membership with its user loaded. */
export function memberToProto(membership: Membership): MemberMessage {
  return create(MemberSchema, {
    userId: membership.user.id,
    email: membership.user.email,
    name: membership.user.name,
    role: roleToProto(membership.role),
    createdAt: ts(membership.createdAt),
    emailVerified: membership.user.emailVerifiedAt != null,
  });
}

/** A grant with its state at `now`. */
export function accessGrantToProto(grant: AccessGrant, now: Date): AccessGrantMessage {
  const facts = {
    actions: grant.actions ?? [],
    expiresAt: grant.expiresAt ?? null,
    maxUses: grant.maxUses ?? null,
    durationSeconds: grant.durationSeconds ?? null,
    filePaths: grant.filePaths ?? [],
    uses: grant.uses ?? 0,
    firstUsedAt: grant.firstUsedAt ?? null,
  };
  return create(AccessGrantSchema, {
    id: grant.id,
    userId: grant.user.id,
    serverId: grant.server.id,
    createdAt: ts(grant.createdAt),
    actions: actionsToProto(facts.actions),
    constraints: limitsToProto(facts),
    uses: facts.uses,
    firstUsedAt: ts(grant.firstUsedAt),
    state: stateToProto[grantState(facts, now)],
    endsAt: ts(grantEndsAt(facts)),
  });
}

const games: Record<string, Game> = { minecraft: Game.MINECRAFT, hytale: Game.HYTALE };

export function gameToProto(game: string): Game {
  return games[game] ?? Game.UNSPECIFIED;
}

export function gameFromProto(game: Game): string {
  const found = Object.keys(games).find((name) => games[name] === game);
  if (!found) throw new Error(`game ${game} has no stored form`);
  return found;
}

/** The stored forms of the player-authentication modes an agent reports. */
export const playerAuthModes: Readonly<Record<string, PlayerAuth>> = {
  online: PlayerAuth.ONLINE,
  offline: PlayerAuth.OFFLINE,
  insecure: PlayerAuth.INSECURE,
  proxy: PlayerAuth.PROXY,
};

/** What an agent lets Outpost do with its server's files, as stored (servers.agent_files) and in the contract. */
const filesModes: Record<string, FilesMode> = { off: FilesMode.OFF, "read-only": FilesMode.READ_ONLY, on: FilesMode.ON };

/** The stored name of Hello's files mode; unspecified (an agent older than files) is off. */
export function filesModeName(mode: FilesMode): string {
  return Object.keys(filesModes).find((name) => filesModes[name] === mode) ?? "off";
}

/**
 * The server as readers see it at `now`: an agent silent for too long means offline; whether it
 * can sign players in as the deployment's trust settings decide.
 */
/** The server as the API shows it; `freeze` says whether it is frozen (core/servers/frozen.ts). */
export function serverToProto(server: Server, now: Date, settings: TrustSettings, freeze?: Freeze): ServerMessage {
  const online = isOnline(server, now);
  // The state holds while the stream that reported it holds the server.
  const gameStateShown = online && !!server.gameState && server.gameStateConnectionId === server.agentConnectionId;
  return create(ServerSchema, {
    id: server.id,
    organizationId: server.organization.id,
    name: server.name,
    game: gameToProto(server.game),
    online,
    lastSeenAt: ts(server.lastSeenAt),
    agentKeyPrefix: server.agentKeyPrefix,
    playerCount: online ? server.playerCount : 0,
    createdAt: ts(server.createdAt),
    playerAuth: (server.playerAuth && playerAuthModes[server.playerAuth]) || PlayerAuth.UNSPECIFIED,
    agentVersion: server.agentVersion ?? "",
    signInAllowed: signInAllowed(server.playerAuth, settings),
    consoleAvailable: online && server.agentConsole,
    files: online ? (filesModes[server.agentFiles] ?? FilesMode.OFF) : FilesMode.OFF,
    gameState: gameStateShown ? (gameStates[server.gameState!] ?? GameState.UNSPECIFIED) : GameState.UNSPECIFIED,
    gameStateDetail: gameStateShown ? (server.gameStateDetail ?? "") : "",
    lifecycleAvailable: online && server.agentLifecycle,
    frozen: freeze !== undefined,
    frozenReason: freeze ? frozenReason(freeze) : "",
  });
}

export function onlinePlayerToProto(player: StoredPlayer): OnlinePlayerMessage {
  return create(OnlinePlayerSchema, { uuid: player.uuid, name: player.name, since: ts(player.since) });
}
