/** The ocelot suites' core: acme with its cast, a server, and small daily limits on the free plan. */
import type { Client } from "@connectrpc/connect";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { OcelotService } from "../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast, type Account } from "../support/fixtures.ts";

export const config = {
  ...testConfig,
  plans: { ...testConfig.plans, free: { servers: 3, gameOAuthClients: 2, notes: 5, assistantQueriesPerDay: 10, assistantToolActionsPerDay: 6 } },
};

export interface OcelotFixture {
  t: TestCore;
  cast: AcmeCast;
  server: string;
  api(who: Account): Client<typeof OcelotService>;
  /** Plain SQL on the suite's database. */
  sql<T = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  /** The organization's activity actions about the assistant, newest first. */
  actions(prefix?: string): Promise<Array<{ action: string; severity: number; kind: number; details: Record<string, string> }>>;
}

export async function startOcelotFixture(): Promise<OcelotFixture> {
  const t = await startTestCore(config);
  const cast = await acmeWithMembers(t);
  const server = (await t.client(ServersService, { session: cast.owner.token }).createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT })).server!.id;
  return {
    t,
    cast,
    server,
    api: (who) => t.client(OcelotService, { session: who.token }),
    sql: (text, values = []) => t.orm.em.fork().getConnection().execute(text, values as never),
    async actions(prefix = "ocelot") {
      const { events } = await t.client(ActivityService, { session: cast.owner.token }).listOrganizationActivity({ organizationSlug: "acme", action: prefix, limit: 200 });
      return events.map((e) => ({ action: e.action, severity: e.severity, kind: e.kind, details: e.details }));
    },
  };
}
