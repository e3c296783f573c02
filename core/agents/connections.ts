/**
 * The agent streams open on this instance, so that what must stop an agent at once can reach its
 * stream: a regenerated key or a deleted server, a newer stream for the same server, the
 * instance shutting down. Built by the composition root (one per process), never global. Streams
 * on other instances learn the same facts from the database at their next heartbeat.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { ConnectionFiles } from "./connection-files.ts";
import type { ConnectionConsole } from "./console.ts";
import type { ConnectionLifecycle } from "./connection-lifecycle.ts";

export interface OnlinePlayer {
  uuid: string;
  name: string;
}

/** One agent stream, as its handler exposes it. */
export interface AgentConnection {
  readonly id: string;
  readonly serverId: string;
  /** Set once the stream said Hello and holds its server; cleared when it ends. */
  holding: boolean;
  /** The players online, as the agent last reported them. */
  players: readonly OnlinePlayer[];
  /** Its console: commands waiting for their answers, recent output. */
  readonly console: ConnectionConsole;
  /** Its file operations waiting for their FileResults (core/agents/file-router.ts asks). */
  readonly files: ConnectionFiles;
  /** Its lifecycle requests waiting for their LifecycleResults (core/agents/lifecycle.ts asks). */
  readonly lifecycle: ConnectionLifecycle;
  /** Ends the stream with this error, which the agent receives. */
  end(error: unknown): void;
  /**
   * Ends the stream with this error once the message being handled is answered, reading no more:
   * a shutdown, after which the agent asks again elsewhere what got no answer here.
   */
  drain(error: unknown): void;
  /** Settles once the stream has ended and recorded it. */
  readonly finished: Promise<void>;
}

export interface AgentConnections {
  /** True once {@link close} was called: new streams are refused. */
  readonly closing: boolean;
  /** Follows a stream from its start until it has finished. */
  track(connection: AgentConnection): void;
  /** The stream said Hello: it holds its server; any other stream of the server here ends. */
  hold(connection: AgentConnection): void;
  /** Ends every stream of the server here (its key stopped working). */
  endServer(serverId: string, error: unknown): void;
  /** The server's players, if its agent is connected to this instance. */
  players(serverId: string): readonly OnlinePlayer[] | undefined;
  /** How many streams here hold their server: the agents connected to this instance. */
  connected(): number;
  /** The stream with this id, if it is open here and holds its server. */
  holding(connectionId: string): AgentConnection | undefined;
  /**
   * Ends every stream with `unavailable` once its message under way is answered (agents reconnect
   * elsewhere and ask again what went unanswered), and waits until each has finished.
   */
  close(): Promise<void>;
}

/** The end of a stream whose server another stream (of another agent, or a reconnect) now holds. */
export function supersededError(): ConnectError {
  return new ConnectError("another agent connected with this server's key; this one stops", Code.FailedPrecondition);
}

export function createAgentConnections(): AgentConnections {
  // Indexed by server and by stream id: a Hello, a console command and a players read each look up
  // one server's streams, which with 10,000 agents connected must not mean walking them all.
  const byServer = new Map<string, Set<AgentConnection>>();
  const byId = new Map<string, AgentConnection>();
  let closing = false;
  const ofServer = (serverId: string): ReadonlySet<AgentConnection> => byServer.get(serverId) ?? new Set();
  return {
    get closing() {
      return closing;
    },
    track(connection) {
      const { serverId } = connection;
      byServer.set(serverId, (byServer.get(serverId) ?? new Set()).add(connection));
      byId.set(connection.id, connection);
      void connection.finished.finally(() => {
        byId.delete(connection.id);
        const streams = byServer.get(serverId);
        streams?.delete(connection);
        if (streams?.size === 0) byServer.delete(serverId);
      });
    },
    hold(connection) {
      for (const other of [...ofServer(connection.serverId)]) {
        if (other !== connection) other.end(supersededError());
      }
      connection.holding = true;
    },
    endServer(serverId, error) {
      for (const connection of [...ofServer(serverId)]) connection.end(error);
    },
    players(serverId) {
      for (const connection of ofServer(serverId)) if (connection.holding) return connection.players;
      return undefined;
    },
    connected() {
      let n = 0;
      for (const connection of byId.values()) if (connection.holding) n++;
      return n;
    },
    holding(connectionId) {
      const connection = byId.get(connectionId);
      return connection?.holding ? connection : undefined;
    },
    async close() {
      closing = true;
      const ending = [...byId.values()];
      for (const connection of ending) connection.drain(new ConnectError("Outpost is shutting down; reconnect in a moment", Code.Unavailable));
      await Promise.allSettled(ending.map((c) => c.finished));
    },
  };
}
