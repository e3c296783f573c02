import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { runAgent } from "../support/agent.ts";
import { useAgentOutpost, type Json } from "./agent-fixture.ts";

/**
 * The game server's side, black-box: the real `outpost-agent` process against a real Outpost over
 * HTTP/2 — the server's presence, and its agent key. In-game commands: agent-commands.test.ts.
 */
describe("outpost-agent against a running Outpost", function () {
  this.timeout(120_000);
  const { outpost, apiKey, api, createServer, getServer, eventually, run, simulate, newPlayer } = useAgentOutpost();

  describe("presence", () => {
    it("puts the server online within seconds of `run`, and its player count follows `players`", async () => {
      const server = await createServer("Survival");
      assert.equal((await getServer(server.id)).online, false);
      const agent = run(server.key);
      await agent.waitFor(/connected to http:\/\/127\.0\.0\.1:\d+: server "Survival" of acme/);
      const tookMs = await eventually(server.id, (s) => s.online);
      assert.ok(tookMs < 3_000, `online after ${tookMs} ms`);
      const listed = await api("GET", "servers/listServers?organizationSlug=acme");
      assert.equal(listed.find((s: Json) => s.id === server.id).online, true);

      const steve = newPlayer("Steve");
      const alex = newPlayer("Alex");
      agent.send(`players ${steve.name}:${steve.uuid},${alex.name}:${alex.uuid}`);
      await eventually(server.id, (s) => s.playerCount === 2);
      agent.send(`players ${alex.name}:${alex.uuid}`);
      await eventually(server.id, (s) => s.playerCount === 1);
      agent.send("players");
      await eventually(server.id, (s) => s.playerCount === 0 && s.online);
    });

    it("prints a server name stored with control and bidirectional characters as escapes, never acting on them", async () => {
      const server = await createServer("Plain");
      // Stored before the contract refused such names (a rename now is invalid_argument).
      const name = "Lobby\u001b]0;owned\u0007\u001b[2J\rX\u000bY\u0085Z\u202eevil";
      await outpost().outpost.runtime.orm.em.fork().getConnection().execute("update servers set name = ? where id = ?", [name, server.id]);
      const agent = run(server.key);
      await agent.waitFor(/connected to http:\/\/127\.0\.0\.1:\d+: server "Lobby/);
      const printed = agent.output();
      assert.doesNotMatch(printed, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/, "no control or bidirectional character reached the terminal");
      assert.ok(printed.includes('server "Lobby\\x1b]0;owned\\x07\\x1b[2J\\x0dX\\x0bY\\x85Z\\u202eevil" of acme\n'), printed);
    });

    it("takes the server offline within seconds when the agent is killed", async () => {
      const server = await createServer("Killed");
      const agent = run(server.key);
      await agent.waitFor(/connected/);
      await eventually(server.id, (s) => s.online);
      const steve = newPlayer("Steve");
      agent.send(`players ${steve.name}:${steve.uuid}`);
      await eventually(server.id, (s) => s.playerCount === 1);
      await agent.stop("SIGKILL");
      const tookMs = await eventually(server.id, (s) => !s.online && s.playerCount === 0);
      assert.ok(tookMs < 3_000, `offline after ${tookMs} ms`);
      assert.ok((await getServer(server.id)).lastSeenAt, "last seen is kept");
    });

    it("takes the server offline when the agent stops on SIGTERM", async () => {
      const server = await createServer("Stopped");
      const agent = run(server.key);
      await agent.waitFor(/connected/);
      await eventually(server.id, (s) => s.online);
      assert.equal(await agent.stop("SIGTERM"), 0);
      await eventually(server.id, (s) => !s.online, 2_000);
    });

    it("reads a server whose agent was last heard from over 30 s ago as offline (its instance died)", async () => {
      const server = await createServer("Stale");
      const sql = (query: string) => outpost().outpost.runtime.orm.em.fork().getConnection().execute(query, [server.id]);
      await sql(`update servers set online = true, player_count = 7, last_seen_at = now() - interval '45 seconds' where id = ?`);
      const stale = await getServer(server.id);
      assert.equal(stale.online, false);
      assert.equal(stale.playerCount, 0);
      assert.ok(stale.lastSeenAt);
      const listed = await api("GET", "servers/listServers?organizationSlug=acme");
      assert.equal(listed.find((s: Json) => s.id === server.id).online, false);
      await sql(`update servers set last_seen_at = now() - interval '5 seconds' where id = ?`);
      const fresh = await getServer(server.id);
      assert.equal(fresh.online, true);
      assert.equal(fresh.playerCount, 7);
    });

    it("writes one server.agent_connected however often the agent reconnects", async () => {
      const server = await createServer("Flapping");
      for (let i = 0; i < 3; i++) {
        const agent = run(server.key);
        await agent.waitFor(/connected/);
        await agent.stop("SIGKILL");
        await eventually(server.id, (s) => !s.online);
      }
      const { events } = await api("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${server.id}`);
      const connected = events.filter((e: Json) => e.action === "server.agent_connected");
      assert.equal(connected.length, 1);
      assert.equal(connected[0].actor.kind, "agent");
      assert.equal(connected[0].details.playerAuth, "online");
      assert.match(connected[0].details.agentVersion, /^\d+\.\d+\.\d+/);
    });
  });

  describe("the agent key", () => {
    it("regenerating it disconnects the agent at once, and the old key is refused after", async () => {
      const server = await createServer("Rekeyed");
      const agent = run(server.key);
      await agent.waitFor(/connected/);
      await eventually(server.id, (s) => s.online);
      const { agentKey } = await api("POST", "servers/regenerateAgentKey", { serverId: server.id });
      await agent.waitFor(/^error: Outpost refused the agent: the agent key was regenerated/m, 0, 3_000);
      assert.equal(await agent.exited, 3);
      await eventually(server.id, (s) => !s.online, 2_000);

      const old = await simulate(server.key, "/outpost login ABCD-1234");
      assert.equal(old.code, 3);
      assert.match(old.stderr, /^error: Outpost refused the agent: the agent key is not valid/);
      assert.equal(old.stderr.trim().split("\n").length, 1, "one line");
      const renewed = await simulate(agentKey, "/outpost login ABCD-1234");
      assert.equal(renewed.code, 1, renewed.stderr);
    });

    it("deleting the server disconnects its agent", async () => {
      const server = await createServer("Deleted");
      const agent = run(server.key);
      await agent.waitFor(/connected/);
      await api("POST", "servers/deleteServer", { serverId: server.id });
      await agent.waitFor(/^error: Outpost refused the agent: the server was deleted/m, 0, 3_000);
      assert.equal(await agent.exited, 3);
    });

    it("deleting the organization disconnects its agents", async () => {
      await api("POST", "organizations/createOrganization", { name: "Short lived", slug: "short-lived" });
      const { server, agentKey } = await api("POST", "servers/createServer", { organizationSlug: "short-lived", name: "Doomed", game: "minecraft" });
      const agent = run(agentKey);
      await agent.waitFor(/connected/);
      await eventually(server.id, (s) => s.online);
      await api("POST", "organizations/deleteOrganization", { organizationSlug: "short-lived" });
      await agent.waitFor(/^error: Outpost refused the agent: the server's organization was deleted/m, 0, 3_000);
      assert.equal(await agent.exited, 3);
    });

    it("refuses a user API key, a random string, and a game the server does not run", async () => {
      const server = await createServer("Minecraft only");
      const asApiKey = await simulate(apiKey(), "/outpost login ABCD-1234");
      assert.equal(asApiKey.code, 3);
      assert.match(asApiKey.stderr, /user API key \(opk_…\); an agent needs its server's agent key \(opa_…\)/);
      for (const key of ["not-a-key", `opa_${"x".repeat(40)}`]) {
        const random = await simulate(key, "/outpost login ABCD-1234");
        assert.equal(random.code, 3, key);
        assert.match(random.stderr, /the agent key is not valid/);
      }
      const wrongGame = await simulate(server.key, "/outpost login ABCD-1234", { extra: ["--game", "hytale"] });
      assert.equal(wrongGame.code, 3);
      assert.match(wrongGame.stderr, /the agent reports a hytale server, but "Minecraft only" is a minecraft server/);
      assert.equal((await getServer(server.id)).online, false);
    });

    it("says so in one line when Outpost cannot be reached, and 2 for usage mistakes", async () => {
      const unreachable = await runAgent([
        "simulate",
        "--url",
        "http://127.0.0.1:1",
        "--key",
        "opa_x",
        "--player-name",
        "S",
        "--player-uuid",
        randomUUID(),
        "--",
        "/outpost login ABCD-1234",
      ]);
      assert.equal(unreachable.code, 3);
      assert.match(unreachable.stderr, /^error: cannot reach Outpost at http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
      assert.equal(unreachable.stderr.trim().split("\n").length, 1);
      const missing = await runAgent(["simulate", "--url", outpost().baseUrl, "--key", "opa_x", "--", "/outpost login ABCD-1234"]);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /--player-name is required/);
      const badUuid = await runAgent(["simulate", "--url", outpost().baseUrl, "--key", "opa_x", "--player-name", "S", "--player-uuid", "nope", "--", "x"]);
      assert.equal(badUuid.code, 2);
      const badGame = await runAgent(["run", "--url", outpost().baseUrl, "--key", "opa_x", "--game", "tetris"]);
      assert.equal(badGame.code, 2);
      assert.match(badGame.stderr, /--game must be one of minecraft, hytale/);
    });
  });
});
