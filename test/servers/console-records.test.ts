import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { ConnectError, Code } from "@connectrpc/connect";
import { useConsoleSetting, type Json } from "./console-fixture.ts";
import { settleNeverReceived } from "../../core/servers/console-command-queries.ts";

/**
 * What really happened to a console command, whatever fails: it is recorded (pending) before it
 * is sent, and none is sent that could not be; an answer settles it, one the database cannot
 * take still reaches its caller; a command sent and not answered is outcome_unknown, its record
 * pending until the agent's report settles it (its late answer, the results it sends again on
 * its next connection, the commands of its run it never got); servers/getConsoleCommand reads it.
 */
describe("servers: console commands on record", function () {
  this.timeout(60_000);
  const setting = useConsoleSetting();
  const { api, execute, createServer, connect, echo, consoleEvents } = setting;
  const sql = (query: string, params: unknown[] = []) => setting.t().outpost.runtime.orm.em.fork().getConnection().execute(query, params);
  const recordOf = async (serverId: string, requestId: string) =>
    (await api("GET", `servers/getConsoleCommand?serverId=${serverId}&requestId=${requestId}`)).command as Json;
  /** The record once it is no longer pending (the agent's report is asynchronous), within 5 s. */
  const settled = async (serverId: string, requestId: string) => {
    for (let i = 0; i < 100; i++) {
      const record = await recordOf(serverId, requestId);
      if (record.status !== "pending") return record;
      await sleep(50);
    }
    return recordOf(serverId, requestId);
  };
  const settledEvents = async (serverId: string) => {
    const { events } = await api("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${serverId}&action=server.console_command_settled`);
    return (events as Json[]).map((e) => [e.actor.kind ?? e.actorKind, e.details.command, e.details.outcome]);
  };
  /** Ends the server's agent stream from Outpost's side (as a draining instance does); the agent reconnects. */
  const dropStream = async (serverId: string) => {
    const [{ agent_connection_id: connectionId }] = await sql("select agent_connection_id from servers where id = ?", [serverId]);
    setting.t().outpost.runtime.agents.holding(connectionId)!.end(new ConnectError("dropped by the test", Code.Unavailable));
    return connectionId as string;
  };

  it("sends no command it cannot record first: the database's failure answers 503, and the agent never gets it", async () => {
    const server = await createServer("Unrecorded");
    const ran: string[] = [];
    await connect(server.key, { console: async (command) => (ran.push(command), echo!(command, new AbortController().signal)) });
    const sql = (query: string) => setting.t().outpost.runtime.orm.em.fork().getConnection().execute(query);
    // The database goes away exactly at the record (57P01: the server is shutting down).
    await sql(`create function refuse_console_command() returns trigger language plpgsql as $$
      begin if new.command = 'give steve diamond 64' then raise exception 'terminating connection' using errcode = '57P01'; end if; return new; end $$`);
    await sql(`create trigger refuse_console_command before insert on console_commands for each row execute function refuse_console_command()`);
    try {
      const res = await execute(server.id, "give steve diamond 64");
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.ok(res.body.code === "unavailable");
      assert.deepEqual(ran, [], "never sent");
      const after = await execute(server.id, "list");
      assert.equal(after.status, 200);
      assert.deepEqual(ran, ["list"]);
    } finally {
      await sql(`drop trigger refuse_console_command on console_commands`);
      await sql(`drop function refuse_console_command`);
    }
  });

  it("gives the caller an answer the database cannot record (the command ran), and keeps the record pending", async () => {
    const server = await createServer("Answered");
    await connect(server.key, { console: echo });
    const sql = (query: string) => setting.t().outpost.runtime.orm.em.fork().getConnection().execute(query);
    await sql(`create function refuse_settle() returns trigger language plpgsql as $$
      begin if new.status <> 'pending' then raise exception 'terminating connection' using errcode = '57P01'; end if; return new; end $$`);
    await sql(`create trigger refuse_settle before update on console_commands for each row execute function refuse_settle()`);
    let res;
    try {
      res = await execute(server.id, "ban griefer");
    } finally {
      await sql(`drop trigger refuse_settle on console_commands`);
      await sql(`drop function refuse_settle`);
    }
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.output, ["> ban griefer", "done"], "told it ran, so no one retries it");
    const record = (await api("GET", `servers/getConsoleCommand?serverId=${server.id}&requestId=${res.body.requestId}`)).command;
    assert.equal(record.status, "pending");
  });

  it("a slow agent: 504 after 5 seconds, never a hang, the outcome unknown and the record pending", async () => {
    const server = await createServer("Slow");
    let asked!: () => void;
    const reached = new Promise<void>((resolve) => (asked = resolve));
    await connect(server.key, { console: () => (asked(), new Promise(() => {})) });
    const started = Date.now();
    const res = await execute(server.id, "save-all");
    const took = Date.now() - started;
    await reached;
    assert.equal(res.status, 504);
    assert.deepEqual([res.body.code, res.body.reason], ["deadline_exceeded", "outcome_unknown"]);
    const [, requestId] = /request_id (\S+) tells/.exec(res.body.message) ?? [];
    assert.equal(
      res.body.message,
      `the agent did not answer within 5 seconds: the command may have run; servers/getConsoleCommand with request_id ${requestId} tells once its outcome is known`,
    );
    assert.ok(took >= 4_900 && took < 10_000, `answered after ${took} ms`);
    assert.deepEqual(
      (await consoleEvents(server.id)).map((e) => [e.details.outcome, e.details.requestId]),
      [["unknown", requestId]],
    );
    const record = (await api("GET", `servers/getConsoleCommand?serverId=${server.id}&requestId=${requestId}`)).command;
    assert.deepEqual([record.command, record.status, record.settledAt], ["save-all", "pending", undefined], "it may have run: still pending");
  });

  it("an agent that goes away while a command waits: 504 at once, the outcome unknown", async () => {
    const server = await createServer("Leaving");
    const agent = await connect(server.key, {
      console: () => {
        void agent.stop();
        return new Promise(() => {});
      },
    });
    const res = await execute(server.id, "stop");
    assert.equal(res.status, 504);
    assert.equal(res.body.reason, "outcome_unknown");
    assert.match(res.body.message, /^the server's agent went offline before it answered: the command may have run; servers\/getConsoleCommand/);
    assert.deepEqual(
      (await consoleEvents(server.id)).map((e) => e.details.outcome),
      ["unknown"],
    );
  });

  it("settles a command whose answer came after its caller was told outcome_unknown: ran, with its output", async () => {
    const server = await createServer("Late");
    await connect(server.key, { console: (command) => sleep(5_600).then(() => ({ success: true, output: [`> ${command}`, "late"] })) });
    const res = await execute(server.id, "save-all");
    assert.deepEqual([res.status, res.body.reason], [504, "outcome_unknown"]);
    const requestId = /request_id (\S+) tells/.exec(res.body.message)![1];
    const record = await settled(server.id, requestId);
    assert.deepEqual([record.status, record.output], ["ran", ["> save-all", "late"]]);
    assert.deepEqual(await settledEvents(server.id), [["agent", "save-all", "ran"]]);
  });

  it("settles a command that ran while the agent's stream dropped, from the result the agent sends again on its next connection", async () => {
    const server = await createServer("Dropped");
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await connect(server.key, {
      reconnect: true,
      backoff: { initialMs: 50, maxMs: 100 },
      console: async (command) => (await held, { success: true, output: [`> ${command}`, "given"] }),
    });
    const call = execute(server.id, "give steve diamond 1");
    await sleep(200);
    await dropStream(server.id);
    const res = await call;
    assert.deepEqual([res.status, res.body.reason], [504, "outcome_unknown"], "the stream ended before the answer: it may have run");
    const requestId = /request_id (\S+) tells/.exec(res.body.message)![1];
    release();
    const record = await settled(server.id, requestId);
    assert.deepEqual([record.status, record.output], ["ran", ["> give steve diamond 1", "given"]]);
  });

  it("settles as not sent a command of the agent's run it never got, and leaves another run's pending", async () => {
    const server = await createServer("Lost");
    await connect(server.key, { reconnect: true, backoff: { initialMs: 50, maxMs: 100 }, console: echo });
    const first = await execute(server.id, "list");
    assert.equal(first.status, 200);
    const [{ agent_connection_id: connectionId, agent_boot_id: bootId, owner }] = await sql(
      "select s.agent_connection_id, s.agent_boot_id, c.user_id as owner from servers s join console_commands c on c.server_id = s.id where s.id = ?",
      [server.id],
    );
    assert.ok(bootId, "the agent named its run");
    // Two records on the first stream the agent never got (lost on the way), one of another run.
    const lost = randomUUID();
    const otherRun = randomUUID();
    for (const [id, boot] of [
      [lost, bootId],
      [otherRun, randomUUID()],
    ]) {
      await sql(
        "insert into console_commands (request_id, server_id, user_id, command, status, connection_id, agent_boot_id, sent_at) values (?, ?, ?, 'op griefer', 'pending', ?, ?, now())",
        [id, server.id, owner, connectionId, boot],
      );
    }
    await dropStream(server.id);
    const record = await settled(server.id, lost);
    assert.equal(record.status, "not_sent");
    assert.match(record.error, /never received/);
    assert.equal((await recordOf(server.id, otherRun)).status, "pending", "another run's: this one cannot say");
    assert.equal((await recordOf(server.id, first.body.requestId)).status, "ran", "a command it got is not touched");
    assert.deepEqual(await settledEvents(server.id), [["agent", "op griefer", "not_sent"]]);
  });

  it("when the agent has forgotten the oldest commands of its run, settles only those sent after the oldest it remembers", async () => {
    const server = await createServer("Forgetful");
    await connect(server.key, { console: echo });
    const [{ user_id: owner }] = await sql("select id as user_id from users where email = 'owner@example.com'");
    const boot = randomUUID();
    const at = (seconds: number) => new Date(Date.UTC(2026, 10, 29, 12, 0, seconds));
    const [before, remembered, lostAfter] = [randomUUID(), randomUUID(), randomUUID()];
    for (const [id, seconds] of [
      [before, 0],
      [remembered, 10],
      [lostAfter, 20],
    ] as const) {
      await sql(
        "insert into console_commands (request_id, server_id, user_id, command, status, connection_id, agent_boot_id, sent_at) values (?, ?, ?, 'list', 'pending', ?, ?, ?)",
        [id, server.id, owner, randomUUID(), boot, at(seconds)],
      );
    }
    const runtime = setting.t().outpost.runtime;
    const settle = (complete: boolean) =>
      settleNeverReceived(runtime.deps.statements.on(runtime.orm.em.fork()), {
        serverId: server.id,
        bootId: boot,
        connectionId: randomUUID(),
        received: [remembered, "not an id"],
        complete,
        error: "never received",
        at: new Date(),
      });
    assert.deepEqual(
      (await settle(false)).map((r) => r.request_id),
      [lostAfter],
      "one sent before the oldest it remembers may have been forgotten: left pending",
    );
    assert.equal((await recordOf(server.id, before)).status, "pending");
    assert.deepEqual(
      (await settle(true)).map((r) => r.request_id),
      [before],
    );
  });

  it("keeps a NUL the console printed as U+FFFD, and the agent's stream up", async () => {
    const server = await createServer("Nul");
    await connect(server.key, { console: async () => ({ success: true, output: ["a\u0000b"] }) });
    const res = await execute(server.id, "list");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.output, ["a\uFFFDb"]);
    assert.deepEqual((await recordOf(server.id, res.body.requestId)).output, ["a\uFFFDb"]);
    assert.equal((await execute(server.id, "list")).status, 200);
  });
});
