import { randomUUID } from "node:crypto";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { apiKeyHeader } from "../../contract/credentials.ts";
import { useWrapSetting, type Json } from "./wrap-fixture.ts";
import { seriesOf } from "../support/stats.ts";
import { rollUp } from "../../core/stats/rollup.ts";
import { runDueSchedules } from "../../core/servers/schedule-runner.ts";

/**
 * Start, stop, restart and kill from Outpost (servers/startServer …) acting on the real
 * `outpost-agent wrap` process around a stand-in game server that prints Paper's lines: what the
 * process does, the game's state Outpost shows, the agent staying connected while the server is
 * stopped, and the crash policy's waits that a request cuts short. Who may, and every refusal:
 * test/servers/lifecycle.test.ts.
 */
describe("outpost-agent wrap: start, stop, restart and kill from Outpost", function () {
  this.timeout(120_000);
  const { seeded, createServer, eventually, wrap, connected } = useWrapSetting();
  const act = (action: string, serverId: string, reason?: string) => seeded().api("POST", `servers/${action}Server`, { serverId, ...(reason && { reason }) });
  const pidAfter = async (wrapped: ReturnType<typeof wrap>, since: number) => Number((await wrapped.waitFor(/stand-in pid (\d+)/, since))[1]);
  const changes = async (serverId: string): Promise<Json[]> =>
    (await seeded().api("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${serverId}&action=server.game_state_changed`)).events.reverse();

  it("stops the server and keeps the agent connected, starts it again, restarts it as a new process, and says when nothing changed", async () => {
    const server = await createServer("Lifecycle");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    const first = await pidAfter(wrapped, 0);
    await eventually(server.id, (s) => s.gameState === "running" && s.lifecycleAvailable);

    let since = wrapped.output().length;
    const stopped = await act("stop", server.id, "backup");
    assert.deepEqual([stopped.gameState, stopped.changed], ["stopping", true]);
    assert.match(stopped.gameStateDetail, /^stop sent; killed if still running in 30 s/);
    await wrapped.waitFor(/\[outpost\] Outpost asks to stop the server \(owner@example\.com: backup\): sent "stop"/, since);
    await wrapped.waitFor(/stdin> stop\n/, since);
    await wrapped.waitFor(/\[outpost\] the server was stopped from Outpost \(exit code 0\); the agent stays connected/, since);
    const down = await eventually(server.id, (s) => s.gameState === "stopped");
    assert.equal(down.online, true, "the agent stays connected");
    assert.equal(down.gameStateDetail, "exit code 0; stopped from Outpost");
    const again = await act("stop", server.id);
    assert.deepEqual([again.gameState, again.changed], ["stopped", false]);

    since = wrapped.output().length;
    const started = await act("start", server.id);
    assert.deepEqual([started.gameState, started.changed], ["starting", true]);
    const second = await pidAfter(wrapped, since);
    assert.notEqual(second, first);
    await eventually(server.id, (s) => s.gameState === "running");
    assert.deepEqual([(await act("start", server.id)).changed], [false], "already running");

    since = wrapped.output().length;
    const restarted = await act("restart", server.id, "lag");
    assert.deepEqual([restarted.gameState, restarted.changed], ["stopping", true]);
    await wrapped.waitFor(/\[outpost\] the server stopped \(exit code 0\); starting it again, as Outpost asked/, since);
    const third = await pidAfter(wrapped, since);
    assert.ok(third !== second && third !== first, "a new process");
    await eventually(server.id, (s) => s.gameState === "running");

    // Each change names its cause, and the lifecycle call that asked for it.
    const log = await changes(server.id);
    const byOutpost = log.filter((e) => e.details.cause === "outpost").map((e) => [e.details.to, e.details.requestId]);
    assert.deepEqual(byOutpost, [
      ["stopping", stopped.requestId],
      ["stopped", stopped.requestId],
      ["starting", started.requestId],
      ["stopping", restarted.requestId],
      ["stopped", restarted.requestId],
      ["starting", restarted.requestId],
    ]);
    assert.deepEqual(
      log.filter((e) => e.details.to === "running").map((e) => e.details.cause),
      ["game", "game", "game"],
    );
    assert.equal(await wrapped.stop("SIGTERM"), 0);
  });

  it("kills a hung server at once, and kills one that ignores `stop` after the grace period", async () => {
    const server = await createServer("Hung");
    const wrapped = wrap(server.key, ["--format", "paper", "--ignore-stop"], { extra: ["--auth", "online", "--grace-seconds", "1"] });
    await connected(wrapped);
    await eventually(server.id, (s) => s.gameState === "running");

    let since = wrapped.output().length;
    await act("stop", server.id);
    await wrapped.waitFor(/\[outpost\] the server did not stop within 1 s: killing it/, since);
    await wrapped.waitFor(/\[outpost\] the server was stopped from Outpost \(signal SIGKILL\)/, since);
    await eventually(server.id, (s) => s.gameState === "stopped");

    since = wrapped.output().length;
    await act("start", server.id);
    await pidAfter(wrapped, since);
    await eventually(server.id, (s) => s.gameState === "running");
    const killed = await act("kill", server.id, "stuck");
    assert.deepEqual([killed.gameState, killed.gameStateDetail, killed.changed], ["stopped", "killed from Outpost", true]);
    assert.doesNotMatch(wrapped.output().slice(since), /did not stop within/, "no grace period");
    const after = await eventually(server.id, (s) => s.gameState === "stopped");
    assert.equal(after.gameStateDetail, "signal SIGKILL; killed from Outpost");
    assert.equal(after.online, true);
    // The agent ends with the server's last status when its operator stops it.
    assert.equal(await wrapped.stop("SIGTERM"), 128 + 9);
  });

  it("a stop cancels a restart that waits after a crash, and a start cuts the wait short", async () => {
    const server = await createServer("Crashy");
    const wrapped = wrap(server.key, ["--format", "paper"], { extra: ["--auth", "online", "--restart-delay-seconds", "5"] });
    await connected(wrapped);
    await eventually(server.id, (s) => s.gameState === "running");

    let since = wrapped.output().length;
    wrapped.send("crash 3");
    await wrapped.waitFor(/starting it again in 5 s/, since);
    const cancelled = await act("stop", server.id);
    assert.deepEqual([cancelled.gameState, cancelled.gameStateDetail, cancelled.changed], ["stopped", "not started again: stopped from Outpost", true]);
    await sleep(5_500);
    assert.doesNotMatch(wrapped.output().slice(since), /starting the server/, "the waiting restart was cancelled");
    assert.equal((await eventually(server.id, (s) => s.gameState === "stopped")).online, true);

    // A start from Outpost does not wait for the crash policy's delay.
    since = wrapped.output().length;
    await act("start", server.id);
    await pidAfter(wrapped, since);
    await eventually(server.id, (s) => s.gameState === "running");
    since = wrapped.output().length;
    wrapped.send("crash 4");
    await wrapped.waitFor(/starting it again in 5 s \(end 1 of 5/, since);
    const now = await act("start", server.id, "now please");
    assert.deepEqual([now.gameState, now.changed], ["starting", true]);
    await pidAfter(wrapped, since);
    await eventually(server.id, (s) => s.gameState === "running");
    assert.equal(await wrapped.stop("SIGTERM"), 0);
  });

  it("starts a server given up on after a crash loop, with a new count of crashes", async () => {
    const server = await createServer("Looping");
    const wrapped = wrap(server.key, ["--format", "paper"], { extra: ["--auth", "online", "--restart-delay-seconds", "0.05"] });
    await connected(wrapped);
    let since = 0;
    for (let crash = 1; crash <= 5; crash++) {
      await pidAfter(wrapped, since);
      since = wrapped.output().length;
      wrapped.send(`crash ${crash + 1}`);
    }
    await wrapped.waitFor(/a crash loop, so it is not started again\. The agent stays connected \(Outpost can start the server again\)/, since);
    await eventually(server.id, (s) => s.gameState === "crashed");
    assert.equal((await act("stop", server.id)).changed, false, "nothing waits to be cancelled");

    since = wrapped.output().length;
    const started = await act("start", server.id);
    assert.deepEqual([started.gameState, started.changed], ["starting", true]);
    await pidAfter(wrapped, since);
    since = wrapped.output().length;
    wrapped.send("crash 7");
    await wrapped.waitFor(/the server ended \(exit code 7\); starting it again in 0\.05 s \(end 1 of 5/, since);
    assert.equal(await wrapped.stop("SIGTERM"), 7);
  });
});

describe("outpost-agent wrap: a schedule restarts the server at its time, and a run missed while Outpost was down runs once when it is back", function () {
  this.timeout(120_000);
  const { outpost, seeded, createServer, eventually, wrap, connected } = useWrapSetting();
  const sql = (text: string) => outpost().current()!.runtime.orm.em.fork().getConnection().execute(text);

  it("restarts the real server from a schedule, and runs the latest missed time once after Outpost's restart, the older ones recorded as skipped", async () => {
    const server = await createServer("Scheduled");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    await eventually(server.id, (s) => s.gameState === "running");
    const create = (name: string, enabled: boolean) =>
      seeded().api("POST", "servers/createSchedule", { serverId: server.id, name, cron: "* * * * *", timeZone: "UTC", action: "restart", enabled });
    const { schedule } = await create("Every minute", true);
    // On PostgreSQL a second instance is up, and both look at once besides their own 5 s ticks.
    const second = process.env.DATABASE_URL ? await outpost().another() : undefined;
    // Its time has come (as if a minute had passed): the runner, looking every 5 s, restarts the server.
    let since = wrapped.output().length;
    // A minute turning before the runner looks would make this minute's time a missed one (skipped,
    // and the new minute's run): set it well inside a minute (the database is on this machine's clock).
    const atSecond = new Date().getUTCSeconds();
    if (atSecond >= 45) await sleep((61 - atSecond) * 1000);
    await sql(`update server_schedules set next_run_at = date_trunc('minute', now()) where id = '${schedule.id}'`);
    if (second) await Promise.all([outpost().current()!, second].map((instance) => runDueSchedules(instance.runtime.deps)));
    await wrapped.waitFor(/\[outpost\] Outpost asks to restart the server \(schedule "Every minute"\)/, since);
    await wrapped.waitFor(/stand-in pid \d+/, since);
    await eventually(server.id, (s) => s.gameState === "running");
    const once = await seeded().api("GET", `servers/listScheduleRuns?scheduleId=${schedule.id}`);
    assert.deepEqual(
      once.runs.map((r: Json) => r.outcome),
      ["ok"],
      "one run",
    );
    assert.equal(
      wrapped
        .output()
        .slice(since)
        .match(/Outpost asks to restart the server/g)?.length,
      1,
      "one restart",
    );
    await second?.stop();
    await seeded().api("POST", "servers/updateSchedule", {
      scheduleId: schedule.id,
      name: "Every minute",
      cron: "* * * * *",
      timeZone: "UTC",
      action: "restart",
      enabled: false,
    });

    // Another schedule's times pass while Outpost is down, three of them; once it is back (and the
    // agent with it), the latest runs once.
    const { schedule: missed } = await create("While down", false);
    since = wrapped.output().length;
    await sql(`update server_schedules set enabled = true, next_run_at = date_trunc('minute', now()) - interval '3 minutes' where id = '${missed.id}'`);
    await outpost().stop();
    await outpost().start();
    await wrapped.waitFor(/\[outpost\] Outpost asks to restart the server \(schedule "While down"\)/, since);
    await eventually(server.id, (s) => s.gameState === "running");
    const { runs } = await seeded().api("GET", `servers/listScheduleRuns?scheduleId=${missed.id}`);
    assert.deepEqual(
      runs.map((r: Json) => [r.outcome, r.manual]),
      [
        ["ok", false],
        ["skipped", false],
      ],
    );
    // Three times passed while it was down, or four should a minute turn during its restart: the latest ran, those before are one skipped run.
    assert.match(runs[1].detail, /^missed: not run at .*, and [23] later times \(no Outpost instance was up, or the server's agent stayed offline\)$/);
    assert.equal(await wrapped.stop("SIGTERM"), 0);
  });
});

describe("outpost-agent wrap: the server's figures in Outpost", function () {
  this.timeout(120_000);
  const { outpost, seeded, createServer, eventually, wrap, connected } = useWrapSetting();

  it("samples the server's process group (CPU, memory), its players, its directory and Paper's TPS and MSPT (kept out of the live console), and Outpost answers them by getServerStats", async () => {
    const server = await createServer("Measured");
    const wrapped = wrap(server.key, ["--format", "paper"], { extra: ["--auth", "online", "--stats-seconds", "0.5"] });
    await connected(wrapped);
    await eventually(server.id, (s) => s.gameState === "running");
    wrapped.send(`player join Steve ${randomUUID()}`);
    await eventually(server.id, (s) => s.playerCount === 1);
    const from = new Date(Date.now() - 60_000).toISOString();
    let answer: Json;
    for (let i = 0; ; i++) {
      const to = new Date(Date.now() + 60_000).toISOString();
      answer = await seeded().api("GET", `servers/getServerStats?serverId=${server.id}&from=${from}&to=${to}&stepSeconds=10`);
      const points = (metric: string) => seriesOf(answer)[metric] ?? [];
      if (points("players").some((p) => p.worst === 1) && points("cpu").length && points("tps").length && points("mspt").length) break;
      assert.ok(i < 60, `no figures yet: ${JSON.stringify(answer)}`);
      await sleep(250);
    }
    const series = seriesOf(answer);
    assert.equal(answer.resolution, "samples");
    assert.ok(
      series.memory.every((p: Json) => p.value > 1_000_000),
      "the stand-in's resident memory: a Node process, over a megabyte",
    );
    assert.ok(
      series.cpu.every((p: Json) => p.value >= 0 && p.worst < 400),
      "CPU in percent of one core",
    );
    assert.ok(series.disk.length >= 1, "the directory, measured at start");
    assert.ok(
      series.tps.every((p: Json) => p.value === 20 && p.worst === 20),
      "Paper's tps answer: 20.0",
    );
    assert.ok(
      series.mspt.every((p: Json) => p.value === 1.5),
      "Paper's mspt answer: the 1-minute average",
    );
    // Folded into minutes (now, rather than at the next minute's fold), the same figures come from the rollups.
    const runtime = outpost().current()!.runtime;
    await rollUp(runtime.deps.statements.on(runtime.orm.em.fork()), new Date(Date.now() + 90_000), runtime.deps.config.statsRetention);
    const to = new Date(Date.now() + 60_000).toISOString();
    const minutes = await seeded().api("GET", `servers/getServerStats?serverId=${server.id}&from=${from}&to=${to}&stepSeconds=60`);
    assert.equal(minutes.resolution, "1m");
    const folded = seriesOf(minutes);
    assert.ok(folded.tps.length >= 1 && folded.tps.every((p) => p.value === 20 && p.worst === 20), JSON.stringify(folded.tps));
    assert.ok(folded.players.some((p) => p.worst === 1));
    assert.ok(folded.memory.every((p) => p.value > 1_000_000));
    const output = wrapped.output();
    assert.match(output, /stdin> tps\n/, "asked once, as the console's own command");
    assert.equal(output.match(/stdin> tps\n/g)!.length, 1, "at most once a minute");
    assert.doesNotMatch(output, /Outpost runs a console command: tps/, "not announced as Outpost's");
    // The answers stay out of the live console that Outpost keeps.
    const servers = createClient(
      ServersService,
      createConnectTransport({
        baseUrl: `${outpost().baseUrl}/api/rpc`,
        httpVersion: "1.1",
        interceptors: [(next) => (req) => (req.header.set(apiKeyHeader, seeded().apiKey), next(req))],
      }),
    );
    const abort = new AbortController();
    const first = await servers.watchConsole({ serverId: server.id }, { signal: abort.signal })[Symbol.asyncIterator]().next();
    abort.abort();
    const recent: string[] = first.done ? [] : first.value.lines;
    assert.ok(
      recent.some((line) => /Steve joined the game/.test(line)),
      `the recent lines: ${recent.join("\n")}`,
    );
    assert.ok(!recent.some((line) => /TPS from last|Server tick times|◴/.test(line)), `no answer of tps or mspt: ${recent.join("\n")}`);
    assert.equal(await wrapped.stop("SIGTERM"), 0);
  });
});
