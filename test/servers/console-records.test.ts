import assert from "node:assert/strict";
import { useConsoleSetting } from "./console-fixture.ts";

/**
 * What really happened to a console command, whatever fails: it is recorded (pending) before it
 * is sent, and none is sent that could not be; an answer settles it, one the database cannot
 * take still reaches its caller; a command sent and not answered is outcome_unknown, its record
 * pending; servers/getConsoleCommand reads the record.
 */
describe("servers: console commands on record", function () {
  this.timeout(60_000);
  const setting = useConsoleSetting();
  const { api, execute, createServer, connect, echo, consoleEvents } = setting;

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
});
