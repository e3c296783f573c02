/** A Game OAuth world for the suites: an organization, servers with agents, clients, sign-ins. */
import assert from "node:assert/strict";
import type { Client } from "@connectrpc/connect";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { GameOAuthService, type AuthorizationSession, type StartAuthorizationRequest } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { AdminService } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { VerifierPolicy } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent } from "../../agent/client.ts";
import type { CoreConfig } from "../../core/deps.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";

export const config = {
  ...testConfig,
  plans: { free: { servers: 20, gameOAuthClients: 20, notes: 50, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 } },
};
export const redirectUri = "https://app.example.com/callback";

export const binding = () => randomBytes(32).toString("hex");
export const player = (name = "Steve") => ({ name, uuid: randomUUID() });

export function pkce(method: "S256" | "plain" = "S256") {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = method === "S256" ? createHash("sha256").update(verifier).digest("base64url") : verifier;
  return { verifier, challenge, method };
}

export interface World {
  t: TestCore;
  session: string;
  organizationId: string;
  agents: Agent[];
  oauth(core?: TestCore): Client<typeof GameOAuthService>;
  createServer(name: string, options?: { organizationSlug?: string; connect?: boolean; playerAuth?: PlayerAuth }): Promise<{ id: string; key: string; agent?: Agent }>;
  createClient(options?: { name?: string; policy?: "any" | { servers: string[] }; organizationSlug?: string }): Promise<{ clientId: string; clientSecret: string }>;
  start(req: Omit<Partial<StartAuthorizationRequest>, "$typeName" | "$unknown">): Promise<{ session: AuthorizationSession; binding: string }>;
  /** A platform admin marks the organization verified (or not). */
  setVerified(organizationSlug: string, verified: boolean): Promise<void>;
  close(): Promise<void>;
}

function gameOAuthClient(t: TestCore) {
  return t.client(GameOAuthService);
}

/** `settings` override the suites' core configuration (e.g. allowInsecureGameServers). */
export async function createWorld(settings: Partial<CoreConfig> = {}): Promise<World> {
  const t = await startTestCore({ ...config, ...settings });
  const { token: session } = await t.signUp(`owner-${randomUUID()}@example.com`);
  const organizations = t.client(OrganizationsService, { session });
  const org = await organizations.createOrganization({ name: "Acme", slug: "acme" });
  await organizations.createOrganization({ name: "Other", slug: "other" });
  const agents: Agent[] = [];
  let adminSession: string | undefined;
  const world: World = {
    t,
    session,
    organizationId: org.organization!.id,
    agents,
    oauth: (core = t) => gameOAuthClient(core),
    async createServer(name, options = {}) {
      const res = await t.client(ServersService, { session }).createServer({ organizationSlug: options.organizationSlug ?? "acme", name, game: Game.MINECRAFT });
      const server = { id: res.server!.id, key: res.agentKey, agent: undefined as Agent | undefined };
      if (options.connect !== false) {
        const playerAuth = options.playerAuth ?? PlayerAuth.ONLINE;
        const agent = startAgent({ url: "http://in-process", key: res.agentKey, game: Game.MINECRAFT, playerAuth, reconnect: false, transport: t.core.transport() });
        agents.push(agent);
        await agent.connected();
        server.agent = agent;
      }
      return server;
    },
    async createClient(options = {}) {
      const policy = options.policy ?? "any";
      const res = await organizations.createGameOAuthClient({
        organizationSlug: options.organizationSlug ?? "acme",
        name: options.name ?? "Demo App",
        redirectUris: [redirectUri, "https://app.example.com/cb?tenant=1"],
        verifierPolicy: policy === "any" ? VerifierPolicy.ANY_SERVER : VerifierPolicy.SELECTED_SERVERS,
        allowedServerIds: policy === "any" ? [] : policy.servers,
      });
      return { clientId: res.client!.clientId, clientSecret: res.clientSecret };
    },
    async start(req) {
      const browser = req.browserBindingHash ?? binding();
      const res = await gameOAuthClient(t).startAuthorization({
        responseType: "code",
        redirectUri,
        state: "st-1",
        scope: "openid profile",
        ...req,
        browserBindingHash: browser,
      });
      if (res.outcome.case !== "session") assert.fail(`expected a session: ${res.outcome.case} ${res.outcome.value?.error}`);
      return { session: res.outcome.value as AuthorizationSession, binding: browser };
    },
    async setVerified(organizationSlug, verified) {
      if (!adminSession) {
        const email = `root-${randomUUID()}@example.com`;
        const identity = t.client(IdentityService);
        await identity.createUser({ email, password: "a long admin password", name: "Root", platformAdmin: true });
        adminSession = (await identity.signIn({ email, password: "a long admin password" })).sessionToken;
      }
      await t.client(AdminService, { session: adminSession }).setOrganizationVerified({ organizationSlug, verified });
    },
    async close() {
      await Promise.all(agents.splice(0).map((a) => a.stop()));
      await t.close();
    },
  };
  return world;
}

/** The login code of a session, as an agent reports it. */
export const command = (session: AuthorizationSession) => `/outpost login ${session.loginCode}`;

/**
 * A player's in-game sign-in on `agent`: the login command, which must ask them to confirm, then
 * their confirmation. Resolves with the confirmation's reply.
 */
export async function playAndConfirm(agent: Agent, who: { name: string; uuid: string }, session: AuthorizationSession, text = command(session)) {
  const claimed = await agent.playCommand(who, text);
  assert.ok(claimed.confirmation, `expected a confirmation prompt, got: ${claimed.message}`);
  return agent.confirm(who);
}

/** The code in a completed session's redirect URL. */
export function codeOf(session: AuthorizationSession): string {
  const code = new URL(session.redirectUrl).searchParams.get("code");
  assert.ok(code, `no code in ${session.redirectUrl}`);
  return code;
}
