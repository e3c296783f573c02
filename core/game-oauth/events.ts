/**
 * Completion events of hosted sign-in sessions, so a page watching on one instance learns at once
 * that an agent on another instance completed its sign-in. On a PostgreSQL server they travel by
 * LISTEN/NOTIFY on one dedicated connection; the embedded database delivers no notifications, and
 * only one process serves it, so there an in-process emitter is the whole bus. Watchers also poll
 * now and then (core/game-oauth/watch.ts), so a lost notification only delays the page.
 */
import { EventEmitter } from "node:events";
import pg from "pg";
import type { Logger } from "pino";

export interface AuthorizationEvents {
  /** Tells every instance that the session changed (after the change is committed). */
  publish(sessionId: string): Promise<void>;
  /** Calls `listener` whenever the session changes; returns the unsubscribe. */
  subscribe(sessionId: string, listener: () => void): () => void;
  close(): Promise<void>;
}

const channel = "outpost_game_oauth_authorizations";

function localSubscribers() {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    emit: (sessionId: string) => void emitter.emit(sessionId),
    subscribe(sessionId: string, listener: () => void) {
      emitter.on(sessionId, listener);
      return () => void emitter.off(sessionId, listener);
    },
  };
}

/** The bus of one process (the embedded database, or tests of one instance). */
export function createLocalAuthorizationEvents(): AuthorizationEvents {
  const local = localSubscribers();
  return {
    async publish(sessionId) {
      local.emit(sessionId);
    },
    subscribe: local.subscribe,
    async close() {},
  };
}

/**
 * The bus across instances: a dedicated client LISTENs (reconnecting after a drop) and NOTIFYs.
 * A publish that fails is logged, not thrown: the sign-in is complete and watchers poll.
 */
export function createPostgresAuthorizationEvents(url: string, logger: Logger): AuthorizationEvents {
  const local = localSubscribers();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  function connect(): Promise<pg.Client> {
    connecting ??= (async () => {
      const c = new pg.Client({ connectionString: url });
      c.on("notification", (message) => {
        if (message.channel === channel && message.payload) local.emit(message.payload);
      });
      c.on("error", (error) => {
        logger.warn({ err: error }, "the sign-in event connection failed; reconnecting");
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
        if (!closed) connect().catch((error) => logger.warn({ err: error }, "reconnecting the sign-in event connection failed"));
      }, 1000).unref();
    }
  }

  const ready = connect().catch((error) => {
    logger.warn({ err: error }, "the sign-in event connection failed; pages fall back to polling");
  });

  return {
    async publish(sessionId) {
      try {
        const c = client ?? (await connect());
        await c.query("select pg_notify($1, $2)", [channel, sessionId]);
      } catch (error) {
        logger.warn({ err: error, sessionId }, "publishing a sign-in event failed");
        local.emit(sessionId);
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
