/**
 * What `outpost-agent wrap` makes of the players it reads about on the console: who is online
 * (reported to Outpost with the UUID their login printed) and their /outpost commands (played to
 * Outpost, the answer shown in game with tellraw). A player whose login printed no UUID is online
 * but unknown: never reported, and told in game why /outpost cannot work for them.
 */
import type { Agent, Reply } from "./client.ts";
import { maxPlayers, type Player } from "./players.ts";
import type { LogEvent } from "./log-formats.ts";
import { tellraw, type Tone } from "./tellraw.ts";
import { isOutpostCommand } from "../contract/login-command.ts";

/** What the game session needs from the rest of the wrapper. */
export interface PlayersDeps {
  agent: Pick<Agent, "setPlayers" | "playCommand">;
  /** Undefined while the agent is connected to Outpost; otherwise what to tell a player why not. */
  outpostAway(): string | undefined;
  /** Writes one command line to the server's console. */
  command(line: string): void;
  /** Says something to the operator. */
  note(message: string): void;
}

export const unknownAccountMessage =
  "Outpost does not know your account yet: the server did not print your UUID when you joined (it does on login in online mode). Rejoin the server and try again.";
export const unreachableMessage = "Outpost cannot be reached right now, so it cannot sign you in. Try again in a minute.";
export const refusedMessage = "This server is not connected to Outpost, so it cannot sign you in. Tell the server's operator.";
export const busyMessage = "Outpost is still answering your last command. Wait for its answer.";

/** How long a UUID printed at login waits for its player's join line, and how many may wait. */
const uuidWaitMs = 120_000;
const maxWaitingLogins = 256;

export interface PlayersSession {
  /** Takes one understood console line. */
  handle(event: LogEvent): void;
  /** The players online whose accounts are known, as reported to Outpost. */
  players(): Player[];
}

/** Who is online, as the console's login, join and leave lines tell it; reported on each change. */
function createRoster(deps: Pick<PlayersDeps, "agent" | "note">) {
  /** UUIDs printed at login, by name, until the join line (a login may also fail: a ban, a whitelist). */
  const loggingIn = new Map<string, { uuid: string; at: number }>();
  /** Players online; `undefined` for one whose login printed no UUID. */
  const online = new Map<string, string | undefined>();
  let warnedTooMany = false;

  function players(): Player[] {
    return [...online].filter(([, uuid]) => uuid).map(([name, uuid]) => ({ name, uuid: uuid! }));
  }

  function report(): void {
    let list = players();
    if (list.length > maxPlayers) {
      if (!warnedTooMany) deps.note(`more than ${maxPlayers} players are online; Outpost is told about the first ${maxPlayers}`);
      warnedTooMany = true;
      list = list.slice(0, maxPlayers);
    }
    deps.agent.setPlayers(list);
  }

  return {
    players,
    /** The UUID of a player online whose login printed one. */
    uuidOf: (name: string) => online.get(name),
    rememberLogin(name: string, uuid: string): void {
      loggingIn.delete(name);
      loggingIn.set(name, { uuid, at: Date.now() });
      while (loggingIn.size > maxWaitingLogins) loggingIn.delete(loggingIn.keys().next().value!);
    },
    join(name: string): void {
      const login = loggingIn.get(name);
      loggingIn.delete(name);
      const fresh = login && Date.now() - login.at <= uuidWaitMs ? login.uuid : undefined;
      // The second join line of one login (Paper prints both) keeps the UUID the first one took.
      if (!fresh && online.has(name)) return;
      online.set(name, fresh);
      if (!fresh) deps.note(`${name} joined, but their login printed no UUID: they cannot use /outpost until they rejoin`);
      report();
    },
    leave(name: string): void {
      if (online.delete(name)) report();
    },
  };
}

type Roster = ReturnType<typeof createRoster>;

/** Players' /outpost commands, played to Outpost one at a time per player, the answer told in game. */
function createCommandRelay(deps: Pick<PlayersDeps, "agent" | "outpostAway" | "command">, roster: Roster) {
  /** Players whose /outpost command Outpost is still answering. */
  const answering = new Set<string>();

  function tell(name: string, message: string, tone: Tone): void {
    deps.command(tellraw(name, message, tone));
  }

  async function play(name: string, uuid: string, text: string): Promise<void> {
    answering.add(name);
    let reply: Reply;
    try {
      reply = await deps.agent.playCommand({ name, uuid }, text);
    } catch (error) {
      reply = { accepted: false, message: `Outpost could not answer: ${(error as Error).message}` };
    } finally {
      answering.delete(name);
    }
    if (roster.uuidOf(name) !== uuid) return; // They left (or came back as someone else) meanwhile.
    tell(name, reply.message, reply.accepted ? "accepted" : reply.confirmation ? "question" : "refused");
  }

  return {
    command(name: string, text: string): void {
      if (!isOutpostCommand(text)) return;
      // No UUID: their login printed none, or their join went unseen (then tellraw finds no one).
      const uuid = roster.uuidOf(name);
      if (!uuid) return tell(name, unknownAccountMessage, "refused");
      const away = deps.outpostAway();
      if (away) return tell(name, away, "refused");
      if (answering.has(name)) return tell(name, busyMessage, "refused");
      void play(name, uuid, text.trim());
    },
    /** The player left: a command of theirs still being answered no longer holds the next one up. */
    forget(name: string): void {
      answering.delete(name);
    },
  };
}

export function createPlayersSession(deps: PlayersDeps): PlayersSession {
  const roster = createRoster(deps);
  const relay = createCommandRelay(deps, roster);
  return {
    players: roster.players,
    handle(event) {
      if (event.kind === "uuid") roster.rememberLogin(event.name, event.uuid);
      else if (event.kind === "join") roster.join(event.name);
      else if (event.kind === "leave") {
        relay.forget(event.name);
        roster.leave(event.name);
      } else if (event.kind === "command") relay.command(event.name, event.text);
    },
  };
}
