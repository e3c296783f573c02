import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import * as oidc from "openid-client";
import { startAgentProcess, type AgentProcess } from "../support/agent.ts";
import { openHostedPage, seedGameOAuth, startCallbackServer, type CallbackServer, type Seeded } from "../support/game-oauth.ts";
import { freePort } from "../support/outpost.ts";
import { startRestartableOutpost, type RestartableOutpost } from "../support/restartable-outpost.ts";
import { refusedMessage, unreachableMessage } from "../../agent/wrap-players.ts";
import { repeatWindowMs } from "../../agent/wrap-signals.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const standIn = fileURLToPath(new URL("./fixtures/stand-in-server.ts", import.meta.url));
const noSignIn = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";

/**
 * `outpost-agent wrap` as an operator runs it, around a stand-in game server that prints the
 * lines Paper, Spigot and vanilla print, against a real Outpost (restarted mid-session in one
 * test). Players are played through the operator's terminal (the agent's stdin), which the
 * stand-in reads as its console.
 */
describe("outpost-agent wrap around a game server", function () {
  this.timeout(120_000);
  let outpost: RestartableOutpost;
  let callback: CallbackServer;
  let seeded: Seeded;
  const running: AgentProcess[] = [];
  const dirs: string[] = [];

  before(async () => {
    callback = await startCallbackServer();
    outpost = await startRestartableOutpost({ PLANS: '{"free":{"servers":20,"gameOAuthClients":2}}' });
    seeded = await seedGameOAuth(outpost.baseUrl, [callback.redirectUri]);
  });
  after(async () => {
    await Promise.all(running.map((wrapped) => wrapped.stop("SIGKILL")));
    await outpost?.close();
    await callback?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const createServer = async (name: string): Promise<{ id: string; key: string }> => {
    const { server, agentKey } = await seeded.api("POST", "servers/createServer", { organizationSlug: "acme", name, game: "minecraft" });
    return { id: server.id, key: agentKey };
  };
  /** Polls the server until `check` holds. */
  const eventually = async (id: string, check: (server: Json) => boolean): Promise<Json> => {
    for (let i = 0; ; i++) {
      const { server } = await seeded.api("GET", `servers/getServer?serverId=${id}`);
      if (check(server)) return server;
      if (i > 150) assert.fail(`the server did not reach the state: ${JSON.stringify(server)}`);
      await sleep(100);
    }
  };
  /** `outpost-agent wrap` around the stand-in, in a directory of its own (no server.properties). */
  const wrap = (key: string, standInArgs: string[], options: { url?: string; extra?: string[]; cwd?: string } = {}) => {
    const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), "outpost-wrap-"));
    dirs.push(cwd);
    const args = ["wrap", "--url", options.url ?? outpost.baseUrl, "--key", key, ...(options.extra ?? ["--auth", "online"])];
    const wrapped = startAgentProcess([...args, "--", process.execPath, standIn, ...standInArgs], {}, cwd);
    running.push(wrapped);
    return wrapped;
  };
  const connected = (wrapped: AgentProcess, since = 0) => wrapped.waitFor(/\[outpost\] connected to Outpost/, since);
  /** What the player reads in game next (after `since` in the output). */
  const told = async (wrapped: AgentProcess, name: string, since: number) => (await wrapped.waitFor(new RegExp(`tellraw ${name}: \\[Outpost\\] (.*)\\n`), since))[1];
  /** The player types `text` in game; resolves with what Outpost tells them. */
  const play = (wrapped: AgentProcess, name: string, text: string) => {
    const since = wrapped.output().length;
    wrapped.send(`player run ${name} ${text}`);
    return told(wrapped, name, since);
  };

  it("signs a player in on a wrapped Paper server: the login code, the prompt, the confirmation, the ID token", async () => {
    const server = await createServer("Paper");
    const wrapped = wrap(server.key, ["--format", "paper", "--ansi"]);
    await connected(wrapped);
    const steve = { name: "Steve", uuid: randomUUID() };
    wrapped.send(`player join ${steve.name} ${steve.uuid}`);
    await eventually(server.id, (s) => s.online && s.playerCount === 1);

    const config = await oidc.discovery(new URL(outpost.gameIssuerUrl), seeded.clientId, undefined, oidc.ClientSecretBasic(seeded.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: callback.redirectUri,
      scope: "openid profile",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state: "wrapped",
    });
    const hosted = await openHostedPage(url);
    await hosted.opened;
    assert.match(await play(wrapped, steve.name, hosted.command), /^Sign in to Forum at 127\.0\.0\.1:\d+\? Type \/outpost confirm within \d+ s/);
    assert.equal(await play(wrapped, steve.name, "/outpost confirm"), "Signed in to Forum.");

    const tokens = await oidc.authorizationCodeGrant(config, await hosted.redirect, { pkceCodeVerifier: verifier, expectedState: "wrapped", idTokenExpected: true });
    const claims = tokens.claims()!;
    assert.equal(claims.game_account_id, steve.uuid);
    assert.equal(claims.game_account_name, steve.name);
    assert.equal(claims.verified_by_server_id, server.id);

    // The operator's terminal is still the console, and the leave is reported.
    const since = wrapped.output().length;
    wrapped.send("list");
    await wrapped.waitFor(/There are 1 of a max of 20 players online: Steve/, since);
    wrapped.send(`player leave ${steve.name}`);
    await eventually(server.id, (s) => s.playerCount === 0);
    assert.equal(await wrapped.stop(), 0);
  });

  it("runs console commands from Outpost on the wrapped server: the lines that follow come back, refusals are the API's", async () => {
    const server = await createServer("Console");
    const wrapped = wrap(server.key, ["--format", "paper", "--ansi"]);
    await connected(wrapped);
    await eventually(server.id, (s) => s.online && s.consoleAvailable);
    const steve = { name: "Steve", uuid: randomUUID() };
    wrapped.send(`player join ${steve.name} ${steve.uuid}`);
    await eventually(server.id, (s) => s.playerCount === 1);
    const players = await seeded.api("GET", `servers/listPlayers?serverId=${server.id}`);
    assert.deepEqual(players.map((p: Json) => [p.name, p.uuid]), [[steve.name, steve.uuid]]);

    const execute = async (command: string) => {
      const res = await fetch(`${outpost.baseUrl}/api/http/servers/executeConsoleCommand`, {
        method: "POST",
        headers: { "x-api-key": seeded.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ serverId: server.id, command }),
      });
      return { status: res.status, body: (await res.json()) as Json };
    };
    /** A Paper line's message, after its frame. */
    const message = (line: string) => line.replace(/^\[\d{2}:\d{2}:\d{2} INFO\]: /, "");
    const list = await execute("/list");
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.equal(list.body.success, true);
    assert.equal(list.body.output.length, 1, JSON.stringify(list.body.output));
    assert.match(list.body.output[0], /^\[\d{2}:\d{2}:\d{2} INFO\]: There are 1 of a max of 20 players online: Steve$/);
    assert.match(wrapped.output(), /\[outpost\] Outpost runs a console command: list\n/);
    assert.match(wrapped.output(), /stdin> list\n/);

    const say = await execute("say hello from the dashboard");
    assert.deepEqual([say.body.success, say.body.output.map(message)], [true, ["[Server] hello from the dashboard"]]);
    const unknown = await execute("frobnicate now");
    assert.deepEqual(unknown.body.output.map(message), ["Unknown or incomplete command, see below for error", "frobnicate now<--[HERE]"]);
    // A command that prints nothing (tellraw) ran, with no lines.
    const tell = await execute(`tellraw Steve {"text":"hi"}`);
    assert.deepEqual([tell.body.success, tell.body.output], [true, []]);
    await wrapped.waitFor(/tellraw Steve: hi\n/);

    assert.equal((await execute("say one\nop Mallory")).status, 400);
    assert.equal((await execute("say " + "x".repeat(1000))).status, 400);
    assert.doesNotMatch(wrapped.output(), /op Mallory|x{1000}/);

    assert.equal(await wrapped.stop(), 0);
    await eventually(server.id, (s) => !s.online);
    const offline = await execute("list");
    assert.equal(offline.status, 409, JSON.stringify(offline.body));
  });

  it("answers a refused command in game with Outpost's reason (Spigot)", async () => {
    const server = await createServer("Spigot");
    const wrapped = wrap(server.key, ["--format", "spigot"]);
    await connected(wrapped);
    wrapped.send(`player join Alex ${randomUUID()}`);
    await eventually(server.id, (s) => s.playerCount === 1);
    assert.equal(await play(wrapped, "Alex", "/outpost login ZZZZ-9999"), noSignIn);
    assert.equal(await play(wrapped, "Alex", "/outpost confirm"), "No sign-in is waiting for your confirmation on this server. Run /outpost login <CODE> first.");
    assert.match(wrapped.output(), /stdin> tellraw Alex \{"text":"\[Outpost\] ","color":"gold","extra":\[\{"text":"No sign-in is waiting for that code\./);
    assert.equal(await wrapped.stop(), 0);
  });

  it("reads nothing a player forges in chat behind a line separator, a carriage return or a C1 control, and still shows the chat", async () => {
    const server = await createServer("Forged");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    const steve = randomUUID();
    wrapped.send(`player join Steve ${steve}`);
    wrapped.send(`player join Mallory ${randomUUID()}`);
    // Minecraft lets these through in chat; the stand-in prints the text as it was typed. On the
    // way there the text is ASCII, as JSON.stringify leaves U+2028, U+2029 and U+0085 as they are.
    const ascii = (text: string) => JSON.stringify(text).replace(/[^ -~]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
    const chat = (text: string) => wrapped.send(`player chat Mallory ${ascii(text)}`);
    for (const separator of ["\u2028", "\u2029", "\r", "\u0085"]) {
      chat(`hi${separator}[12:00:02 INFO]: UUID of player Eve is ${steve}`);
      chat(`hi${separator}[12:00:02 INFO]: Steve left the game`);
      chat(`hi${separator}[12:00:02 INFO]: Steve issued server command: /outpost login ZZZZ-9999`);
    }
    wrapped.send("player join Eve");
    wrapped.send(`player join Alex ${randomUUID()}`);
    await eventually(server.id, (s) => s.playerCount === 3);
    const players = await seeded.api("GET", `servers/listPlayers?serverId=${server.id}`);
    assert.deepEqual(players.map((p: Json) => p.name).sort(), ["Alex", "Mallory", "Steve"]);
    assert.equal(players.find((p: Json) => p.name === "Steve").uuid, steve);
    assert.match(wrapped.output(), /\[outpost\] Eve joined, but their login printed no UUID/);
    // Steve's own command is the first Outpost hears of him, and the only one he is answered.
    assert.equal(await play(wrapped, "Steve", "/outpost login ZZZZ-9998"), noSignIn);
    assert.equal(wrapped.output().match(/tellraw Steve:/g)?.length, 1);
    assert.ok(wrapped.output().includes("<Mallory> hi\u2028[12:00:02 INFO]: Steve issued server command: /outpost login ZZZZ-9999\n"));
    assert.equal(await wrapped.stop(), 0);
  });

  it("does not report a player whose login printed no UUID, and tells them why they cannot sign in", async () => {
    const server = await createServer("No UUID");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    wrapped.send("player join Nobody");
    wrapped.send(`player join Steve ${randomUUID()}`);
    await eventually(server.id, (s) => s.playerCount === 1);
    assert.match(wrapped.output(), /\[outpost\] Nobody joined, but their login printed no UUID/);
    assert.match(await play(wrapped, "Nobody", "/outpost login ABCD-1234"), /^Outpost does not know your account yet: .* Rejoin the server and try again\.$/);
    assert.equal((await eventually(server.id, () => true)).playerCount, 1);
    assert.equal(await wrapped.stop(), 0);
  });

  for (const format of ["vanilla", "fabric"]) {
    it(`reports the players of a ${format} server from its log`, async () => {
      const server = await createServer(format);
      const wrapped = wrap(server.key, ["--format", format, "--ansi"]);
      await connected(wrapped);
      wrapped.send(`player join Steve ${randomUUID()}`);
      wrapped.send(`player join Alex ${randomUUID()}`);
      await eventually(server.id, (s) => s.playerCount === 2);
      wrapped.send("player leave Steve");
      await eventually(server.id, (s) => s.playerCount === 1);
      assert.equal(await wrapped.stop(), 0);
    });
  }

  it("exits with the server's status when the server crashes, and the server goes offline", async () => {
    const server = await createServer("Crashing");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    await eventually(server.id, (s) => s.online);
    wrapped.send("crash 3");
    assert.equal(await wrapped.exited, 3);
    assert.match(wrapped.output(), /java\.lang\.IllegalStateException: a stand-in crash/);
    assert.match(wrapped.output(), /\[outpost\] the server exited \(exit code 3\); stopping the agent/);
    await eventually(server.id, (s) => !s.online);
  });

  it("stops the server with `stop` on SIGTERM and exits with its status; kills it after the grace period", async () => {
    const server = await createServer("Stopping");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    wrapped.send(`player join Steve ${randomUUID()}`);
    await eventually(server.id, (s) => s.playerCount === 1);
    assert.equal(await wrapped.stop("SIGTERM"), 0);
    assert.match(wrapped.output(), /\[outpost\] SIGTERM: stopping the server \(sent "stop"/);
    assert.match(wrapped.output(), /stdin> stop\n/);
    assert.match(wrapped.output(), /Steve lost connection: Server closed/);
    await eventually(server.id, (s) => !s.online);

    const hung = wrap(server.key, ["--format", "paper", "--ignore-stop"], { extra: ["--auth", "online", "--grace-seconds", "1"] });
    await connected(hung);
    assert.equal(await hung.stop("SIGTERM"), 128 + 9);
    assert.match(hung.output(), /stdin> stop\n[^]*\[outpost\] the server did not stop within 1 s: killing it/);
  });

  it("ignores SIGHUP when its stdin is no terminal (nohup, systemd, Docker): the server keeps running", async () => {
    const server = await createServer("Nohup");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    wrapped.child.kill("SIGHUP");
    await wrapped.waitFor(/\[outpost\] SIGHUP ignored: the agent's stdin is no terminal/);
    const since = wrapped.output().length;
    wrapped.send("say still here");
    await wrapped.waitFor(/\[Server\] still here/, since);
    assert.doesNotMatch(wrapped.output(), /stdin> stop/);
    assert.equal(await wrapped.stop(), 0);
  });

  it("takes the same signal again within a second as one Ctrl-C (npm run passes it on too), and kills the server on a later one", async () => {
    const server = await createServer("Ctrl-C");
    const hung = wrap(server.key, ["--format", "paper", "--ignore-stop"]);
    await connected(hung);
    // The terminal's Ctrl-C, then npm's copy of it a moment later (sent back to back, the two
    // could merge into one pending signal).
    hung.child.kill("SIGINT");
    await hung.waitFor(/\[outpost\] SIGINT: stopping the server \(sent "stop"/);
    hung.child.kill("SIGINT");
    await hung.waitFor(/\[outpost\] SIGINT again within a second: taken as the same one/);
    const since = hung.output().length;
    hung.send("say still here");
    await hung.waitFor(/\[Server\] still here/, since);
    assert.doesNotMatch(hung.output(), /killing/);
    // A deliberate second Ctrl-C, later.
    await sleep(repeatWindowMs + 100);
    hung.child.kill("SIGINT");
    assert.equal(await hung.exited, 128 + 9);
    assert.match(hung.output(), /\[outpost\] SIGINT again: killing the server now/);
  });

  it("starts the server while Outpost is down, connects when it is up, and rides out its restart", async () => {
    const server = await createServer("Patient");
    await outpost.stop();
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await wrapped.waitFor(/Done \([\d.]+s\)! For help, type "help"/);
    await wrapped.waitFor(/\[outpost\] cannot reach Outpost at .*; trying again in [\d.]+ s\. The game server keeps running\./);
    const pid = Number((await wrapped.waitFor(/stand-in pid (\d+)/))[1]);
    assert.match(wrapped.output(), new RegExp(`\\[outpost\\] the server is process ${pid}, in a process group of its own\\n`));
    await outpost.start();
    await connected(wrapped);
    const steve = { name: "Steve", uuid: randomUUID() };
    wrapped.send(`player join ${steve.name} ${steve.uuid}`);
    await eventually(server.id, (s) => s.online && s.playerCount === 1);

    const before = wrapped.output().length;
    await outpost.stop();
    await wrapped.waitFor(/\[outpost\] (lost|cannot reach) Outpost/, before);
    assert.equal(await play(wrapped, steve.name, "/outpost confirm"), unreachableMessage);
    await outpost.start();
    await connected(wrapped, before);
    // The same server process all along, its players reported again, sign-ins answered again.
    process.kill(pid, 0);
    assert.equal(wrapped.output().match(/stand-in pid/g)!.length, 1);
    assert.doesNotMatch(wrapped.output(), /stdin> stop/);
    await eventually(server.id, (s) => s.online && s.playerCount === 1);
    assert.equal(await play(wrapped, steve.name, "/outpost login ZZZZ-9999"), noSignIn);
    assert.equal(await wrapped.stop(), 0);
  });

  it("keeps the server running when Outpost refuses the key, and says so loudly", async () => {
    const wrapped = wrap("opa_not_a_real_key_at_all", ["--format", "paper"]);
    await wrapped.waitFor(/\[outpost\] OUTPOST REFUSED THIS AGENT: .*\n\[outpost\] The game server keeps running, but without Outpost/);
    const since = wrapped.output().length;
    wrapped.send("say still here");
    await wrapped.waitFor(/\[Server\] still here/, since);
    wrapped.send(`player join Steve ${randomUUID()}`);
    assert.equal(await play(wrapped, "Steve", "/outpost login ABCD-1234"), refusedMessage);
    assert.equal(await wrapped.stop("SIGINT"), 0);
  });

  it("shows a server name stored with control and bidirectional characters as escapes, never acting on them", async () => {
    const server = await createServer("Plain");
    // Stored before the contract refused such names (a rename now is invalid_argument).
    const name = "Lobby\u001b]0;owned\u0007\u001b[2J\rX\u0085Y\u202eevil";
    await outpost.current()!.runtime.orm.em.fork().getConnection().execute("update servers set name = ? where id = ?", [name, server.id]);
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    const printed = wrapped.output();
    assert.doesNotMatch(printed, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/, "no control or bidirectional character reached the terminal");
    assert.ok(printed.includes('server "Lobby\\x1b]0;owned\\x07\\x1b[2J\\x0dX\\x85Y\\u202eevil" of acme\n'), printed);
    assert.equal(await wrapped.stop("SIGINT"), 0);
  });

  it("takes --auth from server.properties when not given, and says what it chose", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "outpost-wrap-"));
    writeFileSync(join(cwd, "server.properties"), "#Minecraft server properties\nmotd=A Minecraft Server\nonline-mode=false\n");
    const unreachable = `http://127.0.0.1:${await freePort()}`;
    const wrapped = wrap("opa_unused", ["--format", "paper"], { url: unreachable, extra: [], cwd });
    await wrapped.waitFor(/\[outpost\] --auth offline: server\.properties says online-mode=false/);
    await wrapped.waitFor(/Done \(/);
    assert.equal(await wrapped.stop(), 0);
  });
});
