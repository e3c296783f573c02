/**
 * A server's presence, kept in its row so every instance sees the same thing: `online` while an
 * agent stream holds the server, `last_seen_at` moved by each heartbeat. An instance that dies
 * cannot say its streams ended, so readers also require a recent `last_seen_at` ({@link isOnline})
 * and the sweep puts such servers right.
 *
 * The activity log gets `server.agent_connected` when an agent says Hello to a server whose last
 * presence event is not "connected", and `server.agent_disconnected` once the server has been
 * silent for {@link disconnectEventAfterMs} (written by the sweep). A reconnect within that time
 * writes nothing, so a flapping agent or a restart of Outpost does not flood the log.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Logger } from "pino";
import type { Orm } from "../db/orm.ts";
import type { Server } from "../db/entities.ts";
import type { AgentCaller } from "../context.ts";
import type { Clock, CoreConfig } from "../deps.ts";
import { freezeOf, type Freeze } from "../servers/frozen.ts";
import { recordActivity } from "../activity/record.ts";
import { inTransaction, type SqlRunner } from "../db/sql.ts";
import { clearPlayers, markServerConnected, markServerGone, markSilentServersDisconnected, takeStaleServersOffline, type BeatRow } from "./agent-queries.ts";

/** How often an agent sends a heartbeat (told to it in Welcome). */
export const heartbeatSeconds = 10;

/** A stream silent for this long (three heartbeats) is ended; agents give core as long. */
export const silenceLimitMs = 3 * heartbeatSeconds * 1000;

/** A server whose agent was last heard from longer ago than this reads as offline. */
export const presenceStaleMs = 30_000;

/** How long a server must stay silent before its disconnect is written to the activity log. */
export const disconnectEventAfterMs = 60_000;

/** How often each serving instance runs {@link sweepPresence}. */
export const sweepEveryMs = 30_000;

/** Whether the server's agent is connected, as every reader must judge it. */
export function isOnline(server: Pick<Server, "online" | "lastSeenAt">, now: Date): boolean {
  return server.online && !!server.lastSeenAt && now.getTime() - server.lastSeenAt.getTime() < presenceStaleMs;
}

export interface HelloFacts {
  /** "online" | "proxy" | "offline" | "insecure" */
  playerAuth: string;
  agentVersion: string;
  /** The agent can run console commands. */
  console: boolean;
  /** What the agent lets Outpost do with the server's files: "off" | "read-only" | "on". */
  files: string;
  /** The agent runs the server's process and takes lifecycle requests. */
  lifecycle: boolean;
  /** This run of the agent (Hello.boot_id), when it names one. */
  bootId: string | null;
}

/**
 * The stream `connectionId` now holds the server: online, seen now, with what its Hello said, and
 * no players until it reports them (a stream it took over from reported its own).
 * False when the key the stream was opened with no longer belongs to the server.
 */
export async function markConnected(em: EntityManager, agent: AgentCaller, connectionId: string, hello: HelloFacts, now: Date): Promise<boolean> {
  const { server } = agent;
  return em.fork().transactional(async (tx) => {
    const query = inTransaction(tx);
    const row = await markServerConnected(query, {
      serverId: server.id,
      agentKeyHash: agent.keyHash,
      connectionId,
      playerAuth: hello.playerAuth,
      agentVersion: hello.agentVersion || null,
      console: hello.console,
      files: hello.files,
      lifecycle: hello.lifecycle,
      bootId: hello.bootId,
      now,
    });
    if (!row) return false;
    await clearPlayers(query, server.id);
    if (row.previous !== "connected") {
      recordActivity(tx, "agent", {
        organizationId: server.organizationId,
        action: "server.agent_connected",
        targetType: "server",
        targetId: server.id,
        serverId: server.id,
        details: { playerAuth: hello.playerAuth, agentVersion: hello.agentVersion },
      });
    }
    return true;
  });
}

/**
 * Where a heartbeat (core/agents/heartbeats.ts) left its stream: "ok" when it still holds the
 * server with a key that works; otherwise why the stream ends — the key was regenerated or the
 * server deleted ("revoked"), another stream said Hello since ("superseded"), or the server became
 * frozen meanwhile (its plan lowered on another instance, or PLANS changed).
 */
export function beatState(config: Pick<CoreConfig, "plans">, found: BeatRow): "ok" | "revoked" | "superseded" | Freeze {
  if (found.seen) return freezeOf(config, found.plan!, found.rank!) ?? "ok";
  return found.holds_key ? "superseded" : "revoked";
}

/**
 * The stream ended: the server goes offline and its players with it, unless a newer stream holds
 * it. True when it went offline (this stream still held it).
 */
export async function markDisconnected(query: SqlRunner, serverId: string, connectionId: string, now: Date): Promise<boolean> {
  return markServerGone(query, serverId, connectionId, now);
}

/**
 * Writes `server.agent_disconnected` for servers silent for {@link disconnectEventAfterMs}, and
 * takes offline servers whose stream died with its instance, clearing their players. One
 * statement each, so instances sweeping at once write each event once. Returns how many
 * disconnects it wrote.
 */
export async function sweepPresence(em: EntityManager, now: Date): Promise<number> {
  return em.fork().transactional(async (tx) => {
    const query = inTransaction(tx);
    const gone = await markSilentServersDisconnected(query, new Date(now.getTime() - disconnectEventAfterMs));
    for (const server of gone) {
      recordActivity(tx, "agent", {
        organizationId: server.organization_id,
        action: "server.agent_disconnected",
        targetType: "server",
        targetId: server.id,
        serverId: server.id,
        details: { lastSeenAt: server.last_seen_at.toISOString() },
      });
    }
    await takeStaleServersOffline(query, new Date(now.getTime() - presenceStaleMs));
    return gone.length;
  });
}

/** Runs {@link sweepPresence} every {@link sweepEveryMs} until `stop`, which waits for a sweep under way. */
export function startPresenceSweep(deps: { orm: Orm; clock: Clock; logger: Logger }): { stop(): Promise<void> } {
  let sweeping: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    sweeping = sweepPresence(deps.orm.em, deps.clock.now()).catch((error) => deps.logger.error({ err: error }, "sweeping agent presence failed"));
  }, sweepEveryMs).unref();
  return {
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
