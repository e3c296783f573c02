import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { runAgent, startAgentRun, type AgentProcess } from "../support/agent.ts";
import { openHostedPage } from "../support/game-oauth.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The one reply for any code that opens nothing: unknown, expired or another organization's. */
const noSignIn = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";
const offlineMode = /^This server runs in offline mode, which cannot prove who you are, so it cannot sign you in\. \(Server owner: behind a proxy that authenticates players, run the agent with --auth proxy\.\)$/;
const insecureProxy = /^This server cannot prove who you are \(its proxy forwards players without a secret\), so it cannot sign you in\. .*--auth proxy/;
const nothingToConfirm = "No sign-in is waiting for your confirmation on this server. Run /outpost login <CODE> first.";
const usage = /^Usage: \/outpost login <CODE>/;

/**
 * The game server's side, black-box: the real `outpost-agent` process against a real Outpost over
 * HTTP/2, with servers made and read through the HTTP API as their owners do.
 */
describe("outpost-agent against a running Outpost", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let apiKey: string;
  const agents: AgentProcess[] = [];

  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<Json> => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": apiKey, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  };
  const createServer = async (name: string, game = "minecraft"): Promise<{ id: string; key: string }> => {
    const { server, agentKey } = await api("POST", "servers/createServer", { organizationSlug: "acme", name, game });
    return { id: server.id, key: agentKey };
  };
  const getServer = async (id: string) => (await api("GET", `servers/getServer?serverId=${id}`)).server;
  /** Polls the server until `check` holds (every 100 ms, up to `withinMs`); returns how long it took. */
  const eventually = async (id: string, check: (server: Json) => boolean, withinMs = 5_000): Promise<number> => {
    const started = Date.now();
    for (;;) {
      const server = await getServer(id);
      if (check(server)) return Date.now() - started;
      if (Date.now() - started > withinMs) assert.fail(`server did not reach the state within ${withinMs} ms: ${JSON.stringify(server)}`);
      await sleep(100);
    }
  };
  const run = (key: string, ...extra: string[]) => {
    const agent = startAgentRun(["--url", t.baseUrl, "--key", key, ...extra]);
    agents.push(agent);
    return agent;
  };
  const simulate = (key: string, command: string, options: { name?: string; uuid?: string; extra?: string[] } = {}) =>
    runAgent([
      "simulate",
      "--url",
      t.baseUrl,
      "--key",
      key,
      "--player-name",
      options.name ?? "Steve",
      "--player-uuid",
      options.uuid ?? "123e4567-e89b-12d3-a456-426614174000",
      ...(options.extra ?? []),
      "--",
      command,
    ]);
  /** Plays `text` as `player` on a running agent's console and resolves with the reply. */
  const play = async (agent: AgentProcess, player: { name: string; uuid: string }, text: string): Promise<string> => {
    const since = agent.output().length;
    agent.send(`${player.name} ${player.uuid} ${text}`);
    const [, reply] = await agent.waitFor(new RegExp(`\\[to ${player.name}\\] (.*)\\n`), since);
    return reply;
  };
  const newPlayer = (name: string) => ({ name, uuid: randomUUID() });

  before(async () => {
    t = await startTestOutpost({ PLANS: '{"free":{"servers":50,"gameOAuthClients":2}}' });
    const origin = "http://localhost:3000";
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email: "owner@example.com", password: "a long password", name: "Owner" }),
    });
    assert.equal(signUp.status, 201);
    const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { cookie, origin, "content-type": "application/json" },
      body: JSON.stringify({ name: "tests", expiresInDays: 30 }),
    });
    apiKey = ((await created.json()) as Json).key;
    await api("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop("SIGKILL")));
  });
  after(async () => {
    await t?.close();
  });

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
      await t.outpost.runtime.orm.em.fork().getConnection().execute("update servers set name = ? where id = ?", [name, server.id]);
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
      const sql = (query: string) => t.outpost.runtime.orm.em.fork().getConnection().execute(query, [server.id]);
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
      const asApiKey = await simulate(apiKey, "/outpost login ABCD-1234");
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
      const unreachable = await runAgent(["simulate", "--url", "http://127.0.0.1:1", "--key", "opa_x", "--player-name", "S", "--player-uuid", randomUUID(), "--", "/outpost login ABCD-1234"]);
      assert.equal(unreachable.code, 3);
      assert.match(unreachable.stderr, /^error: cannot reach Outpost at http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
      assert.equal(unreachable.stderr.trim().split("\n").length, 1);
      const missing = await runAgent(["simulate", "--url", t.baseUrl, "--key", "opa_x", "--", "/outpost login ABCD-1234"]);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /--player-name is required/);
      const badUuid = await runAgent(["simulate", "--url", t.baseUrl, "--key", "opa_x", "--player-name", "S", "--player-uuid", "nope", "--", "x"]);
      assert.equal(badUuid.code, 2);
      const badGame = await runAgent(["run", "--url", t.baseUrl, "--key", "opa_x", "--game", "tetris"]);
      assert.equal(badGame.code, 2);
      assert.match(badGame.stderr, /--game must be one of minecraft, hytale/);
    });
  });

  describe("in-game commands", () => {
    it("simulate: a code no sign-in waits for → exit 1 with what the player reads", async () => {
      const server = await createServer("Lobby");
      const res = await simulate(server.key, "/outpost login ABCD-1234");
      assert.equal(res.code, 1, res.stderr);
      assert.equal(res.stdout, `${noSignIn}\n`);
      const lower = await simulate(server.key, "  /OUTPOST   login   abcd1234 ");
      assert.equal(lower.stdout, `${noSignIn}\n`);
    });

    it("answers anything but /outpost login <CODE> with the usage", async () => {
      const server = await createServer("Usage");
      const res = await simulate(server.key, "/outpost login");
      assert.equal(res.code, 1);
      assert.match(res.stdout, usage);
      const agent = run(server.key);
      await agent.waitFor(/connected/);
      const steve = newPlayer("Steve");
      for (const text of ["/outpost", "/outpost login ABC-123", "/outpost logout ABCD-1234", "/outpost login ABCD-1234 now", "hello there"]) {
        assert.match(await play(agent, steve, text), usage, text);
      }
      assert.equal(await play(agent, steve, "/outpost login wxyz-9876"), noSignIn);
    });

    it("a right code asks the player to confirm: on the console they type /outpost confirm; simulate exits 4, or confirms with --confirm", async () => {
      const server = await createServer("Console");
      const redirectUri = "http://127.0.0.1:9/callback";
      const { client } = await api("POST", "organizations/createGameOAuthClient", { organizationSlug: "acme", name: "Forum", redirectUris: [redirectUri], verifierPolicy: "any_server" });
      const start = () =>
        openHostedPage(new URL(`${t.gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: client.clientId, redirect_uri: redirectUri, state: "s" })}`));
      const prompt = "Sign in to Forum at 127.0.0.1:9? Type /outpost confirm within 60 s — only if you started this yourself.";
      const steve = newPlayer("Steve");

      const agent = run(server.key);
      await agent.waitFor(/connected/);
      const first = await start();
      assert.equal(await play(agent, steve, first.command), prompt);
      assert.equal(await play(agent, steve, "/outpost confirm"), "Signed in to Forum.");
      assert.ok((await first.redirect).searchParams.get("code"));

      const second = await start();
      const asked = await simulate(server.key, second.command, { name: steve.name, uuid: steve.uuid });
      assert.equal(asked.code, 4, asked.stderr);
      assert.equal(asked.stdout, `${prompt}\n`);
      const cancelled = await simulate(server.key, "/outpost cancel", { name: steve.name, uuid: steve.uuid });
      assert.equal(cancelled.code, 1);
      assert.equal(cancelled.stdout, "Cancelled: you were not signed in to Forum.\n");
      const confirmed = await simulate(server.key, second.command, { name: steve.name, uuid: steve.uuid, extra: ["--confirm"] });
      assert.equal(confirmed.code, 0, confirmed.stderr);
      assert.equal(confirmed.stdout, `${prompt}\nSigned in to Forum.\n`);
      assert.ok((await second.redirect).searchParams.get("code"));
      // Confirming again at once is told it went through (as when a dropped connection's answer is asked again).
      assert.equal((await simulate(server.key, "/outpost confirm", { name: steve.name, uuid: steve.uuid })).stdout, "Signed in to Forum.\n");
      const alex = newPlayer("Alex");
      assert.equal((await simulate(server.key, "/outpost confirm", { name: alex.name, uuid: alex.uuid })).stdout, `${nothingToConfirm}\n`, "another player has nothing to confirm");
    });

    it("refuses on a server that does not authenticate its players, before anything else is checked, and says why", async () => {
      const server = await createServer("Cracked");
      const offline = await simulate(server.key, "/outpost login ABCD-1234", { extra: ["--auth", "offline"] });
      assert.equal(offline.code, 1);
      assert.match(offline.stdout.trimEnd(), offlineMode);
      assert.equal((await getServer(server.id)).signInAllowed, false);
      const agent = run(server.key, "--auth", "insecure");
      await agent.waitFor(/connected/);
      const steve = newPlayer("Steve");
      // Not counted as wrong codes: more than the limit, all answered the same way.
      for (let i = 0; i < 7; i++) assert.match(await play(agent, steve, `/outpost login ABCD-000${i}`), insecureProxy);
      assert.match(await play(agent, steve, "/outpost"), usage);
      assert.match(await play(agent, steve, "/outpost confirm"), insecureProxy);
      const online = await simulate(server.key, "/outpost login ABCD-1234", { uuid: steve.uuid });
      assert.equal(online.stdout, `${noSignIn}\n`);
      // Behind a proxy that vouches for its players, the server signs them in as an online one does.
      const proxied = await simulate(server.key, "/outpost login ABCD-1234", { uuid: steve.uuid, extra: ["--auth", "proxy"] });
      assert.equal(proxied.stdout, `${noSignIn}\n`);
      const read = await getServer(server.id);
      assert.equal(read.playerAuth, "proxy");
      assert.equal(read.signInAllowed, true);
    });

    it("limits wrong codes per player, on every server of the organization, and says when to retry", async () => {
      const first = await createServer("Guessing 1");
      const second = await createServer("Guessing 2");
      const agent = run(first.key);
      await agent.waitFor(/connected/);
      const guesser = newPlayer("Guesser");
      for (let i = 0; i < 5; i++) assert.equal(await play(agent, guesser, `/outpost login AAAA-000${i}`), noSignIn);
      assert.match(await play(agent, guesser, "/outpost login AAAA-0009"), /^You have entered too many wrong codes\. Try again in (10|9) minutes\.$/);
      // Malformed commands are not guesses, and the limit is the player's, not the server's.
      assert.match(await play(agent, guesser, "/outpost login"), usage);
      assert.equal(await play(agent, newPlayer("Honest"), "/outpost login AAAA-0000"), noSignIn);
      const elsewhere = await simulate(second.key, "/outpost login AAAA-0000", { name: guesser.name, uuid: guesser.uuid });
      assert.match(elsewhere.stdout, /^You have entered too many wrong codes/);
      // The same UUID written in capitals is the same player.
      const shouting = await simulate(second.key, "/outpost login AAAA-0000", { name: guesser.name, uuid: guesser.uuid.toUpperCase() });
      assert.match(shouting.stdout, /^You have entered too many wrong codes/);
    });

    it("limits wrong codes per server, whoever enters them", async () => {
      const server = await createServer("Busy");
      const agent = run(server.key);
      await agent.waitFor(/connected/);
      for (let i = 0; i < 30; i++) {
        assert.equal(await play(agent, newPlayer(`P${i}`), "/outpost login BBBB-0000"), noSignIn, `player ${i}`);
      }
      assert.match(
        await play(agent, newPlayer("Latecomer"), "/outpost login BBBB-0000"),
        /^Too many wrong codes have been entered on this server\. Try again in (10|9) minutes\.$/,
      );
      const other = await createServer("Quiet");
      assert.equal((await simulate(other.key, "/outpost login BBBB-0000", { uuid: randomUUID() })).stdout, `${noSignIn}\n`);
    });
  });
});
