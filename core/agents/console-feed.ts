/**
 * The live console: what a game server's console prints, from the stream that holds it to the
 * dashboards watching it (servers/watchConsole) on any instance, and whether its agent is
 * connected. Watchers on the holding instance hear the stream directly. Others announce
 * themselves on the bus every {@link announceEveryMs}; the holding instance answers an
 * announcement that asks for them (a watch's first, and its first after the agent came back
 * online) with its recent lines, and publishes output on the bus only while someone elsewhere
 * announced within {@link interestMs}, so a console nobody watches costs no notifications. Output
 * the bus could not send reaches remote watchers as a count of dropped lines. One feed per process.
 */
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Bus } from "../bus.ts";
import type { AgentConnection } from "./connections.ts";
import { chunkLines, fitLines } from "./console-lines.ts";

/** What a watcher hears. */
export type ConsoleEvent = { kind: "lines"; lines: string[]; dropped: number } | { kind: "online"; online: boolean };

/** How often a watcher on another instance than the stream's says it is still there. */
export const announceEveryMs = 30_000;
/** How long after an announcement the holding instance keeps publishing output. */
export const interestMs = 75_000;
/** The JSON of the lines in one notification stays within this many bytes. */
const linesBudgetBytes = 6_000;

export interface ConsoleFeed {
  /** The stream holds its server: watchers hear that it is online, and it answers announcements until the returned detach. */
  attach(connection: AgentConnection): () => void;
  /** The stream's console printed these lines (after `dropped` it did not send). */
  printed(serverId: string, lines: string[], dropped: number): void;
  /** The server's agent went offline (its stream ended while holding it). */
  offline(serverId: string): void;
  /** Follows the server's console until the returned close. */
  watch(serverId: string, listener: (event: ConsoleEvent) => void): { close(): void };
}

/** What a server's output topic carries: events, and the recent lines one watch asked for. */
type OutputBody = ConsoleEvent | { kind: "recent"; watch: string; lines: string[]; dropped: number };
/** A message on a server's output topic; `from` names the publishing instance. */
type OutputMessage = { from: string } & OutputBody;
/** A watcher elsewhere is there; `recent` asks for the recent lines. */
type Announcement = { from: string; watch: string; recent: boolean };

/** One stream's hold on its server, from attach to detach. */
interface Attached {
  connection: AgentConnection;
  /** Until when someone elsewhere watches (ms since the epoch). */
  interestUntil: number;
  /** Lines the bus could not send since the last that went, told to remote watchers with the next. */
  lost: number;
}

const outputTopic = (serverId: string) => `console-output:${serverId}`;
const announceTopic = (serverId: string) => `console-watch:${serverId}`;

function parseOutput(payload: string): OutputMessage | undefined {
  try {
    const message = JSON.parse(payload) as OutputMessage;
    if (typeof message.from !== "string") return undefined;
    if (message.kind === "online" && typeof message.online === "boolean") return message;
    const lines = (message as { lines?: unknown }).lines;
    if ((message.kind === "lines" || message.kind === "recent") && Array.isArray(lines) && lines.every((l) => typeof l === "string")) return message;
  } catch {
    // Damaged or foreign: ignored.
  }
  return undefined;
}

function parseAnnouncement(payload: string): Announcement | undefined {
  try {
    const value = JSON.parse(payload) as Partial<Announcement>;
    if (typeof value.from === "string" && typeof value.watch === "string") return { from: value.from, watch: value.watch, recent: value.recent === true };
  } catch {
    // As above.
  }
  return undefined;
}

export function createConsoleFeed(bus: Bus, timing = { announceEveryMs }): ConsoleFeed {
  const instance = randomUUID();
  const local = new EventEmitter();
  local.setMaxListeners(0);
  /** The stream that holds each server here, as its attach left it. */
  const held = new Map<string, Attached>();
  const publish = (serverId: string, message: OutputBody) =>
    bus.publish(outputTopic(serverId), JSON.stringify({ from: instance, ...message }), { lossy: message.kind === "lines" || message.kind === "recent" });

  /** Publishes lines for remote watchers, counting in `dropped` those the bus could not send before. */
  function publishLines(attached: Attached, lines: string[], dropped: number) {
    const lost = attached.lost;
    attached.lost = 0;
    void publish(attached.connection.serverId, { kind: "lines", lines, dropped: dropped + lost }).then((sent) => {
      if (!sent) attached.lost += lost + dropped + lines.length;
    });
  }

  function answer(attached: Attached, announced: Announcement) {
    // A stream another took over answers nothing, even before it learns so.
    if (held.get(attached.connection.serverId) !== attached || !attached.connection.holding) return;
    attached.interestUntil = Date.now() + interestMs;
    if (!announced.recent) return;
    const { lines, cut } = fitLines(attached.connection.console.recent(), linesBudgetBytes);
    void publish(attached.connection.serverId, { kind: "recent", watch: announced.watch, lines: cut ? lines.slice(1) : lines, dropped: cut });
  }

  return {
    attach(connection) {
      const { serverId } = connection;
      local.emit(serverId, { kind: "online", online: true } satisfies ConsoleEvent);
      if (!bus.shared) return () => {};
      const attached: Attached = { connection, interestUntil: 0, lost: 0 };
      held.set(serverId, attached);
      const unsubscribe = bus.subscribe(announceTopic(serverId), (payload) => {
        const announced = parseAnnouncement(payload);
        if (announced && announced.from !== instance) answer(attached, announced);
      });
      // Watchers elsewhere answer this by announcing themselves: listening first.
      void publish(serverId, { kind: "online", online: true });
      return () => {
        unsubscribe();
        if (held.get(serverId) === attached) held.delete(serverId);
      };
    },
    printed(serverId, lines, dropped) {
      local.emit(serverId, { kind: "lines", lines, dropped } satisfies ConsoleEvent);
      const attached = held.get(serverId);
      if (!bus.shared || !attached || attached.interestUntil < Date.now()) return;
      chunkLines(lines, linesBudgetBytes).forEach((chunk, i) => publishLines(attached, chunk, i === 0 ? dropped : 0));
    },
    offline(serverId) {
      local.emit(serverId, { kind: "online", online: false } satisfies ConsoleEvent);
      if (bus.shared) void publish(serverId, { kind: "online", online: false });
    },
    watch(serverId, listener) {
      local.on(serverId, listener);
      const elsewhere = bus.shared ? watchElsewhere(bus, instance, serverId, listener, timing.announceEveryMs) : undefined;
      return {
        close() {
          elsewhere?.close();
          local.off(serverId, listener);
        },
      };
    },
  };
}

/**
 * Follows what the instance holding the server's stream, if another, publishes: announces the
 * watch now (asking for the recent lines), every `announceEveryMs` (not asking), and when the
 * agent comes online (asking again: the instance that now holds it has not heard of the watch).
 */
function watchElsewhere(bus: Bus, instance: string, serverId: string, listener: (event: ConsoleEvent) => void, announceEveryMs: number): { close(): void } {
  const watchId = randomUUID();
  const announce = (recent: boolean) => void bus.publish(announceTopic(serverId), JSON.stringify({ from: instance, watch: watchId, recent } satisfies Announcement));
  const unsubscribe = bus.subscribe(outputTopic(serverId), (payload) => {
    const message = parseOutput(payload);
    // This instance's own messages reached its watchers directly.
    if (!message || message.from === instance) return;
    if (message.kind === "recent") {
      if (message.watch === watchId) listener({ kind: "lines", lines: message.lines, dropped: message.dropped });
    } else if (message.kind === "online") {
      listener({ kind: "online", online: message.online });
      if (message.online) announce(true);
    } else {
      listener({ kind: "lines", lines: message.lines, dropped: message.dropped });
    }
  });
  announce(true);
  const timer = setInterval(() => announce(false), announceEveryMs).unref();
  return {
    close() {
      clearInterval(timer);
      unsubscribe();
    },
  };
}
