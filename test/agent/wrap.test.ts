import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as oidc from "openid-client";
import { openHostedPage } from "../support/game-oauth.ts";
import { useWrapSetting, type Json } from "./wrap-fixture.ts";

const noSignIn = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";

/**
 * `outpost-agent wrap` as an operator runs it, against a real Outpost: players signing in, console
 * commands, chat that forges lines, players read from each server's log. The process's own life
 * (crashes, signals, Outpost going away): wrap-process.test.ts.
 */
describe("outpost-agent wrap around a game server", function () {
  this.timeout(120_000);
  const { outpost, callback, seeded, createServer, eventually, wrap, connected, play } = useWrapSetting();

  it("signs a player in on a wrapped Paper server: the login code, the prompt, the confirmation, the ID token", async () => {
    const server = await createServer("Paper");
    const wrapped = wrap(server.key, ["--format", "paper", "--ansi"]);
    await connected(wrapped);
    const steve = { name: "Steve", uuid: randomUUID() };
    wrapped.send(`player join ${steve.name} ${steve.uuid}`);
    await eventually(server.id, (s) => s.online && s.playerCount === 1);

    const config = await oidc.discovery(new URL(outpost().gameIssuerUrl), seeded().clientId, undefined, oidc.ClientSecretBasic(seeded().clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: callback().redirectUri,
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
    const players = await seeded().api("GET", `servers/listPlayers?serverId=${server.id}`);
    assert.deepEqual(
      players.map((p: Json) => [p.name, p.uuid]),
      [[steve.name, steve.uuid]],
    );

    const execute = async (command: string) => {
      const res = await fetch(`${outpost().baseUrl}/api/http/servers/executeConsoleCommand`, {
        method: "POST",
        headers: { "x-api-key": seeded().apiKey, "content-type": "application/json" },
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
    const players = await seeded().api("GET", `servers/listPlayers?serverId=${server.id}`);
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
});
