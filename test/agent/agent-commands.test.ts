import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { openHostedPage } from "../support/game-oauth.ts";
import { useAgentOutpost } from "./agent-fixture.ts";

/** The one reply for any code that opens nothing: unknown, expired or another organization's. */
const noSignIn = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";
const offlineMode =
  /^This server runs in offline mode, which cannot prove who you are, so it cannot sign you in\. \(Server owner: behind a proxy that authenticates players, run the agent with --auth proxy\.\)$/;
const insecureProxy = /^This server cannot prove who you are \(its proxy forwards players without a secret\), so it cannot sign you in\. .*--auth proxy/;
const nothingToConfirm = "No sign-in is waiting for your confirmation on this server. Run /outpost login <CODE> first.";
const usage = /^Usage: \/outpost login <CODE>/;

/** In-game commands through the real `outpost-agent` (`simulate`, and `run`'s console) against a real Outpost. */
describe("outpost-agent against a running Outpost", function () {
  this.timeout(120_000);
  const { outpost, api, createServer, getServer, run, simulate, play, newPlayer } = useAgentOutpost();

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
      const { client } = await api("POST", "organizations/createGameOAuthClient", {
        organizationSlug: "acme",
        name: "Forum",
        redirectUris: [redirectUri],
        verifierPolicy: "any_server",
      });
      const start = () =>
        openHostedPage(
          new URL(
            `${outpost().gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: client.clientId, redirect_uri: redirectUri, state: "s" })}`,
          ),
        );
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
      assert.equal(
        (await simulate(server.key, "/outpost confirm", { name: alex.name, uuid: alex.uuid })).stdout,
        `${nothingToConfirm}\n`,
        "another player has nothing to confirm",
      );
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
