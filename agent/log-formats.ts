/**
 * Every console line `outpost-agent wrap` understands, in one table: how a line is framed (the
 * timestamp, thread and level each server family prints before the message) and which messages
 * mean something to Outpost (a player's UUID, a join, a leave, an in-game command). docs/servers.md
 * shows the same table, and a test checks each example against it. Anything else, a line cut
 * short, or a line with a control character or a line separator in it, is ignored: the console is
 * read, never trusted to be well formed.
 */

/** What a console line tells the agent. */
export type LogEvent =
  /** The server authenticated a player logging in: their account's UUID. */
  | { kind: "uuid"; name: string; uuid: string }
  | { kind: "join"; name: string }
  | { kind: "leave"; name: string }
  /** A player ran a command; `text` as typed, with its leading slash. */
  | { kind: "command"; name: string; text: string }
  /** The server has started and takes players. */
  | { kind: "ready" };

export interface LogFormat {
  name: string;
  /**
   * "frame": how a server family prints a line, capturing the message (and the thread, when it
   * prints one); "message": what a message says, matched against a frame's message.
   */
  kind: "frame" | "message";
  pattern: RegExp;
  /** A real line in this format (for a message, framed as Paper prints it, or as vanilla does). */
  example: string;
  /** What the agent does with it. */
  meaning: string;
  /** For a message: only believed from this thread, when the frame names the thread. */
  thread?: RegExp;
  /** For a message: the event its match is. */
  event?: (groups: Record<string, string>) => LogEvent;
}

/** A Java Edition player name: what the server lets in, and nothing a command could misread. */
const name = "(?<name>[A-Za-z0-9_]{1,16})";
const uuid = "(?<uuid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})";

export const logFormats: readonly LogFormat[] = [
  {
    name: "Paper, Spigot, Purpur line",
    kind: "frame",
    pattern: /^\[(?<time>\d{2}:\d{2}:\d{2}) (?<level>[A-Z]+)\]: (?<message>.*)$/,
    example: "[12:34:56 INFO]: Starting minecraft server version 1.21.4",
    meaning: "The frame of every line of a Bukkit-family server; only INFO messages are read.",
  },
  {
    name: "Vanilla line",
    kind: "frame",
    pattern: /^\[(?<time>\d{2}:\d{2}:\d{2})\] \[(?<thread>[^\]]+)\/(?<level>[A-Z]+)\]: (?<message>.*)$/,
    example: "[12:34:56] [Server thread/INFO]: Starting minecraft server version 1.21.4",
    meaning: "The frame of every line of the vanilla server; only INFO messages are read, and the thread is checked where a message names one.",
  },
  {
    name: "Fabric line",
    kind: "frame",
    pattern: /^\[(?<time>\d{2}:\d{2}:\d{2})\] \[(?<thread>[^\]]+)\/(?<level>[A-Z]+)\] \(Minecraft\) (?<message>.*)$/,
    example: "[12:34:56] [Server thread/INFO] (Minecraft) Starting minecraft server version 1.21.4",
    meaning:
      "The frame of the game's own lines on a Fabric server (a mod's lines name the mod's logger instead of Minecraft, and are not read); as for vanilla, only INFO messages are read and the thread is checked.",
  },
  {
    name: "Server ready",
    kind: "message",
    pattern: /^Done \((?<seconds>\d+(?:\.\d+)?)s\)! For help, type "help"/,
    thread: /^Server thread$/,
    example: '[12:34:56 INFO]: Done (5.123s)! For help, type "help"',
    meaning: "The server has started and takes players: its state in Outpost becomes running.",
    event: () => ({ kind: "ready" }),
  },
  {
    name: "Player's UUID",
    kind: "message",
    pattern: new RegExp(`^UUID of player ${name} is ${uuid}$`),
    thread: /^User Authenticator #\d+$/,
    example: "[12:34:56] [User Authenticator #1/INFO]: UUID of player Steve is 069a79f4-44e9-4726-a5be-fca90e38aaf5",
    meaning:
      "The server has authenticated the player logging in: remembered as their UUID until they join. Without it a player cannot use /outpost. Vanilla prints it only in online mode; Paper, Spigot and Purpur always.",
    event: (g) => ({ kind: "uuid", name: g.name, uuid: g.uuid }),
  },
  {
    name: "Player joined",
    kind: "message",
    pattern: new RegExp(`^${name}(?: \\(formerly known as [A-Za-z0-9_]{1,16}\\))? joined the game$`),
    example: "[12:34:56 INFO]: Steve joined the game",
    meaning: "The player is online: reported to Outpost with the UUID their login printed.",
    event: (g) => ({ kind: "join", name: g.name }),
  },
  {
    name: "Player logged in",
    kind: "message",
    // The address in brackets may hold brackets of its own: an IPv6 one is [/[::1]:5000].
    pattern: new RegExp(`^${name}\\[(?:[^\\[\\]]|\\[[^\\[\\]]*\\])*\\] logged in with entity id \\d+ at `),
    example: "[12:34:56] [Server thread/INFO]: Steve[/127.0.0.1:54321] logged in with entity id 123 at (0.5, 64.0, 0.5)",
    meaning: "The same as a join (printed next to it; a custom join message does not change it).",
    event: (g) => ({ kind: "join", name: g.name }),
  },
  {
    name: "Player left",
    kind: "message",
    pattern: new RegExp(`^${name} left the game$`),
    example: "[12:34:56 INFO]: Steve left the game",
    meaning: "The player is offline: reported to Outpost.",
    event: (g) => ({ kind: "leave", name: g.name }),
  },
  {
    name: "Player lost connection",
    kind: "message",
    pattern: new RegExp(`^${name} lost connection: `),
    example: "[12:34:56] [Server thread/INFO]: Steve lost connection: Disconnected",
    meaning: "The same as a leave (a disconnect during login names the address too, and does not match).",
    event: (g) => ({ kind: "leave", name: g.name }),
  },
  {
    name: "Player's command",
    kind: "message",
    pattern: new RegExp(`^${name} issued server command: (?<text>/.*)$`),
    example: "[12:34:56 INFO]: Steve issued server command: /outpost login ABCD-1234",
    meaning:
      "A player typed a command; /outpost login, confirm and cancel are played to Outpost and answered with tellraw. Printed by Paper, Spigot and Purpur (spigot.yml log-commands, on by default), not by vanilla.",
    event: (g) => ({ kind: "command", name: g.name, text: g.text }),
  },
];

/** ANSI escape sequences: colours, cursor moves, a terminal title. */
const ansi = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

/** A console line as plain text: no colours, no prompt (">") or carriage returns left by an interactive console. */
export function plainLine(raw: string): string {
  return raw.replace(ansi, "").replace(/\r/g, "").replace(/^>\s*/, "");
}

/**
 * What a redrawn console prompt leaves before a line: carriage returns and "> ". Only the server
 * prints at the start of a line, so this is never a player's text.
 */
const promptResidue = /^(?:\r|>[ ]*)+/;

/**
 * Control characters (C0 and C1, after the colour sequences are gone) and the line and paragraph
 * separators: none is in a line the table knows, and each could make a player's chat look like
 * a line of its own to some reader (a terminal, a log viewer, node:readline).
 */
const unreadable = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/**
 * The plain text of a line the table may read: undefined for a line holding a control character
 * or a line separator anywhere after its prompt (one "\r" ending it aside), as such a line can
 * carry what a player typed disguised as a line of the server's.
 */
export function readableLine(raw: string): string | undefined {
  const text = raw.replace(ansi, "").replace(promptResidue, "").replace(/\r$/, "");
  return unreadable.test(text) ? undefined : text;
}

export interface Understood {
  /** The table's entries that matched: the frame, then the message. */
  frame: string;
  message: string;
  event: LogEvent;
}

/** What a console line means, if the table knows it; undefined for anything else. */
export function readLogLine(raw: string): Understood | undefined {
  const line = readableLine(raw);
  if (line === undefined) return undefined;
  for (const frame of logFormats) {
    if (frame.kind !== "frame") continue;
    const framed = frame.pattern.exec(line)?.groups;
    if (!framed) continue;
    if (framed.level !== "INFO") return undefined;
    for (const entry of logFormats) {
      if (entry.kind !== "message" || !entry.event) continue;
      if (entry.thread && framed.thread !== undefined && !entry.thread.test(framed.thread)) continue;
      const groups = entry.pattern.exec(framed.message)?.groups;
      if (groups) return { frame: frame.name, message: entry.name, event: entry.event(groups) };
    }
    return undefined;
  }
  return undefined;
}
