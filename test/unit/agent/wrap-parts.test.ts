import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UsageError, parseWrapArgs } from "../../../agent/cli-options.ts";
import { filesNotice } from "../../../agent/wrap-notices.ts";
import type { Player, Reply } from "../../../agent/client.ts";
import { busyMessage, createPlayersSession, unknownAccountMessage, unreachableMessage } from "../../../agent/wrap-players.ts";
import { createConsoleRunner, quietMs } from "../../../agent/wrap-console.ts";
import { createStopper, repeatWindowMs, stopSignals } from "../../../agent/wrap-signals.ts";

const steve = { name: "Steve", uuid: "069a79f4-44e9-4726-a5be-fca90e38aaf5" };

/** The text a tellraw line shows. */
const shown = (line: string) => {
  const component = JSON.parse(line.split(" ").slice(2).join(" "));
  return component.extra[0].text as string;
};

function session(options: { connected?: boolean; reply?: (player: Player, text: string) => Promise<Reply> } = {}) {
  const reported: Player[][] = [];
  const played: string[] = [];
  const written: string[] = [];
  const players = createPlayersSession({
    agent: {
      setPlayers: (list) => void reported.push(list),
      playCommand: (player, text) => {
        played.push(`${player.name} ${player.uuid} ${text}`);
        return (options.reply ?? (async () => ({ accepted: true, message: "Signed in to Forum." })))(player, text);
      },
    },
    outpostAway: () => ((options.connected ?? true) ? undefined : unreachableMessage),
    command: (line) => void written.push(line),
    note: () => {},
  });
  return { players, reported, played, written };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("wrap's players", () => {
  it("reports a player online with the UUID their login printed, once per join, and their leave", () => {
    const s = session();
    s.players.handle({ kind: "uuid", ...steve });
    s.players.handle({ kind: "join", name: "Steve" });
    s.players.handle({ kind: "join", name: "Steve" });
    s.players.handle({ kind: "leave", name: "Steve" });
    s.players.handle({ kind: "leave", name: "Steve" });
    assert.deepEqual(s.reported, [[steve], []]);
  });

  it("keeps a new login's UUID while the old session of the same name disconnects", () => {
    const s = session();
    s.players.handle({ kind: "uuid", ...steve });
    s.players.handle({ kind: "join", name: "Steve" });
    s.players.handle({ kind: "uuid", ...steve });
    s.players.handle({ kind: "leave", name: "Steve" });
    s.players.handle({ kind: "join", name: "Steve" });
    assert.deepEqual(s.reported, [[steve], [], [steve]]);
  });

  it("plays /outpost commands and answers with the reply, in the reply's tone", async () => {
    const s = session({
      reply: async () => ({ accepted: false, message: "Sign in to Forum?", confirmation: { appName: "Forum", redirectHost: "forum.example", expiresInSeconds: 60 } }),
    });
    s.players.handle({ kind: "uuid", ...steve });
    s.players.handle({ kind: "join", name: "Steve" });
    s.players.handle({ kind: "command", name: "Steve", text: "/help" });
    s.players.handle({ kind: "command", name: "Steve", text: "/outposts" });
    s.players.handle({ kind: "command", name: "Steve", text: "/OUTPOST login abcd-1234 " });
    await settle();
    assert.deepEqual(s.played, [`Steve ${steve.uuid} /OUTPOST login abcd-1234`]);
    assert.equal(s.written.length, 1);
    assert.equal(shown(s.written[0]), "Sign in to Forum?");
    assert.match(s.written[0], /"color":"yellow"/);
  });

  it("answers without asking Outpost: no UUID, Outpost unreachable, a command still being answered", async () => {
    const s = session();
    s.players.handle({ kind: "join", name: "Alex" });
    s.players.handle({ kind: "command", name: "Alex", text: "/outpost login ABCD-1234" });
    s.players.handle({ kind: "command", name: "Ghost", text: "/outpost confirm" });
    assert.deepEqual(s.reported, [[]]);
    assert.deepEqual(s.written.map(shown), [unknownAccountMessage, unknownAccountMessage]);

    const offline = session({ connected: false });
    offline.players.handle({ kind: "uuid", ...steve });
    offline.players.handle({ kind: "join", name: "Steve" });
    offline.players.handle({ kind: "command", name: "Steve", text: "/outpost confirm" });
    assert.deepEqual(offline.written.map(shown), [unreachableMessage]);

    let answer!: (reply: Reply) => void;
    const slow = session({ reply: () => new Promise((resolve) => (answer = resolve)) });
    slow.players.handle({ kind: "uuid", ...steve });
    slow.players.handle({ kind: "join", name: "Steve" });
    slow.players.handle({ kind: "command", name: "Steve", text: "/outpost login ABCD-1234" });
    slow.players.handle({ kind: "command", name: "Steve", text: "/outpost confirm" });
    assert.deepEqual(slow.written.map(shown), [busyMessage]);
    answer({ accepted: false, message: "No sign-in is waiting for that code." });
    await settle();
    assert.deepEqual(slow.written.map(shown), [busyMessage, "No sign-in is waiting for that code."]);
    assert.equal(slow.played.length, 1);
  });

  it("says nothing to a player who left before Outpost answered, and shows a failure as a refusal", async () => {
    let answer!: (reply: Reply) => void;
    const s = session({ reply: () => new Promise((resolve) => (answer = resolve)) });
    s.players.handle({ kind: "uuid", ...steve });
    s.players.handle({ kind: "join", name: "Steve" });
    s.players.handle({ kind: "command", name: "Steve", text: "/outpost confirm" });
    s.players.handle({ kind: "leave", name: "Steve" });
    answer({ accepted: true, message: "Signed in." });
    await settle();
    assert.deepEqual(s.written, []);

    const failing = session({ reply: async () => Promise.reject(new Error("Outpost did not answer within 15 seconds")) });
    failing.players.handle({ kind: "uuid", ...steve });
    failing.players.handle({ kind: "join", name: "Steve" });
    failing.players.handle({ kind: "command", name: "Steve", text: "/outpost confirm" });
    await settle();
    assert.deepEqual(failing.written.map(shown), ["Outpost could not answer: Outpost did not answer within 15 seconds"]);
  });
});

describe("wrap's console commands", () => {
  it("writes each command and returns the lines that follow it, one command at a time", async () => {
    const written: string[] = [];
    const runner = createConsoleRunner(
      (line) => {
        written.push(line);
        setImmediate(() => runner.line(`${line}: first`));
        setTimeout(() => runner.line(`${line}: second`), 20);
        return true;
      },
      () => {},
    );
    const signal = new AbortController().signal;
    const [list, say] = await Promise.all([runner.handler("list", signal), runner.handler("say hi", signal)]);
    assert.deepEqual(written, ["list", "say hi"]);
    assert.deepEqual(list, { success: true, output: ["list: first", "list: second"] });
    assert.deepEqual(say, { success: true, output: ["say hi: first", "say hi: second"] });
  });

  it("waits for a lagging server's first line, however long past the quiet window, then for the console to be quiet", async () => {
    const runner = createConsoleRunner(
      (line) => {
        setTimeout(() => runner.line(`${line}: late`), quietMs * 3);
        setTimeout(() => runner.line(`${line}: next`), quietMs * 3 + 10);
        return true;
      },
      () => {},
    );
    assert.deepEqual(await runner.handler("list", new AbortController().signal), { success: true, output: ["list: late", "list: next"] });
  });

  it("answers a command that prints nothing once Outpost stops waiting, with no lines", async () => {
    const abort = new AbortController();
    const runner = createConsoleRunner(
      () => (setTimeout(() => abort.abort(), quietMs * 2), true),
      () => {},
    );
    assert.deepEqual(await runner.handler(`tellraw Steve {"text":"hi"}`, abort.signal), { success: true, output: [] });
    assert.equal(abort.signal.aborted, true);
  });

  it("answers with what it has when Outpost stops waiting, and fails when the server is gone", async () => {
    const abort = new AbortController();
    const runner = createConsoleRunner(
      () => {
        const talk = setInterval(() => runner.line("spam"), 10);
        abort.signal.addEventListener("abort", () => clearInterval(talk));
        setTimeout(() => abort.abort(), 100);
        return true;
      },
      () => {},
    );
    const run = await runner.handler("list", abort.signal);
    assert.equal(run.success, true);
    assert.ok(run.output.length >= 1 && run.output.every((line) => line === "spam"));
    assert.equal((await runner.handler("list", abort.signal)).success, false);

    const gone = createConsoleRunner(
      () => false,
      () => {},
    );
    assert.deepEqual(await gone.handler("list", new AbortController().signal), { success: false, output: [], error: "the game server is not running" });
  });

  it("writes nothing but one line of text: a command with a control character, a line separator or a bidirectional control fails unwritten", async () => {
    const written: string[] = [];
    const runner = createConsoleRunner(
      (line) => (written.push(line), true),
      () => {},
    );
    const signal = new AbortController().signal;
    for (const [command, code] of [
      ["say a\nop me", "000A"],
      ["say a\rop me", "000D"],
      ["say \u001b[2Jcleared", "001B"],
      ["say a\u2028op me", "2028"],
      ["say a\u2029op me", "2029"],
      ["say a\u0085op me", "0085"],
      ["say a\top me", "0009"],
      ["say a\u0000", "0000"],
      ["say \u202eem po", "202E"],
      ["say \u2066op\u2069", "2066"],
    ]) {
      const run = await runner.handler(command, signal);
      assert.equal(run.success, false, JSON.stringify(command));
      assert.deepEqual(run.output, []);
      assert.match(run.error!, new RegExp(`control characters, line separators or bidirectional text controls \\(U\\+${code} at position \\d+\\)`));
    }
    assert.deepEqual(written, [], "nothing reached the server's stdin");
  });
});

describe("wrap's stop signals", () => {
  function stopper(options: { writes?: boolean } = {}) {
    const done: string[] = [];
    let clock = 0;
    const server = {
      running: () => true,
      writeLine: (line: string) => (done.push(`write ${line}`), options.writes ?? true),
      kill: (signal: NodeJS.Signals = "SIGKILL") => void done.push(`kill ${signal}`),
    };
    const stop = createStopper(
      server,
      30,
      () => {},
      () => clock,
    );
    return { stop, done, at: (ms: number) => (clock = ms) };
  }

  it("writes stop once for a signal and its repeats within a second, and kills on a later one", () => {
    const s = stopper();
    s.stop.onSignal("SIGINT");
    s.at(10);
    s.stop.onSignal("SIGINT");
    s.at(repeatWindowMs - 1);
    s.stop.onSignal("SIGINT");
    assert.deepEqual(s.done, ["write stop"]);
    assert.equal(s.stop.requested(), true);
    s.at(repeatWindowMs);
    s.stop.onSignal("SIGINT");
    assert.deepEqual(s.done, ["write stop", "kill SIGKILL"]);
    s.stop.dispose();
  });

  it("kills at once on another signal, or when the server cannot take stop", () => {
    const s = stopper();
    s.stop.onSignal("SIGTERM");
    s.at(10);
    s.stop.onSignal("SIGINT");
    assert.deepEqual(s.done, ["write stop", "kill SIGKILL"]);
    s.stop.dispose();

    const gone = stopper({ writes: false });
    gone.stop.onSignal("SIGINT");
    assert.deepEqual(gone.done, ["write stop", "kill SIGKILL"]);
  });

  it("stops on a hangup only when stdin is a terminal, the one that hung up", () => {
    assert.deepEqual(stopSignals({ isTTY: true }), ["SIGINT", "SIGTERM", "SIGHUP"]);
    assert.deepEqual(stopSignals({}), ["SIGINT", "SIGTERM"]);
  });
});

describe("wrap's command line", () => {
  let cwd: string;
  beforeEach(() => {
    cwd = mkdtempSync(join(tmpdir(), "outpost-wrap-args-"));
    mkdirSync(join(cwd, "world"));
    writeFileSync(join(cwd, "eula.txt"), "eula=true\n");
  });
  afterEach(() => rmSync(cwd, { recursive: true, force: true }));

  const connection = ["--url", "http://localhost:3000", "--key", "opa_x"];
  const wrapArgs = (...flags: string[]) => parseWrapArgs([...connection, ...flags, "--", "java", "-jar", "paper.jar", "nogui"], cwd);
  const usageError = (flags: string[], message: RegExp) =>
    assert.throws(
      () => wrapArgs(...flags),
      (error: Error) => error instanceof UsageError && message.test(error.message),
    );

  it("serves the directory the server runs in, files on and nothing denied, by default", () => {
    const args = wrapArgs();
    assert.deepEqual(args.files, { root: cwd, mode: "on", deny: [] });
    assert.deepEqual(args.command, ["java", "-jar", "paper.jar", "nogui"]);
    assert.equal(args.graceSeconds, 30);
    assert.equal(args.values.auth, undefined);
  });

  it("takes --root (made absolute against the server's directory), --files and each --files-deny", () => {
    assert.deepEqual(wrapArgs("--root", "world", "--files", "read-only", "--files-deny", "secrets/**", "--files-deny", "*.key").files, {
      root: join(cwd, "world"),
      mode: "read-only",
      deny: ["secrets/**", "*.key"],
    });
    assert.deepEqual(wrapArgs("--root", join(cwd, "world")).files?.root, join(cwd, "world"));
    assert.equal(wrapArgs("--files", "off").files, undefined);
    assert.equal(wrapArgs("--files", "off", "--root", "missing").files, undefined, "with files off the root is not looked at");
  });

  it("refuses a root that is missing or no directory, an unknown mode and a deny glob that could never match, before anything starts", () => {
    usageError(["--root", "missing"], /^--root .*missing does not exist$/);
    usageError(["--root", "eula.txt"], /^--root .*eula\.txt is not a directory$/);
    usageError(["--files", "rw"], /^--files must be one of on, read-only, off \(got "rw"\)$/);
    usageError(["--files-deny", "/etc/**"], /--files-deny "\/etc\/\*\*": a glob is relative to the server's directory and uses \//);
    usageError(["--root"], /--root/);
  });

  it("tells the operator at start what the files panel may do", () => {
    assert.equal(filesNotice(undefined), "files: off (Outpost's files panel cannot reach this server's directory)");
    assert.equal(filesNotice({ root: "/srv/mc", deny: [] }), "files: on (list, read and change) in /srv/mc");
    assert.equal(
      filesNotice({ root: "/srv/mc", mode: "read-only", deny: ["secrets/**", "*.key"] }),
      "files: read-only (list and read) in /srv/mc, except secrets/**, *.key",
    );
  });
});
