/**
 * `outpost-agent`: a game server's agent. `wrap` runs a real Minecraft server as its child and
 * exits with its exit status (agent/wrap.ts). Without a game server, `run` is a console where each
 * line is a player's command; `simulate` plays one command (and with --confirm, the player's
 * confirmation when asked) and exits with the verdict. Errors print one line; exit codes: 0
 * signed in (or stopped), 1 refused in game, 2 usage, 3 Outpost unreachable or refusing the
 * agent, 4 waiting for the player's confirmation.
 */
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { commandProblem, playerProblem, startAgent, type AgentEvent, type Player } from "./client.ts";
import { UsageError, agentOptions, connectionOptions, parse, parseWrapArgs } from "./cli-options.ts";
import { defaultAuth } from "./server-properties.ts";
import { wrap } from "./wrap.ts";
import { secretPrefixes } from "../contract/secrets.ts";
import { visibleLine } from "../contract/one-line.ts";

const usage = `usage: outpost-agent <command>

  wrap --url URL --key KEY [--game minecraft] [--auth online|offline|proxy] [--grace-seconds N]
       [--restart on-crash|always|never] [--restart-delay-seconds N] [--stats-seconds N]
       [--root DIR] [--files on|read-only|off] [--files-deny GLOB]... -- <server command>
      runs a Minecraft server (Paper, Spigot, Purpur; vanilla, Fabric for players online) as its child
      and is its agent, e.g. -- java -Xmx4G -jar paper.jar nogui. This terminal stays the
      server's console; players sign in with /outpost; Outpost's console commands reach it.
      Ctrl-C or SIGTERM writes "stop", then kills the server after --grace-seconds (default 30);
      exits with the server's exit status. A server that crashes is started again (--restart
      on-crash, the default; always: whenever it ends by itself; never: the agent exits with it)
      after --restart-delay-seconds (default 5), doubling to 5 minutes; the fifth end within ten
      minutes is a crash loop, and it is not started again. --auth defaults to ./server.properties' online-mode.
      The server starts even when Outpost cannot be reached (the agent keeps trying) or refuses
      the key (said loudly; the server runs without Outpost).
      Outpost's files panel reaches the directory --root (default: this one, where the server
      runs) and nothing outside it: --files on (the default) lists, reads and changes files,
      read-only only lists and reads, off serves none. Each --files-deny GLOB, relative to the
      root (e.g. --files-deny 'secrets/**'), is never shown or changed. The server's CPU,
      memory and players go to Outpost's charts every --stats-seconds (default 10). See docs/servers.md.
  run --url URL --key KEY [--game minecraft|hytale] [--auth online|offline|insecure]
      a simulated game-server console; each line of input is one of
        <player-name> <player-uuid> <command text>   a player runs a command; prints the reply
        players [name:uuid,...]                      the players online now (none without a list)
      A login code is answered with a question; the player then types /outpost confirm (or
      /outpost cancel) within 60 s, e.g. Steve <uuid> /outpost confirm
  simulate --url URL --key KEY --player-name N --player-uuid U [--game G] [--auth A] [--confirm] -- "<command>"
      connects, plays one command as that player, prints the reply; with --confirm, when the
      reply asks the player to confirm a sign-in, confirms it as they would and prints that reply

URL is Outpost's ACCOUNT_BASE_URL (e.g. http://localhost:3000). KEY is the server's agent key
(${secretPrefixes.agentKey}…); OUTPOST_AGENT_KEY may hold it instead. --game defaults to minecraft, --auth to online
(the server authenticates its players; proxy: an offline server behind an authenticating proxy).
Exit codes of run and simulate: 0 signed in, 1 refused in game, 2 usage, 3 Outpost cannot be
reached or refuses the agent, 4 asked to confirm (without --confirm: play "/outpost confirm" as
the same player on the same server within 60 s).`;

const exit = { accepted: 0, refused: 1, usage: 2, unreachable: 3, confirming: 4 } as const;

class AgentFailure extends Error {}

/**
 * One line to the operator's terminal. What it says comes from Outpost in part (a server's name,
 * a reply, an error), so control and bidirectional characters in it are shown as escapes rather
 * than acted on: an ESC in a renamed server's name must not clear the screen or set the title.
 */
const say = (line: string) => console.log(visibleLine(line));
const complain = (line: string) => console.error(visibleLine(line));

/** One line about why the agent could not work with Outpost. */
function describe(error: unknown, url: string): string {
  if (!(error instanceof ConnectError)) return (error as Error).message;
  if (error.code === Code.Unavailable || error.code === Code.DeadlineExceeded) return `cannot reach Outpost at ${url}: ${error.rawMessage}`;
  return `Outpost refused the agent: ${error.rawMessage}`;
}

function printEvent(event: AgentEvent, url: string): void {
  if (event.kind === "connected") {
    const { serverName, organizationSlug } = event.welcome;
    say(`connected to ${url}: server "${serverName}" of ${organizationSlug}`);
  } else if (event.kind === "disconnected") {
    say(`disconnected (${event.error.rawMessage}); reconnecting in ${(event.retryInMs / 1000).toFixed(1)} s`);
  }
}

function parsePlayers(list: string | undefined): Player[] {
  if (!list) return [];
  return list.split(",").map((entry) => {
    const [name, uuid] = entry.trim().split(":");
    const problem = playerProblem({ name: name ?? "", uuid: uuid ?? "" });
    if (problem) throw new UsageError(`players: ${problem} in "${entry.trim()}" (expected name:uuid)`);
    return { name, uuid };
  });
}

async function run(args: string[]): Promise<number> {
  const { values } = parse(() => parseArgs({ args, options: connectionOptions, strict: true }));
  const options = agentOptions(values);
  const agent = startAgent(options, (event) => printEvent(event, options.url));
  const lineUsage = "expected: <player-name> <player-uuid> <command text>, or players [name:uuid,...]";
  createInterface({ input: process.stdin }).on("line", (raw) => {
    const line = raw.trim();
    if (!line) return;
    try {
      const list = /^players(?:\s+(.*))?$/.exec(line);
      if (list) {
        const players = parsePlayers(list[1]);
        agent.setPlayers(players);
        say(`players online: ${players.length}`);
        return;
      }
      const match = /^(\S+)\s+(\S+)\s+(.+)$/.exec(line);
      if (!match) throw new UsageError(lineUsage);
      const player = { name: match[1], uuid: match[2] };
      agent.playCommand(player, match[3]).then(
        (reply) => say(`[to ${player.name}] ${reply.message}`),
        (error) => complain(`error: ${(error as Error).message}`),
      );
    } catch (error) {
      complain(`error: ${(error as Error).message}`);
    }
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => void agent.stop());
  }
  try {
    await agent.stopped;
    return exit.accepted;
  } catch (error) {
    throw new AgentFailure(describe(error, options.url));
  }
}

async function simulate(args: string[]): Promise<number> {
  const simulateOptions = {
    ...connectionOptions,
    "player-name": { type: "string" },
    "player-uuid": { type: "string" },
    confirm: { type: "boolean", default: false },
  } as const;
  const { values, positionals } = parse(() => parseArgs({ args, options: simulateOptions, strict: true, allowPositionals: true }));
  const options = agentOptions(values);
  const player = { name: values["player-name"] ?? "", uuid: values["player-uuid"] ?? "" };
  if (!player.name) throw new UsageError("--player-name is required");
  if (!player.uuid) throw new UsageError("--player-uuid is required");
  const text = positionals.join(" ");
  if (!text) throw new UsageError('the command to play is required, after --: -- "/outpost login ABCD-1234"');
  const problem = commandProblem(player, text);
  if (problem) throw new UsageError(problem);
  const agent = startAgent({ ...options, reconnect: false });
  try {
    await agent.connected();
    agent.setPlayers([player]);
    let reply = await agent.playCommand(player, text);
    say(reply.message);
    if (reply.confirmation && values.confirm) {
      reply = await agent.confirm(player);
      say(reply.message);
    }
    return reply.accepted ? exit.accepted : reply.confirmation ? exit.confirming : exit.refused;
  } catch (error) {
    throw new AgentFailure(describe(error, options.url));
  } finally {
    await agent.stop();
  }
}

/** `wrap`: the agent's options before `--`, the server command after it; the server runs here. */
async function wrapServer(args: string[]): Promise<number> {
  const { values, command, graceSeconds, restart, files, statsEveryMs } = parseWrapArgs(args, process.cwd());
  let auth = values.auth;
  if (auth === undefined) {
    const chosen = defaultAuth(process.cwd());
    auth = chosen.auth;
    console.error(`[outpost] --auth ${auth}: ${chosen.reason} (behind an authenticating proxy? pass --auth proxy)`);
  }
  const agent = { ...agentOptions({ ...values, auth }), files };
  return wrap({ agent, command, graceSeconds, restart, statsEveryMs });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "run":
      return run(rest);
    case "simulate":
      return simulate(rest);
    case "wrap":
      return wrapServer(rest);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      console.log(usage);
      return exit.accepted;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    if (error instanceof UsageError) {
      complain(`error: ${error.message}`);
      console.error(`\n${usage}`);
      process.exit(exit.usage);
    }
    complain(`error: ${error instanceof AgentFailure ? error.message : (error as Error).message}`);
    process.exit(exit.unreachable);
  },
);
