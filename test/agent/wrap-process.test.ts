import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort } from "../support/outpost.ts";
import { refusedMessage, unreachableMessage } from "../../agent/wrap-players.ts";
import { repeatWindowMs } from "../../agent/wrap-signals.ts";
import { useWrapSetting } from "./wrap-fixture.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const noSignIn = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";

/**
 * `outpost-agent wrap`'s own life as a process around the game server: the server crashing or
 * stopping, signals, Outpost down or restarted mid-session, a refused key, what it prints and reads
 * at start. Players and the console: wrap.test.ts.
 */
describe("outpost-agent wrap around a game server", function () {
  this.timeout(120_000);
  const { outpost, seeded, createServer, eventually, wrap, connected, play } = useWrapSetting();

  it("with --restart never, exits with the server's status when the server crashes, and the server goes offline", async () => {
    const server = await createServer("Crashing");
    const wrapped = wrap(server.key, ["--format", "paper"], { extra: ["--auth", "online", "--restart", "never"] });
    await connected(wrapped);
    await eventually(server.id, (s) => s.online);
    wrapped.send("crash 3");
    assert.equal(await wrapped.exited, 3);
    assert.match(wrapped.output(), /java\.lang\.IllegalStateException: a stand-in crash/);
    assert.match(wrapped.output(), /\[outpost\] the server exited \(exit code 3\); stopping the agent/);
    await eventually(server.id, (s) => !s.online);
  });

  it("starts a crashed server again after a growing delay, stays connected meanwhile, and gives up after five crashes in ten minutes", async () => {
    const server = await createServer("Restarting");
    const wrapped = wrap(server.key, ["--format", "paper"], { extra: ["--auth", "online", "--restart-delay-seconds", "0.2"] });
    await connected(wrapped);
    const pids = [Number((await wrapped.waitFor(/stand-in pid (\d+)/))[1])];
    await eventually(server.id, (s) => s.gameState === "running");
    for (let crash = 1; crash <= 4; crash++) {
      const since = wrapped.output().length;
      wrapped.send(`crash ${crash + 1}`);
      const delay = (0.2 * 2 ** (crash - 1)).toString();
      await wrapped.waitFor(new RegExp(`\\[outpost\\] the server ended \\(exit code ${crash + 1}\\); starting it again in ${delay} s \\(end ${crash} of 5`), since);
      pids.push(Number((await wrapped.waitFor(/stand-in pid (\d+)/, since))[1]));
      if (crash === 1) await eventually(server.id, (s) => s.gameState === "running");
    }
    assert.equal(new Set(pids).size, 5, "a new server process each time");
    // It runs again: the console answers, and the server is online all along.
    const since = wrapped.output().length;
    wrapped.send("say back again");
    await wrapped.waitFor(/stdin> say back again/, since);
    await eventually(server.id, (s) => s.online);
    wrapped.send("crash 9");
    await wrapped.waitFor(/the server ended \(exit code 9\), the 5th time within ten minutes: a crash loop, so it is not started again/, since);
    await sleep(1_000);
    assert.doesNotMatch(wrapped.output().slice(since), /starting the server/, "not started again");
    const crashed = await eventually(server.id, (s) => s.gameState === "crashed");
    assert.equal(crashed.online, true, "the agent stays connected");
    assert.equal(crashed.gameStateDetail, "exit code 9, the 5th time within ten minutes: a crash loop, not started again");
    const { events } = await seeded().api("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${server.id}&action=server.game_crashed`);
    assert.deepEqual((events as Json[]).map((e) => e.details.detail).reverse(), [
      "exit code 2; starting it again in 0.2 s",
      "exit code 3; starting it again in 0.4 s",
      "exit code 4; starting it again in 0.8 s",
      "exit code 5; starting it again in 1.6 s",
      "exit code 9, the 5th time within ten minutes: a crash loop, not started again",
    ]);
    assert.equal(await wrapped.stop("SIGTERM"), 9, "ended with the server's last status");
    assert.match(wrapped.output(), /SIGTERM: the server is not running; stopping the agent/);
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
    await outpost().stop();
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await wrapped.waitFor(/Done \([\d.]+s\)! For help, type "help"/);
    await wrapped.waitFor(/\[outpost\] cannot reach Outpost at .*; trying again in [\d.]+ s\. The game server keeps running\./);
    const pid = Number((await wrapped.waitFor(/stand-in pid (\d+)/))[1]);
    assert.match(wrapped.output(), new RegExp(`\\[outpost\\] the server is process ${pid}, in a process group of its own\\n`));
    await outpost().start();
    await connected(wrapped);
    const steve = { name: "Steve", uuid: randomUUID() };
    wrapped.send(`player join ${steve.name} ${steve.uuid}`);
    await eventually(server.id, (s) => s.online && s.playerCount === 1);

    const before = wrapped.output().length;
    await outpost().stop();
    await wrapped.waitFor(/\[outpost\] (lost|cannot reach) Outpost/, before);
    assert.equal(await play(wrapped, steve.name, "/outpost confirm"), unreachableMessage);
    await outpost().start();
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
    await outpost().current()!.runtime.orm.em.fork().getConnection().execute("update servers set name = ? where id = ?", [name, server.id]);
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

  it("says at start which of the server's files Outpost may reach, and refuses a --root that is no directory before starting the server", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "outpost-wrap-"));
    mkdirSync(join(cwd, "world"));
    const unreachable = `http://127.0.0.1:${await freePort()}`;
    const files = ["--root", "world", "--files", "read-only", "--files-deny", "secrets/**"];
    const wrapped = wrap("opa_unused", ["--format", "paper"], { url: unreachable, extra: ["--auth", "online", ...files], cwd });
    await wrapped.waitFor(/\[outpost\] files: read-only \(list and read\) in .*\/world, except secrets\/\*\*\n/);
    await wrapped.waitFor(/Done \(/);
    assert.equal(await wrapped.stop(), 0);

    const refused = wrap("opa_unused", ["--format", "paper"], { url: unreachable, extra: ["--auth", "online", "--root", "missing"], cwd });
    assert.equal(await refused.exited, 2);
    assert.match(refused.output(), /error: --root .*\/missing does not exist\n/);
    assert.doesNotMatch(refused.output(), /starting the server/);
  });
});
