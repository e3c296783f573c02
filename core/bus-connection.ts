/**
 * The bus's one dedicated PostgreSQL connection, LISTENing on the bus's channel. Whenever it is
 * lost (it could not be opened, it dropped, a query on it took longer than {@link busTimeoutMs},
 * or a ping every {@link pingEveryMs} did), one retry is scheduled, after 1 s and then twice as
 * long after each failure, up to {@link maxRetryMs}, and every new connection LISTENs again, so
 * an instance whose database was down, at its start or for any length of time, hears the bus
 * again once it is back. Connecting, each query, and closing are bounded, and TCP keepalive is on,
 * so a stalled network can hold nothing for long.
 */
import pg from "pg";
import type { Logger } from "pino";
import { onConnection } from "./db/sql.ts";
import { jobFailureLog } from "./log-throttle.ts";
import { busChannel, listenToBus, pingBus } from "./bus-queries.ts";

/** How long connecting, and each query on the connection, may take before it counts as lost. */
export const busTimeoutMs = 2_000;
/** How often an idle connection is checked (a LISTEN connection is otherwise silent). */
export const pingEveryMs = 15_000;
const firstRetryMs = 1_000;
const maxRetryMs = 30_000;

export interface BusConnection {
  /** Settles once the first connection LISTENs, or failed (retries go on). */
  readonly ready: Promise<void>;
  /** The LISTENing client, after the connect under way if one is; throws while there is none. */
  client(): Promise<pg.Client>;
  /** A query on `c` failed in a way that leaves the connection in doubt (a timeout): drop it, reconnect. */
  lost(c: pg.Client, error: unknown): void;
  /** Ends the connection and any under way, and stops reconnecting. */
  close(): Promise<void>;
}

/** Ends `c`, politely within {@link busTimeoutMs}, then by destroying its socket. */
async function endClient(c: pg.Client): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, busTimeoutMs)));
  await Promise.race([c.end().catch(() => {}), late]);
  clearTimeout(timer);
  c.connection.stream.destroy();
}

/** A new client, connected and LISTENing; `lost` hears of its failure or end. */
async function listeningClient(url: string, on: { notification(payload: string): void; lost(c: pg.Client, error?: unknown): void }): Promise<pg.Client> {
  const c = new pg.Client({
    connectionString: url,
    application_name: "outpost bus",
    keepAlive: true,
    connectionTimeoutMillis: busTimeoutMs,
    query_timeout: busTimeoutMs,
  });
  c.on("notification", (message) => {
    if (message.channel === busChannel && message.payload) on.notification(message.payload);
  });
  c.on("error", (error) => on.lost(c, error));
  c.on("end", () => on.lost(c));
  try {
    await c.connect();
    await listenToBus(onConnection(c));
  } catch (error) {
    await endClient(c);
    throw error;
  }
  return c;
}

export function openBusConnection(url: string, logger: Logger, onNotification: (payload: string) => void): BusConnection {
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let retry: NodeJS.Timeout | undefined;
  let ping: NodeJS.Timeout | undefined;
  let failures = 0;
  let closed = false;
  const reconnectFailed = jobFailureLog(logger, "reconnecting the bus connection failed; retrying", "warn");

  function scheduleRetry() {
    if (closed || retry || connecting || client) return;
    const delay = Math.min(maxRetryMs, firstRetryMs * 2 ** Math.min(failures, 16));
    failures++;
    retry = setTimeout(() => {
      retry = undefined;
      connect().catch((error) => reconnectFailed(error, { failures }));
    }, delay).unref();
  }

  function drop(c: pg.Client, error?: unknown) {
    if (client !== c) return;
    client = undefined;
    clearInterval(ping);
    if (!closed) logger.warn({ err: error }, "the bus connection was lost; reconnecting");
    void endClient(c);
    scheduleRetry();
  }

  async function open(): Promise<pg.Client> {
    if (closed) throw new Error("the bus is closed");
    const c = await listeningClient(url, {
      notification: (payload) => !closed && onNotification(payload),
      lost: (lost, error) => drop(lost, error),
    });
    // close() may have come while this connected: it waits for this, and nothing may listen after it.
    if (closed) {
      await endClient(c);
      throw new Error("the bus was closed while it connected");
    }
    client = c;
    failures = 0;
    const query = onConnection(c);
    ping = setInterval(() => void pingBus(query).catch((error) => drop(c, error)), pingEveryMs).unref();
    return c;
  }

  function connect(): Promise<pg.Client> {
    connecting ??= open().finally(() => {
      connecting = undefined;
      // Cleared first: scheduleRetry schedules nothing while a connect is under way.
      if (!client) scheduleRetry();
    });
    return connecting;
  }

  const ready = connect().then(
    () => undefined,
    (error) => logger.warn({ err: error }, "the bus connection failed; instances do not hear each other until it is back"),
  );

  return {
    ready,
    async client() {
      if (client) return client;
      if (connecting) return connecting;
      throw new Error("the bus connection is down; reconnecting");
    },
    lost: drop,
    async close() {
      closed = true;
      clearTimeout(retry);
      clearInterval(ping);
      await connecting?.catch(() => {});
      const c = client;
      client = undefined;
      if (c) await endClient(c);
    },
  };
}
