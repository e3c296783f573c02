import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startAgent, type Agent, type AgentOptions } from "../../agent/client.ts";
import { sweepPresence } from "../../core/agents/presence.ts";
import { acmeWithMembers, type Account } from "../support/fixtures.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { onPostgresServer } from "../support/database.ts";
import { rejectsWith } from "../support/errors.ts";
import { allActions } from "../support/grants.ts";

const config = {
  ...testConfig,
  plans: { free: { servers: 50, gameOAuthClients: 2, notes: 50, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 } },
};
const steve = { name: "Steve", uuid: "123e4567-e89b-12d3-a456-426614174000" };
const alex = { name: "Alex", uuid: "223e4567-e89b-12d3-a456-426614174000" };
const herobrine = { name: "Herobrine", uuid: "323e4567-e89b-12d3-a456-426614174000" };

/**
 * servers/listPlayers: the players an agent reports, stored so that any instance lists them, each
 * with when they were first reported; replaced only by the stream that holds the server, and gone
 * when the server goes offline.
 */
describe("servers: players online", function () {
  this.timeout(60_000);
  let t: TestCore;
  let owner: Account;
  let member: Account;
  let outsider: Account;
  const agents: Agent[] = [];
  const cores: TestCore[] = [];

  const servers = (who: Account, core = t) => core.client(ServersService, { session: who.token });
  const createServer = async (name: string) => {
    const res = await servers(owner).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT });
    return { id: res.server!.id, key: res.agentKey };
  };
  const sql = (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);
  const connect = (key: string, options: Partial<AgentOptions> & { core?: TestCore } = {}) => {
    const agent = startAgent({
      url: "http://in-process",
      key,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: false,
      transport: (options.core ?? t).core.transport(),
      ...options,
    });
    agents.push(agent);
    return agent;
  };
  const list = async (serverId: string, who = owner, core = t) =>
    (await servers(who, core).listPlayers({ serverId })).players.map((p) => ({ name: p.name, uuid: p.uuid, since: timestampDate(p.since!).getTime() }));
  /** Polls until the list holds exactly these names (in any order). */
  const until = async (serverId: string, names: string[], core = t) => {
    for (let i = 0; i < 100; i++) {
      const players = await list(serverId, owner, core);
      if (
        players
          .map((p) => p.name)
          .sort()
          .join() === [...names].sort().join()
      )
        return players;
      await sleep(20);
    }
    assert.fail(`the players never became ${names.join(", ")}: ${JSON.stringify(await list(serverId, owner, core))}`);
  };
  const playerCount = async (serverId: string) => (await servers(owner).getServer({ serverId })).server!.playerCount;

  before(async () => {
    t = await startTestCore(config);
    ({ owner, member, outsider } = await acmeWithMembers(t));
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    for (const core of cores.splice(0)) await core.close();
  });
  after(async () => {
    await t?.close();
  });

  it("lists the players reported, keeping `since` of those who stay, with player_count in step", async () => {
    const server = await createServer("Lobby");
    assert.deepEqual(await list(server.id), [], "no agent yet: nobody");
    const agent = connect(server.key);
    await agent.connected();
    assert.deepEqual(await list(server.id), []);

    const first = t.clock.now().getTime();
    agent.setPlayers([steve, alex]);
    const before = await until(server.id, ["Steve", "Alex"]);
    assert.ok(before.every((p) => p.since >= first && p.since <= t.clock.now().getTime()));
    assert.equal(await playerCount(server.id), 2);

    // Later, though within the time a server stays online without a heartbeat.
    t.clock.advance(20_000);
    const later = t.clock.now().getTime();
    // Herobrine joins as Alex leaves; Steve, renamed, stays the same player.
    agent.setPlayers([{ name: "Steve2", uuid: steve.uuid.toUpperCase() }, herobrine]);
    const after = await until(server.id, ["Steve2", "Herobrine"]);
    const steveNow = after.find((p) => p.uuid === steve.uuid)!;
    assert.equal(steveNow.since, before.find((p) => p.uuid === steve.uuid)!.since, "Steve keeps his since");
    assert.ok(after.find((p) => p.name === "Herobrine")!.since >= later, "Herobrine starts now");
    assert.equal(after[0].name, "Steve2", "longest online first");
    assert.equal(await playerCount(server.id), 2);

    // One player listed twice counts once.
    agent.setPlayers([herobrine, herobrine, steve]);
    await until(server.id, ["Herobrine", "Steve"]);
    assert.equal(await playerCount(server.id), 2);
    agent.setPlayers([]);
    await until(server.id, []);
    assert.equal(await playerCount(server.id), 0);
    t.clock.advance(-20_000);
  });

  it("clears them when the stream ends, and with the server when it is deleted", async () => {
    const server = await createServer("Ending");
    const agent = connect(server.key);
    await agent.connected();
    agent.setPlayers([steve, alex]);
    await until(server.id, ["Steve", "Alex"]);
    await agent.stop();
    assert.deepEqual(await list(server.id), []);
    assert.deepEqual(await sql(`select * from server_players where server_id = ?`, [server.id]), []);
    assert.equal(await playerCount(server.id), 0);

    const again = connect(server.key);
    await again.connected();
    again.setPlayers([steve]);
    await until(server.id, ["Steve"]);
    await servers(owner).deleteServer({ serverId: server.id });
    assert.deepEqual(await sql(`select * from server_players where server_id = ?`, [server.id]), [], "cascade");
  });

  it("the presence sweep clears those of a server whose instance died, and readers see none before", async () => {
    const server = await createServer("Orphaned");
    const agent = connect(server.key);
    await agent.connected();
    agent.setPlayers([steve]);
    await until(server.id, ["Steve"]);
    // The instance "dies": its stream stays in the row, unheard from.
    await sql(`update servers set last_seen_at = ? where id = ?`, [new Date(t.clock.now().getTime() - 45_000), server.id]);
    assert.deepEqual(await list(server.id), [], "an offline server lists nobody");
    await sweepPresence(t.orm.em, t.clock.now());
    assert.deepEqual(await sql(`select * from server_players where server_id = ?`, [server.id]), []);
    assert.equal((await sql(`select player_count from servers where id = ?`, [server.id]))[0].player_count, 0);
  });

  it("answers as getServer does: granted members yes, others no, outsiders not found", async () => {
    const server = await createServer("Private");
    const agent = connect(server.key);
    await agent.connected();
    agent.setPlayers([steve]);
    await until(server.id, ["Steve"]);
    await rejectsWith(servers(member).listPlayers({ serverId: server.id }), Code.PermissionDenied, "permission_denied");
    await rejectsWith(servers(member).getServer({ serverId: server.id }), Code.PermissionDenied, "permission_denied");
    await rejectsWith(servers(outsider).listPlayers({ serverId: server.id }), Code.NotFound, "not_found");
    await rejectsWith(servers(owner).listPlayers({ serverId: randomUUID() }), Code.NotFound, "not_found");
    await rejectsWith(servers(owner).listPlayers({ serverId: "not-a-uuid" }), Code.InvalidArgument);
    await t
      .client(OrganizationsService, { session: owner.token })
      .createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: server.id, actions: allActions });
    assert.deepEqual(
      (await list(server.id, member)).map((p) => p.name),
      ["Steve"],
    );
  });

  onPostgresServer(() => {
    it("lists them on any instance; a stream another took over replaces them no more", async () => {
      const other = await startTestCore(config, { database: t.database });
      cores.push(other);
      const server = await createServer("Shared");
      const far = connect(server.key, { core: other, heartbeatMs: 60_000 });
      await far.connected();
      far.setPlayers([steve, alex]);
      await until(server.id, ["Steve", "Alex"]);
      assert.deepEqual((await list(server.id, owner, other)).map((p) => p.name).sort(), ["Alex", "Steve"]);

      // Another agent takes over here; the far stream learns it only at its next heartbeat.
      const near = connect(server.key);
      await near.connected();
      assert.deepEqual(await list(server.id), [], "the new stream has reported no one yet");
      near.setPlayers([herobrine]);
      await until(server.id, ["Herobrine"]);
      far.setPlayers([steve]);
      await sleep(200);
      assert.deepEqual(
        (await list(server.id)).map((p) => p.name),
        ["Herobrine"],
      );
      assert.equal(await playerCount(server.id), 1);
    });
  });
});
