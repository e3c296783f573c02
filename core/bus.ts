/**
 * The one bus between instances: a message published on a topic reaches that topic's subscribers
 * on every instance. Hosted sign-ins' changes (a page watching on one instance, the agent that
 * completed it on another) and the game servers' consoles (a command entering one instance, the
 * agent's stream held by another; live output for watchers anywhere) travel on it, each under
 * topics of its own.
 *
 * On a PostgreSQL server it is LISTEN/NOTIFY on one channel and one dedicated connection;
 * PostgreSQL caps a notification's payload below 8,000 bytes, so publishers keep within
 * {@link maxMessageBytes}. The embedded database delivers no notifications, and only one
 * process serves it, so there an in-process emitter is the whole bus. Delivery is at most once:
 * what rides on it either has a fallback (sign-in pages poll) or a timeout (console commands).
 */
import { EventEmitter } from "node:events";
import pg from "pg";
import type { Logger } from "pino";

export interface Bus {
  /** True when messages reach other processes (a PostgreSQL server); false within one process. */
  readonly shared: boolean;
  /** Settles once the bus can deliver (listening, or given up: then it retries in the background). */
  readonly ready: Promise<void>;
  /**
   * Delivers `payload` to the subscribers of `topic` on every instance, this one included. Topic
   * and payload together stay within {@link maxMessageBytes}. A failure is logged, not thrown.
   */
  publish(topic: string, payload?: string): Promise<void>;
  /** Calls `listener` with each payload published on `topic`; returns the unsubscribe. */
  subscribe(topic: string, listener: (payload: string) => void): () => void;
  close(): Promise<void>;
}

/** The most bytes of topic and payload one message may carry (a NOTIFY payload is under 8,000). */
export const maxMessageBytes = 7_900;

const channel = "outpost_bus";

function localSubscribers() {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    emit: (topic: string, payload: string) => void emitter.emit(topic, payload),
    subscribe(topic: string, listener: (payload: string) => void) {
      emitter.on(topic, listener);
      return () => void emitter.off(topic, listener);
    },
  };
}

function checkSize(topic: string, payload: string): void {
  if (topic.includes("\n")) throw new Error(`a bus topic has no line break: ${JSON.stringify(topic)}`);
  const bytes = Buffer.byteLength(topic) + 1 + Buffer.byteLength(payload);
  if (bytes > maxMessageBytes) throw new Error(`a bus message of ${bytes} bytes on ${topic} is over ${maxMessageBytes}`);
}

/** The bus of one process (the embedded database, one-off commands, tests of one instance). */
export function createLocalBus(): Bus {
  const local = localSubscribers();
  return {
    shared: false,
    ready: Promise.resolve(),
    async publish(topic, payload = "") {
      checkSize(topic, payload);
      local.emit(topic, payload);
    },
    subscribe: local.subscribe,
    async close() {},
  };
}

/**
 * The bus across instances: a dedicated client LISTENs (reconnecting after a drop) and NOTIFYs.
 * A publish that fails is logged and delivered in this process only.
 */
export function createPostgresBus(url: string, logger: Logger): Bus {
  const local = localSubscribers();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  // Notifications go one after another on the one connection, in the order they were published.
  let sending: Promise<unknown> = Promise.resolve();

  function connect(): Promise<pg.Client> {
    connecting ??= (async () => {
      const c = new pg.Client({ connectionString: url });
      c.on("notification", (message) => {
        if (message.channel !== channel || !message.payload) return;
        const split = message.payload.indexOf("\n");
        if (split > 0) local.emit(message.payload.slice(0, split), message.payload.slice(split + 1));
      });
      c.on("error", (error) => {
        logger.warn({ err: error }, "the bus connection failed; reconnecting");
        drop(c);
      });
      c.on("end", () => drop(c));
      await c.connect();
      await c.query(`listen ${channel}`);
      client = c;
      return c;
    })().catch((error) => {
      connecting = undefined;
      throw error;
    });
    return connecting;
  }

  function drop(c: pg.Client) {
    if (client !== c) return;
    client = undefined;
    connecting = undefined;
    void c.end().catch(() => {});
    if (!closed && !retry) {
      retry = setTimeout(() => {
        retry = undefined;
        if (!closed) connect().catch((error) => logger.warn({ err: error }, "reconnecting the bus connection failed"));
      }, 1000).unref();
    }
  }

  const ready = connect().then(
    () => undefined,
    (error) => logger.warn({ err: error }, "the bus connection failed; instances do not hear each other until it is back"),
  );

  return {
    shared: true,
    ready,
    async publish(topic, payload = "") {
      checkSize(topic, payload);
      const send = sending.then(async () => {
        const c = client ?? (await connect());
        await c.query("select pg_notify($1, $2)", [channel, `${topic}\n${payload}`]);
      });
      sending = send.catch(() => {});
      try {
        await send;
      } catch (error) {
        logger.warn({ err: error, topic }, "publishing on the bus failed");
        local.emit(topic, payload);
      }
    },
    subscribe: local.subscribe,
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      await ready;
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
