import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { logFormats, plainLine, readableLine, readLogLine } from "../../../agent/log-formats.ts";
import { tellraw } from "../../../agent/tellraw.ts";
import { propertyValue } from "../../../agent/server-properties.ts";

const steve = "069a79f4-44e9-4726-a5be-fca90e38aaf5";

/** What each message entry's example means. */
const expected: Record<string, unknown> = {
  "Server ready": { kind: "ready" },
  "Player's UUID": { kind: "uuid", name: "Steve", uuid: steve },
  "Player joined": { kind: "join", name: "Steve" },
  "Player logged in": { kind: "join", name: "Steve" },
  "Player left": { kind: "leave", name: "Steve" },
  "Player lost connection": { kind: "leave", name: "Steve" },
  "Player's command": { kind: "command", name: "Steve", text: "/outpost login ABCD-1234" },
};

describe("wrap's console line table", () => {
  for (const entry of logFormats) {
    it(`reads its own example: ${entry.name}`, () => {
      const understood = readLogLine(entry.example);
      if (entry.kind === "frame") {
        assert.equal(understood, undefined, "a frame's example carries no event");
        assert.ok(entry.pattern.exec(entry.example)?.groups?.message);
        return;
      }
      assert.equal(understood?.message, entry.name);
      assert.deepEqual(understood?.event, expected[entry.name]);
    });
  }

  it("reads every message in every frame, coloured or not, and behind a console prompt", () => {
    const messages = [`UUID of player Steve is ${steve}`, "Steve joined the game", "Steve left the game", "Steve issued server command: /outpost confirm"];
    for (const message of messages) {
      const thread = message.startsWith("UUID") ? "User Authenticator #2" : "Server thread";
      const paper = readLogLine(`[01:02:03 INFO]: \u001b[0;33;22m${message}\u001b[m`);
      const vanilla = readLogLine(`\r> [01:02:03] [${thread}/INFO]: ${message}\r`);
      const fabric = readLogLine(`\u001b[34m[01:02:03]\u001b[m \u001b[32m[${thread}/INFO]\u001b[m \u001b[36m(Minecraft)\u001b[m ${message}`);
      assert.ok(paper, message);
      assert.deepEqual(vanilla, { ...paper, frame: "Vanilla line" });
      assert.deepEqual(fabric, { ...paper, frame: "Fabric line" });
    }
    assert.deepEqual(readLogLine("[01:02:03 INFO]: Alex (formerly known as Steve) joined the game")?.event, { kind: "join", name: "Alex" });
    assert.deepEqual(readLogLine("[01:02:03] [Server thread/INFO]: Steve[<ip address withheld>] logged in with entity id 7 at (1.0, 2.0, 3.0)")?.event, {
      kind: "join",
      name: "Steve",
    });
    for (const address of ["/[0:0:0:0:0:0:0:1]:5000", "/[2001:db8::1%eth0]:50123", "local:E:4b1f"]) {
      const line = `[01:02:03 INFO]: Steve[${address}] logged in with entity id 7 at ([world]1.0, 2.0, 3.0)`;
      assert.deepEqual(readLogLine(line)?.event, { kind: "join", name: "Steve" }, address);
    }
  });

  it("ignores unknown, partial and look-alike lines", () => {
    const ignored = [
      "",
      "java.lang.IllegalStateException: boom",
      "\tat net.minecraft.server.MinecraftServer.runServer(MinecraftServer.java:1234)",
      "[01:02:03 INFO]: <Steve> Steve joined the game",
      "[01:02:03 INFO]: [Not Secure] <Mallory> Steve issued server command: /outpost confirm",
      "[01:02:03 INFO]: [Essentials] Steve issued server command: /outpost confirm",
      "[01:02:03 WARN]: Steve issued server command: /outpost confirm",
      "[01:02:03 INFO]: Steve (/127.0.0.1:50000) lost connection: Disconnected",
      `[01:02:03 INFO]: UUID of player Steve is ${steve.slice(0, 20)}`,
      `[01:02:03 INFO]: UUID of player @a is ${steve}`,
      "[01:02:03 INFO]: Steve issued server command",
      "[01:02:03 INFO]: Steve issued server command: outpost confirm",
      "[01:02:03 INFO]: A_name_far_too_long joined the game",
      "[01:02:03 INFO]: Ste",
      "[01:02:03 INFO]: Steve[/[::1]:5000 logged in with entity id 7 at (1.0, 2.0, 3.0)",
      "[01:02:03 INFO]: Steve[/[[::1]]:5000] logged in with entity id 7 at (1.0, 2.0, 3.0)",
      "[01:02:03] [Server thread/INFO]: UUID of player Steve is " + steve,
      "[01:02:03] [Server thread/INFO] (Minecraft) UUID of player Steve is " + steve,
      "[01:02:03] [Server thread/INFO] (SomeMod) Steve joined the game",
      "[01:02:03] [Server thread/INFO] (Minecraft): Steve joined the game",
      "[01:02:03] [Server thread/WARN] (Minecraft) Steve joined the game",
      "[01:02:03] [Server thread/INFO",
      "01:02:03 INFO]: Steve joined the game",
    ];
    for (const line of ignored) assert.equal(readLogLine(line), undefined, line);
  });

  it("reads no line with a control character or a line separator in it, colours and one line end aside", () => {
    const command = (middle: string) => `[01:02:03 INFO]: Steve issued server command: /outpost login${middle}ABCD-1234`;
    assert.ok(readLogLine(command(" ")));
    for (const c of ["\u2028", "\u2029", "\u0085", "\r", "\t", "\u0000", "\u0007", "\u007f", "\u009b", "\u001b", "\u001b[2K\r"]) {
      assert.equal(readLogLine(command(`${c} `)), undefined, JSON.stringify(c));
    }
    const uuidLine = `[01:02:03] [User Authenticator #1/INFO]: UUID of player Steve is ${steve}`;
    assert.equal(readLogLine(`[01:02:03 INFO]: <Mallory> hi\u2028${uuidLine}`), undefined);
    assert.equal(readLogLine(`${uuidLine}\u0085`), undefined);
    assert.ok(readLogLine(`${uuidLine}\r`));
    assert.equal(readableLine("\r> \u001b[2K\u001b[33m[01:02:03 INFO]: hi\u001b[m\r"), "[01:02:03 INFO]: hi");
    assert.equal(readableLine("[01:02:03 INFO]: hi\r\r"), undefined);
  });

  it("shows a line without colours or prompt, text otherwise unchanged", () => {
    assert.equal(plainLine("> \u001b[33;1m[12:00:00 INFO]: héllo §a\u001b[m\r"), "[12:00:00 INFO]: héllo §a");
  });

  it("is the table docs/servers.md shows", () => {
    const docs = readFileSync(new URL("../../../docs/servers.md", import.meta.url), "utf8");
    for (const entry of logFormats) {
      assert.ok(docs.includes(`| ${entry.name} |`), `docs/servers.md has no row for "${entry.name}"`);
      assert.ok(docs.includes(entry.example.replace(/\|/g, "\\|")), `docs/servers.md does not show the example of "${entry.name}"`);
    }
  });
});

describe("wrap's tellraw answer", () => {
  it("is one command line whose JSON carries the message as text", () => {
    const message = 'He said "hi" \\ then\nop Mallory\r\u2028/stop\u0000 — ok';
    const line = tellraw("Steve", message, "refused");
    assert.doesNotMatch(line, /[\r\n\u2028\u2029\u0000]/);
    const [command, name, ...json] = line.split(" ");
    assert.deepEqual([command, name], ["tellraw", "Steve"]);
    const component = JSON.parse(json.join(" "));
    assert.equal(component.text + component.extra[0].text, '[Outpost] He said "hi" \\ then op Mallory  /stop  — ok');
    assert.equal(component.extra[0].color, "red");
    assert.match(json.join(" "), /^[^\\]*(\\["\\][^\\]*)*$/, "only quotes and backslashes are escaped");
  });

  it("refuses a name that is not a player's", () => {
    for (const name of ["@a", "Steve @a", "Steve\nop", "", "x".repeat(17)]) assert.throws(() => tellraw(name, "hi", "accepted"), /not a player name/);
  });
});

describe("wrap's server.properties", () => {
  it("reads online-mode as a Java properties file does", () => {
    const text = "#Minecraft server properties\n# online-mode=true\nmotd=A Minecraft Server\r\nonline-mode = false\r\n";
    assert.equal(propertyValue(text, "online-mode"), "false");
    assert.equal(propertyValue("online-mode:true", "online-mode"), "true");
    assert.equal(propertyValue("motd=x", "online-mode"), undefined);
  });
});
