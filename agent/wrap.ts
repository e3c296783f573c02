/**
 * `outpost-agent wrap -- <server command>`: runs a Minecraft server as a child process and is its
 * agent. The operator's terminal keeps working (their lines go to the server's console, its output
 * is shown unchanged; the agent's own messages go to stderr as "[outpost] …"). The console output
 * tells the agent who joins and leaves and who types /outpost (log-formats.ts); answers go back
 * in game with tellraw; Outpost's console commands are written to the console too. The server's
 * directory is served to the files panel as the operator allows (`--root`, `--files`, `--files-deny`).
 *
 * The game comes first: the server starts whether or not Outpost can be reached, keeps running
 * while the agent reconnects, and keeps running without Outpost when Outpost refuses the agent (a
 * wrong key: said loudly; restart the agent to try again). A server that crashes is started again
 * (`--restart`, restart-policy.ts), after a delay that grows, until a crash loop; the agent stays
 * connected meanwhile. Outpost can start, stop, restart and kill it (wrap-lifecycle.ts); a server
 * stopped from Outpost, or given up on after a crash loop, leaves the agent connected until
 * Outpost starts it again. Ctrl-C or SIGTERM writes `stop` and kills the server only after the
 * grace period (wrap-signals.ts); the agent exits with the server's last exit status.
 */
import { createInterface } from "node:readline";
import { GameState, GameStateChanged_Cause, startAgent, type Agent, type AgentOptions, type LifecycleHandler } from "./client.ts";
import { describeEvent, filesNotice } from "./wrap-notices.ts";
import { plainLine, readLogLine } from "./log-formats.ts";
import { readLines } from "./output-lines.ts";
import { createConsoleRunner } from "./wrap-console.ts";
import { describeFileError } from "./files/requests.ts";
import { createPlayersSession, refusedMessage, unreachableMessage, type PlayersSession } from "./wrap-players.ts";
import { startServerProcess, type ServerExit, type ServerProcess } from "./server-process.ts";
import { createRestartPolicy, restartDefaults, type RestartPolicy, type RestartPolicyOptions } from "./restart-policy.ts";
import { handleStopSignals, type Stopper } from "./wrap-signals.ts";
import { memoryLimit, startStatsSampler } from "./stats-sampler.ts";
import { createGameTiming, isTimingAnswer } from "./game-timing.ts";
import { createWrapLifecycle, notStartedAgain, outpostCause, type Cause, type WrapLifecycle, type WrapLifecycleDeps } from "./wrap-lifecycle.ts";
import { visibleLine } from "../contract/one-line.ts";

export interface WrapOptions {
  /** How to reach Outpost (the console handler is the wrapper's own). */
  agent: Omit<AgentOptions, "console">;
  /** The server command and its arguments, e.g. ["java", "-jar", "paper.jar", "nogui"]. */
  command: string[];
  /** How long the server has to stop after `stop` before it is killed. */
  graceSeconds: number;
  /** What to do when the server ends by itself (default: restart it when it crashed). */
  restart?: Omit<RestartPolicyOptions, "now">;
  /** How often the server is sampled for Outpost's charts (default 10 s). */
  statsEveryMs?: number;
  /** Where the operator reads the agent's messages (default: stderr). */
  note?: (message: string) => void;
}

const defaultNote = (message: string) => void process.stderr.write(`[outpost] ${message}\n`);

/** The server process running now, if any: what the console, the players, the signals and Outpost's requests act on. */
function createCurrentServer(): Pick<ServerProcess, "writeLine" | "kill" | "running"> & {
  set(server: ServerProcess | undefined): void;
  exited(): Promise<unknown>;
  /** Its process group, while it runs. */
  group(): number | undefined;
} {
  let current: ServerProcess | undefined;
  return {
    set: (server) => void (current = server),
    writeLine: (line) => current?.writeLine(line) ?? false,
    kill: (signal) => current?.kill(signal),
    running: () => current?.running() ?? false,
    exited: () => current?.exited ?? Promise.resolve(),
    group: () => (current?.running() ? current.child.pid : undefined),
  };
}

/** The game's state as reported to Outpost, and the last one, which a request that changes nothing answers with. */
function createGameReport(agent: Pick<Agent, "setGameState">): Pick<WrapLifecycleDeps, "report" | "current"> {
  let last = { state: GameState.UNSPECIFIED, detail: "" };
  return {
    report(state, detail, cause) {
      last = { state, detail };
      agent.setGameState(state, detail, cause);
    },
    current: () => last,
  };
}

const byOperator: Cause = { cause: GameStateChanged_Cause.OPERATOR };
const byGame: Cause = { cause: GameStateChanged_Cause.GAME };
const byPolicy: Cause = { cause: GameStateChanged_Cause.RESTART_POLICY };

/** Runs the server, again after each crash as `--restart` says and as Outpost asks, and resolves with its last exit status, the agent's own. */
export async function wrap(options: WrapOptions): Promise<number> {
  const note = options.note ?? defaultNote;
  const url = options.agent.url;
  note(filesNotice(options.agent.files));
  // Whoever reads the agent's output may go away (a closed pipe); the server keeps running.
  for (const out of [process.stdout, process.stderr]) out.on("error", () => {});
  const current = createCurrentServer();

  let outpost: "connected" | "away" | "refused" = "away";
  const runner = createConsoleRunner(current.writeLine, (command) => note(`Outpost runs a console command: ${visibleLine(command)}`));
  // Outpost's requests reach the lifecycle made below, once the agent is connected.
  const requests: LifecycleHandler = (...args) => lifecycle.handler(...args);
  const agent = startAgent({ ...options.agent, console: runner.handler, lifecycle: requests }, (event) => {
    if (event.kind === "fileError") return note(visibleLine(describeFileError(event.error, event.operation)));
    outpost = event.kind === "connected" ? "connected" : event.kind === "stopped" && event.error ? "refused" : "away";
    describeEvent(event, url, note);
  });
  agent.stopped.catch(() => {});
  const outpostAway = () => (outpost === "connected" ? undefined : outpost === "refused" ? refusedMessage : unreachableMessage);
  const stdin = passOperatorInput(current, note);
  const game = createGameReport(agent);
  const stopper = handleStopSignals(current, options.graceSeconds, note, () => game.report(GameState.STOPPING, "", byOperator));
  const lifecycle = createWrapLifecycle({ server: current, graceSeconds: options.graceSeconds, stopper, note, ...game });
  const policy = createRestartPolicy(options.restart ?? { mode: "on-crash" });

  const timing = createGameTiming({ probe: runner.probe, runningGroup: () => (game.current().state === GameState.RUNNING ? current.group() : undefined) });
  const sampler = startStatsSampler({
    group: () => current.group(),
    root: options.agent.files?.root ?? process.cwd(),
    everyMs: options.statsEveryMs ?? 10_000,
    report: (sample) => agent.reportStats(sample),
    timing: () => timing.sample(),
    memoryLimitBytes: memoryLimit(options.command),
  });
  const hidden = (line: string) => runner.probing() && isTimingAnswer(line);
  const run: RunDeps = { agent, current, note, collect: runner.line, hidden, outpostAway, game, lifecycle, stopper, policy };
  let status = 0;
  for (let cause = byOperator; ;) {
    const exit = await runOnce(options.command, run, cause);
    status = exit.status;
    const next = await afterExit(exit, run);
    if (!next) break;
    cause = next;
  }
  sampler.stop();
  stopper.dispose();
  stdin.close();
  await agent.stop();
  return status;
}

interface RunDeps {
  agent: Agent;
  current: ReturnType<typeof createCurrentServer>;
  note: (message: string) => void;
  collect: (line: string) => void;
  /** A line kept out of Outpost's live console (the agent's own command's answer). */
  hidden: (line: string) => boolean;
  outpostAway: () => string | undefined;
  game: ReturnType<typeof createGameReport>;
  lifecycle: WrapLifecycle;
  stopper: Stopper;
  policy: RestartPolicy;
}

/** What follows the server's end: why it starts again, or undefined when the agent ends. */
async function afterExit(exit: ServerExit, deps: RunDeps): Promise<Cause | undefined> {
  const { game, lifecycle, note } = deps;
  const intent = lifecycle.takeIntent();
  if (deps.stopper.requested()) {
    game.report(GameState.STOPPED, exit.how, byOperator);
    note(`the server stopped (${exit.how})`);
    return undefined;
  }
  if (intent?.action === "restart") {
    game.report(GameState.STOPPED, `${exit.how}; restarting, as Outpost asked`, outpostCause(intent.requestId));
    note(`the server stopped (${exit.how}); starting it again, as Outpost asked`);
    return outpostCause(intent.requestId);
  }
  if (intent) {
    const how = intent.action === "kill" ? "killed" : "stopped";
    game.report(GameState.STOPPED, `${exit.how}; ${how} from Outpost`, outpostCause(intent.requestId));
    note(`the server was ${how} from Outpost (${exit.how}); the agent stays connected, and Outpost can start it again`);
    return untilStarted(deps);
  }
  const ended = exit.status === 0 ? GameState.STOPPED : GameState.CRASHED;
  const decision = deps.policy.decide(exit.status);
  if (decision.kind === "exit") {
    game.report(ended, exit.how, byGame);
    note(`the server exited (${exit.how}); stopping the agent`);
    return undefined;
  }
  if (decision.kind === "restart") {
    game.report(ended, `${exit.how}; starting it again in ${decision.delayMs / 1000} s`, byPolicy);
    note(`the server ended (${exit.how}); starting it again in ${decision.delayMs / 1000} s (end ${decision.ends} of ${restartDefaults.loopEnds} within ten minutes)`);
    const wake = await lifecycle.idle(decision.delayMs);
    if (wake.kind === "timeout") return byPolicy;
    if (wake.kind === "start") return outpostCause(wake.requestId);
    if (wake.kind === "signal") return void game.report(GameState.STOPPED, `${exit.how}; not started again: the agent was stopped`, byOperator);
    game.report(GameState.STOPPED, notStartedAgain, outpostCause(wake.requestId));
    return untilStarted(deps);
  }
  game.report(ended, `${exit.how}, the ${decision.ends}th time within ten minutes: a crash loop, not started again`, byPolicy);
  note(
    `the server ended (${exit.how}), the ${decision.ends}th time within ten minutes: a crash loop, so it is not started again. ` +
      "The agent stays connected (Outpost can start the server again); Ctrl-C or SIGTERM ends it.",
  );
  return untilStarted(deps, `${exit.how}; the agent was stopped after the crash loop`);
}

/** The server stays stopped until Outpost starts it (a new count of crashes then) or the operator stops the agent. */
async function untilStarted(deps: RunDeps, stoppedDetail?: string): Promise<Cause | undefined> {
  const wake = await deps.lifecycle.idle();
  if (wake.kind === "start") {
    deps.policy.reset();
    return outpostCause(wake.requestId);
  }
  if (stoppedDetail) deps.game.report(GameState.STOPPED, stoppedDetail, byOperator);
  return undefined;
}

/** Starts the server once and resolves when it has exited: its output read, its players reported, until then. */
async function runOnce(command: string[], deps: RunDeps, cause: Cause): Promise<ServerExit> {
  const { agent, current, note } = deps;
  note(`starting the server: ${command.join(" ")}`);
  const server = startServerProcess(command);
  // Should the agent be killed outright, this is how the operator finds the server (docs/servers.md).
  if (server.child.pid !== undefined) note(`the server is process ${server.child.pid}, in a process group of its own`);
  // Should the agent itself fail, the server is not left behind: SIGTERM lets Java save and stop.
  const killOnExit = () => server.kill("SIGTERM");
  process.once("exit", killOnExit);
  current.set(server);
  deps.game.report(GameState.STARTING, "", cause);
  deps.lifecycle.started();
  const players = createPlayersSession({ agent, outpostAway: deps.outpostAway, command: (line) => void server.writeLine(line), note });
  const stopping = () => deps.stopper.requested() || deps.lifecycle.stopping();
  readServerOutput(server, { ...deps, players, stopping });
  const exit = await server.exited;
  current.set(undefined);
  process.off("exit", killOnExit);
  // Its players left with it.
  agent.setPlayers([]);
  return exit;
}

/**
 * The server's stdout and stderr: shown unchanged and streamed to Outpost's live console. Stdout,
 * where the game logs (Java's stderr goes there too, through the game's logger), is also the
 * output of the console command being run, and its whole lines are read for players.
 */
function readServerOutput(
  server: ServerProcess,
  deps: Pick<RunDeps, "agent" | "collect" | "hidden" | "note" | "game"> & { players: PlayersSession; stopping: () => boolean },
): void {
  const { agent, players, collect, hidden, note, stopping } = deps;
  const { child } = server;
  child.stdout!.pipe(process.stdout);
  child.stderr!.pipe(process.stderr);
  const live = (raw: string) => {
    const line = plainLine(raw);
    if (!hidden(line)) agent.consoleOutput([line]);
  };
  readLines(child.stdout!, ({ text: raw, whole }) => {
    live(raw);
    collect(plainLine(raw));
    const understood = whole ? readLogLine(raw) : undefined;
    if (!understood) return;
    if (understood.event.kind === "ready") return void (stopping() || deps.game.report(GameState.RUNNING, "", byGame));
    try {
      players.handle(understood.event);
    } catch (error) {
      note(`could not act on "${visibleLine(plainLine(raw))}": ${visibleLine((error as Error).message)}`);
    }
  });
  readLines(child.stderr!, ({ text }) => live(text));
}

/** The operator's terminal: each line they type goes to the server's console, whole (none while it is not running). */
function passOperatorInput(server: Pick<ServerProcess, "writeLine">, note: (message: string) => void): { close(): void } {
  const input = createInterface({ input: process.stdin, terminal: false });
  // Without a terminal (systemd, docker without -i) stdin ends at once: the server keeps running.
  input.on("line", (line) => {
    if (!server.writeLine(line)) note("the server is not running: that line went nowhere");
  });
  return { close: () => input.close() };
}
