/** The ocelot suites' core: acme with its cast, a server, and small daily limits on the free plan. */
import type { Client } from "@connectrpc/connect";
import { authorizeToolAction, type Authorization } from "../../core/ocelot/gate.ts";
import { applyTokenStep } from "../../core/ocelot/token-steps.ts";
import type { UserCaller } from "../../core/context.ts";
import { DomainError } from "../../core/errors.ts";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { OcelotService } from "../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast, type Account } from "../support/fixtures.ts";

export const config = {
  ...testConfig,
  plans: { ...testConfig.plans, free: { servers: 3, gameOAuthClients: 2, notes: 5, assistantQueriesPerDay: 10, assistantToolActionsPerDay: 6, emailsPerHour: 30 } },
};

/**
 * The gate's steps after judging, as core's own caller (the chat router) takes them for `who`:
 * they are not served over Connect. A refusal is thrown as the ConnectError a client would see.
 */
export interface GateSteps {
  authorize(req: { tool: string; serverId?: string; conversationId?: string; argumentsSummary?: string }): Promise<Authorization>;
  confirm(executionToken: string, allow: boolean): Promise<void>;
  complete(tool: string, executionToken: string, succeeded: boolean, resultSummary?: string): Promise<void>;
  release(tool: string, executionToken: string): Promise<void>;
}

/** `who` as core's auth interceptor would make them the caller. */
export function callerOf(who: Account): UserCaller {
  return { kind: "user", user: { id: who.userId, email: who.email, name: "", platformAdmin: false }, credential: { kind: "session", id: "test", expiresAt: null } };
}

const asConnect = (error: unknown) => {
  throw error instanceof DomainError ? error.toConnectError() : error;
};

function gateSteps(t: TestCore, who: Account, organizationSlug: string): GateSteps {
  const caller = callerOf(who);
  const { statements } = t.deps;
  const step = (executionToken: string, s: Parameters<typeof applyTokenStep>[4]) =>
    applyTokenStep(t.orm.em.fork(), statements, caller, { organizationSlug, executionToken }, s).catch(asConnect);
  return {
    authorize: (req) =>
      t.orm.em
        .fork()
        .transactional(async (tx) => {
          const granted = await authorizeToolAction(statements.db(tx), t.deps, caller, { organizationSlug, conversationId: "", argumentsSummary: "", ...req });
          await tx.flush();
          return granted;
        })
        .catch(asConnect),
    confirm: (token, allow) => step(token, { kind: "confirm", allow }),
    complete: (tool, token, succeeded, resultSummary = "") => step(token, { kind: "complete", tool, succeeded, resultSummary }),
    release: (tool, token) => step(token, { kind: "release", tool }),
  };
}

export interface OcelotFixture {
  t: TestCore;
  cast: AcmeCast;
  server: string;
  api(who: Account): Client<typeof OcelotService>;
  gate(who: Account, organizationSlug?: string): GateSteps;
  /** Plain SQL on the suite's database. */
  sql<T = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  /** The organization's activity actions about the assistant, newest first. */
  actions(prefix?: string): Promise<Array<{ action: string; severity: number; kind: number; details: Record<string, string> }>>;
}

export async function startOcelotFixture(): Promise<OcelotFixture> {
  const t = await startTestCore(config);
  const cast = await acmeWithMembers(t);
  const server = (await t.client(ServersService, { session: cast.owner.token }).createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT }))
    .server!.id;
  return {
    t,
    cast,
    server,
    api: (who) => t.client(OcelotService, { session: who.token }),
    gate: (who, organizationSlug = "acme") => gateSteps(t, who, organizationSlug),
    sql: (text, values = []) =>
      t.orm.em
        .fork()
        .getConnection()
        .execute(text, values as never),
    async actions(prefix = "ocelot") {
      const { events } = await t
        .client(ActivityService, { session: cast.owner.token })
        .listOrganizationActivity({ organizationSlug: "acme", action: prefix, limit: 200 });
      return events.map((e) => ({ action: e.action, severity: e.severity, kind: e.kind, details: e.details }));
    },
  };
}
