/**
 * The one bus between instances: a message published on a topic reaches that topic's subscribers
 * on every instance. Hosted sign-ins' changes (a page watching on one instance, the agent that
 * completed it on another) and the game servers' consoles (a command entering one instance, the
 * agent's stream held by another; live output for watchers anywhere) travel on it, each under
 * topics of its own.
 *
 * On a PostgreSQL server it is LISTEN/NOTIFY (core/bus-postgres.ts); the embedded database
 * delivers no notifications, and only one process serves it, so there an in-process emitter is
 * the whole bus. Delivery is at most once: what rides on it either has a fallback (sign-in pages
 * poll) or a timeout (console commands), and console output may be dropped (`lossy`) when the
 * database cannot keep up, so that nothing else waits behind it.
 */
import { EventEmitter } from "node:events";

export interface PublishOptions {
  /**
   * Console output: when the bus is backed up it is dropped (and counted), where another message
   * would be delivered on this instance only.
   */
  lossy?: boolean;
}

export interface Bus {
  /** True when messages reach other processes (a PostgreSQL server); false within one process. */
  readonly shared: boolean;
  /** Settles once the bus can deliver, or its first connection failed (it keeps retrying). */
  readonly ready: Promise<void>;
  /**
   * Delivers `payload` to the subscribers of `topic` on every instance, this one included, and
   * resolves with whether it went to every instance (false: delivered here only, or dropped).
   * Topic and payload together stay within {@link maxMessageBytes}. It never rejects for a
   * failure of the bus, which is logged, and it settles within a few seconds whatever the
   * database does.
   */
  publish(topic: string, payload?: string, options?: PublishOptions): Promise<boolean>;
  /** Messages waiting to be sent to the other instances (a delivery backlog; 0 within one process). */
  readonly pending: number;
  /** Calls `listener` with each payload published on `topic`; returns the unsubscribe. */
  subscribe(topic: string, listener: (payload: string) => void): () => void;
  close(): Promise<void>;
}

/**
 * The most bytes of topic, "\n" and payload one message may carry: a NOTIFY payload is under
 * 8,000 bytes, and the envelope (core/bus-envelope.ts) takes 58 of them.
 */
export const maxMessageBytes = 7_900;

export interface LocalSubscribers {
  emit(topic: string, payload: string): void;
  subscribe(topic: string, listener: (payload: string) => void): () => void;
}

export function localSubscribers(): LocalSubscribers {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    emit: (topic, payload) => void emitter.emit(topic, payload),
    subscribe(topic, listener) {
      emitter.on(topic, listener);
      return () => void emitter.off(topic, listener);
    },
  };
}

/** Throws for a message the bus cannot carry (a programming error, not a failure of the bus). */
export function checkSize(topic: string, payload: string): void {
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
    pending: 0,
    async publish(topic, payload = "") {
      checkSize(topic, payload);
      local.emit(topic, payload);
      return true;
    },
    subscribe: local.subscribe,
    async close() {},
  };
}
