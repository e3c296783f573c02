import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { pino, type Logger } from "pino";
import { maxMessageBytes, type Bus } from "../../core/bus.ts";
import { createPostgresBus, maxPendingPublishes } from "../../core/bus-postgres.ts";
import { busChannel } from "../../core/bus-queries.ts";
import { seal } from "../../core/bus-envelope.ts";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";

/** Waits until `done()` holds, failing with `what` if it does not within `ms` (a bound on a hang, not a speed). */
async function until(what: string, done: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

/** Whether `promise` has settled by the time the microtasks queued now have run. */
async function settledNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await sleep(0);
  return settled;
}

/**
 * The bus across instances on a real PostgreSQL server, with a TCP proxy between one bus and the
 * database that drops, refuses or stalls its connections as a network or a restarting database
 * does: the bus hears the others again once the database is back, however long it was away; a
 * stalled connection holds no publish for long, nor the bus's close; and what reaches the channel
 * without the instances' key is not heard.
 */
onPostgresServer(() =>
  describe("the bus on PostgreSQL: outages, stalls, and forged messages", function () {
    this.timeout(60_000);
    let database: TestDatabase;
    let proxy: TcpProxy;
    const key = randomBytes(32).toString("base64url");
    const buses: Bus[] = [];
    let warnings: Array<{ msg: string; why?: string }>;
    let logger: Logger;

    const bus = (url: string, secret = key) => {
      const made = createPostgresBus({ url, logger, key: () => secret });
      buses.push(made);
      return made;
    };
    /** Whether `listener` hears `speaker` (publishing again until it does, or `ms` passed). */
    const hears = async (listener: Bus, speaker: Bus, ms = 20_000) => {
      const topic = `probe:${randomUUID()}`;
      let heard = false;
      const unsubscribe = listener.subscribe(topic, () => (heard = true));
      try {
        await until("the bus hears the other instance", async () => (await speaker.publish(topic), heard), ms);
      } finally {
        unsubscribe();
      }
    };

    beforeEach(async () => {
      database = await createTestDatabase();
      proxy = await startTcpProxy(database.url);
      warnings = [];
      logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
    });
    afterEach(async () => {
      await Promise.all(buses.splice(0).map((b) => b.close()));
      await proxy.close();
      await database.drop();
    });

    it("an instance that started while the database was down hears the bus once it is back", async () => {
      proxy.refuse(true);
      const far = bus(proxy.url);
      await far.ready;
      await until("a second attempt after the first failed", () => proxy.accepted >= 2);
      proxy.refuse(false);
      await hears(far, bus(database.url));
    });

    it("after an outage longer than one retry, it reconnects and LISTENs again", async () => {
      const far = bus(proxy.url);
      const near = bus(database.url);
      await Promise.all([far.ready, near.ready]);
      await hears(far, near);
      proxy.refuse(true);
      const before = proxy.accepted;
      proxy.cut();
      await until("two failed reconnects", () => proxy.accepted >= before + 2);
      proxy.refuse(false);
      await hears(far, near);
    });

    it("a stalled connection holds a sign-in event behind console output no longer than its timeout; it arrives here, and the bus comes back", async () => {
      const far = bus(proxy.url);
      const near = bus(database.url);
      await Promise.all([far.ready, near.ready]);
      const heard: string[] = [];
      far.subscribe("authorization:s", (payload) => heard.push(payload));
      proxy.stall();
      const output = far.publish("console-output:x", "lines", { lossy: true });
      const signIn = far.publish("authorization:s", "changed");
      assert.equal(await signIn, false, "not sent to the other instances");
      assert.deepEqual(heard, ["changed"], "delivered on this instance");
      assert.equal(await output, false);
      proxy.resume();
      await hears(far, near);
    });

    it(`past ${maxPendingPublishes} waiting publishes, console output is dropped and other messages are delivered here, at once; close settles every publish`, async () => {
      const far = bus(proxy.url);
      await far.ready;
      proxy.stall();
      const first = far.publish("console-output:x", "0", { lossy: true });
      const waiting = Array.from({ length: maxPendingPublishes }, (_, i) => far.publish("console-output:x", String(i + 1), { lossy: true }));
      const heard: string[] = [];
      far.subscribe("authorization:s", (payload) => heard.push(payload));
      const dropped = far.publish("console-output:x", "over", { lossy: true });
      const local = far.publish("authorization:s", "over");
      assert.equal(await settledNow(dropped), true, "console output past the cap does not wait");
      assert.equal(await settledNow(local), true, "nor does a sign-in event");
      assert.deepEqual([await dropped, await local, heard], [false, false, ["over"]]);
      assert.equal(await settledNow(first), false, "while the first still waits for the stalled connection");
      assert.ok(warnings.some((w) => w.msg.startsWith("console output was dropped")));
      await far.close();
      assert.ok((await Promise.all([first, ...waiting])).every((sent) => sent === false));
    });

    it("close() during a reconnect leaves no connection listening", async () => {
      const far = bus(proxy.url);
      await far.ready;
      proxy.stall();
      const before = proxy.accepted;
      proxy.cut();
      await until("the reconnect under way", () => proxy.accepted > before && proxy.open === 1);
      const closing = far.close();
      proxy.resume();
      await closing;
      await until("no connection open through the proxy", () => proxy.open === 0);
    });

    it("hears no message without the key, with another key, altered, old, or sent again; and says so in the log", async () => {
      const a = bus(database.url);
      const b = bus(database.url);
      const stranger = bus(database.url, randomBytes(32).toString("base64url"));
      await Promise.all([a.ready, b.ready, stranger.ready]);
      const heard: string[] = [];
      a.subscribe("console-command:c", (payload) => heard.push(payload));
      const raw = new pg.Client({ connectionString: database.url });
      await raw.connect();
      try {
        const captured: string[] = [];
        raw.on("notification", (message) => captured.push(message.payload!));
        await raw.query(`listen ${busChannel}`);
        await b.publish("console-command:c", "genuine");
        await until("the genuine message heard", () => heard.length === 1 && captured.length === 1);

        const notify = (wire: string) => raw.query("select pg_notify($1, $2)", [busChannel, wire]);
        await notify("console-command:c\nunauthenticated");
        await stranger.publish("console-command:c", "another key");
        await notify(captured[0].replace("genuine", "altered"));
        await notify(seal(key, "console-command:c", "old", Date.now() - 120_000));
        await notify(captured[0]);
        // Sent again with its tag spelled another way: the same MAC bytes (the tag's last
        // character has spare bits), so only comparing the tag as written refuses it.
        const [tag, rest] = [captured[0].slice(0, captured[0].indexOf("\n")), captured[0].slice(captured[0].indexOf("\n"))];
        const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        const respelled = tag.slice(0, -1) + alphabet[alphabet.indexOf(tag.at(-1)!) ^ 1];
        assert.deepEqual(Buffer.from(respelled, "base64url"), Buffer.from(tag, "base64url"));
        await notify(respelled + rest);
        await notify(seal(key, "console-command:c", "last", Date.now()));
        await until("the last message heard", () => heard.includes("last"));
        assert.deepEqual(heard, ["genuine", "last"]);
        assert.ok(
          warnings.some((w) => w.msg.startsWith("a bus message failed authentication")),
          "logged",
        );
      } finally {
        await raw.end();
      }
    });

    it("sends messages published at once together, and each instance hears every one in the order published", async () => {
      const a = bus(database.url);
      const b = bus(database.url);
      await Promise.all([a.ready, b.ready]);
      const heard: string[] = [];
      b.subscribe("order", (value) => heard.push(value));
      // Large ones too: a batch of them is far over one message's size.
      const payloads = Array.from({ length: maxPendingPublishes }, (_, i) => `${i}:${"x".repeat(i % 3 === 0 ? 7_000 : 10)}`);
      const sent = await Promise.all(payloads.map((payload) => a.publish("order", payload)));
      assert.ok(sent.every(Boolean));
      await until("every message heard", () => heard.length === payloads.length);
      assert.deepEqual(heard, payloads);
    });

    it(`carries a message of ${maxMessageBytes} bytes, envelope included`, async () => {
      const a = bus(database.url);
      const b = bus(database.url);
      await Promise.all([a.ready, b.ready]);
      const topic = "console-result:r";
      const room = maxMessageBytes - topic.length - 1;
      const payload = "é".repeat(Math.floor(room / 2)) + "x".repeat(room % 2);
      assert.equal(Buffer.byteLength(`${topic}\n${payload}`), maxMessageBytes);
      let heard: string | undefined;
      b.subscribe(topic, (value) => (heard = value));
      assert.equal(await a.publish(topic, payload), true);
      await until("heard", () => heard !== undefined);
      assert.equal(heard, payload);
    });
  }),
);
