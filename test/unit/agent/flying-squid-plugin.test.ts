import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createRouterTransport, type Transport } from "@connectrpc/connect";
import { AgentService } from "../../../gen/outpost/agent/v1/agent_service_pb.js";
import { optionsFromSettings, outpostPlugin, type OutpostPluginOptions, type SquidPlayer, type SquidServer } from "../../../agent/flying-squid.ts";
import { FilesMode } from "../../../gen/outpost/servers/v1/resources_pb.js";
import type { Player } from "../../../agent/client.ts";

/** A flying-squid player: `chat` throws once they left, as flying-squid's does on a closed client. */
class FakePlayer extends EventEmitter implements SquidPlayer {
  username: string;
  uuid: string;
  told: string[] = [];
  left = false;
  constructor(username: string, uuid: string) {
    super();
    this.username = username;
    this.uuid = uuid;
  }
  chat(message: string | { text: string }): void {
    if (this.left) throw new Error("write after end");
    this.told.push(typeof message === "string" ? message : message.text);
  }
  join(serv: EventEmitter): this {
    serv.emit("newPlayer", this);
    this.emit("connected");
    return this;
  }
  leave(): void {
    this.left = true;
    this.emit("disconnected");
  }
}

type Command = Parameters<SquidServer["commands"]["add"]>[0];

/** The few members of a flying-squid server the plugin uses, with the plugin added (no console). */
function squidWithPlugin(transport: Transport, files?: OutpostPluginOptions["files"]) {
  const events = new EventEmitter();
  const logs = { info: [] as string[], warn: [] as string[], err: [] as string[] };
  let outpost: Command | undefined;
  const serv = {
    info: (line: string) => void logs.info.push(line),
    warn: (line: string) => void logs.warn.push(line),
    err: (line: string) => void logs.err.push(line),
    commands: { add: (command: Command) => void (outpost = command), use: async () => undefined },
    players: [],
    on: (event: string, listener: (player: FakePlayer) => void) => events.on(event, listener),
    once: (event: string, listener: () => void) => events.once(event, listener),
  } as unknown as SquidServer;
  outpostPlugin({ url: "http://outpost.test", key: "opa_test", console: false, files, agent: { transport } }).server(serv, { "online-mode": false });
  return {
    events,
    logs,
    /** The player types `/outpost <params>`; resolves when the plugin is done with it. */
    type: (player: FakePlayer, params: string) => outpost!.action(params, { player }),
    close: () => void events.emit("close"),
  };
}

/** Outpost, as far as the agent's stream goes: it welcomes, records the players, answers commands. */
function fakeOutpost(answer: () => Promise<{ accepted: boolean; message: string }> = async () => ({ accepted: false, message: "No." })) {
  const reported: Player[][] = [];
  /** Hello's `files` of each connection. */
  const filesModes: FilesMode[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(AgentService, {
      async *connect(requests) {
        for await (const { message } of requests) {
          if (message.case === "hello") {
            filesModes.push(message.value.files);
            yield { message: { case: "welcome", value: { serverId: "s1", serverName: "Survival", organizationSlug: "acme", heartbeatSeconds: 30 } } };
          } else if (message.case === "players") {
            reported.push(message.value.players.map(({ name, uuid }) => ({ name, uuid })));
          } else if (message.case === "loginCommand") {
            yield { message: { case: "loginReply", value: { requestId: message.value.requestId, ...(await answer()) } } };
          }
        }
      },
    });
  });
  return { transport, reported, filesModes };
}

/** Waits until `check` holds (the agent talks to Outpost asynchronously). */
async function until(check: () => unknown): Promise<void> {
  for (let i = 0; !check(); i++) {
    if (i > 500) assert.fail(`never came true: ${check}`);
    await sleep(10);
  }
}

const steveUuid = "069a79f4-44e9-4726-a5be-fca90e38aaf5";
const alexUuid = "853c80ef-3c37-49fd-aa49-938b674adae6";

describe("agent: the flying-squid plugin, on a stand-in server", () => {
  it("reports each session by itself: one of two with the same UUID leaving keeps the other online", async () => {
    const outpost = fakeOutpost();
    const squid = squidWithPlugin(outpost.transport);
    try {
      await until(() => squid.logs.info.some((line) => line.startsWith("[Outpost] connected")));
      // Offline mode: two sessions of the same name, and so of the same UUID.
      const first = new FakePlayer("Steve", steveUuid).join(squid.events);
      const second = new FakePlayer("Steve", steveUuid).join(squid.events);
      first.leave();
      new FakePlayer("Alex", alexUuid).join(squid.events);
      await until(() => outpost.reported.at(-1)?.some((p) => p.name === "Alex"));
      assert.deepEqual(outpost.reported.at(-1), [
        { name: "Steve", uuid: steveUuid },
        { name: "Alex", uuid: alexUuid },
      ]);
      second.leave();
      await until(() => outpost.reported.at(-1)?.length === 1);
      assert.deepEqual(outpost.reported.at(-1), [{ name: "Alex", uuid: alexUuid }]);
    } finally {
      squid.close();
    }
  });

  it("logs the answer for a player who left before Outpost gave it, instead of throwing into flying-squid", async () => {
    let release: (() => void) | undefined;
    const outpost = fakeOutpost(() => new Promise((resolve) => (release = () => resolve({ accepted: false, message: "No sign-in is waiting for that code." }))));
    const squid = squidWithPlugin(outpost.transport);
    try {
      await until(() => squid.logs.info.some((line) => line.startsWith("[Outpost] connected")));
      const steve = new FakePlayer("Steve", steveUuid).join(squid.events);
      const typed = squid.type(steve, "login ABCD-1234");
      await until(() => release);
      steve.leave();
      release!();
      await typed;
      assert.deepEqual(steve.told, []);
      assert.deepEqual(squid.logs.warn, ["[Outpost] could not tell Steve: write after end"]);
    } finally {
      squid.close();
    }
  });

  it("tells a player that signing in is unavailable when Outpost refused the agent's key", async () => {
    const refusing = createRouterTransport(({ service }) => {
      service(AgentService, {
        async *connect() {
          throw new ConnectError("this agent key is not valid", Code.Unauthenticated);
        },
      });
    });
    const squid = squidWithPlugin(refusing);
    try {
      await until(() => squid.logs.err.length);
      assert.deepEqual(squid.logs.err, [
        "[Outpost] Outpost refused the agent: this agent key is not valid; players cannot sign in here until the server restarts with a working key",
      ]);
      const steve = new FakePlayer("Steve", steveUuid).join(squid.events);
      await squid.type(steve, "login ABCD-1234");
      assert.deepEqual(steve.told, ["Signing in through Outpost is not available on this server right now."]);
    } finally {
      squid.close();
    }
  });

  it("serves the server's files only when given a root, and warns when that root does not open", async () => {
    const base = mkdtempSync(join(tmpdir(), "outpost-squid-files-"));
    const outpost = fakeOutpost();
    const squids = [squidWithPlugin(outpost.transport), squidWithPlugin(outpost.transport, { root: base, mode: "read-only" })];
    const broken = squidWithPlugin(outpost.transport, { root: join(base, "gone") });
    try {
      await until(() => outpost.filesModes.length === 3);
      assert.deepEqual([...outpost.filesModes].sort(), [FilesMode.OFF, FilesMode.OFF, FilesMode.READ_ONLY]);
      assert.match(broken.logs.warn.join("\n"), /\[Outpost\] files are off: the files root .*gone cannot be served/);
    } finally {
      for (const squid of [...squids, broken]) squid.close();
      rmSync(base, { recursive: true, force: true });
    }
  });

  it("reads files from the plugins setting as the command line reads its flags", () => {
    const settings = { url: "http://outpost.test", key: "opa_test" };
    assert.equal(optionsFromSettings(settings).files, undefined);
    assert.deepEqual(optionsFromSettings({ ...settings, files: { root: "/srv/squid", mode: "read-only", deny: ["secrets/**"] } }).files, {
      root: "/srv/squid",
      mode: "read-only",
      deny: ["secrets/**"],
    });
    assert.throws(() => optionsFromSettings({ ...settings, files: { mode: "on" } }), /"files" needs "root"/);
    assert.throws(() => optionsFromSettings({ ...settings, files: { root: "/srv/squid", mode: "rw" } }), /"files.mode" is one of on, read-only, off/);
    assert.throws(() => optionsFromSettings({ ...settings, files: { root: "/srv/squid", deny: "secrets/**" } }), /"files.deny" is a list of globs/);
  });
});
