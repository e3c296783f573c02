/**
 * The bus across instances on a PostgreSQL server: NOTIFY on one channel, heard by a dedicated
 * LISTENing connection on every instance (core/bus-connection.ts), each message sealed with an
 * HMAC (core/bus-envelope.ts). Messages go out one after another, in the order published, on
 * that connection. What cannot go (the connection is down, a query on it timed out, more than
 * {@link maxPendingPublishes} wait, one waited {@link maxPublishWaitMs}) is delivered on this
 * instance only, or, for console output (`lossy`), dropped and counted; either way it is logged,
 * at most once a minute. So a stalled database delays no sign-in answer, shutdown or later
 * message for more than a few seconds.
 */
import pg from "pg";
import type { Logger } from "pino";
import { systemClock, type Clock } from "./deps.ts";
import { checkSize, localSubscribers, type Bus, type PublishOptions } from "./bus.ts";
import { openBusConnection } from "./bus-connection.ts";
import { notifyBus } from "./bus-queries.ts";
import { onConnection } from "./db/sql.ts";
import { createEnvelopeOpener, seal } from "./bus-envelope.ts";
import { throttledWarning } from "./log-throttle.ts";

/** Messages that may wait to be sent; past it, a message is not queued. */
export const maxPendingPublishes = 256;
/** The longest a publish keeps its caller waiting. */
export const maxPublishWaitMs = 3_000;

export interface PostgresBusOptions {
  url: string;
  logger: Logger;
  /** The HMAC key, the same on every instance: derived from KEY_ENCRYPTION_KEY for `busKeyPurpose`. */
  key: () => string;
  /** The time messages are stamped and judged fresh by: the database's, so every instance agrees. */
  clock?: Clock;
}

/** A message to send. */
interface Outgoing {
  topic: string;
  payload: string;
  lossy: boolean;
}

interface Pending extends Outgoing {
  /** Tells the caller (once) whether the message went to every instance. */
  settle(sent: boolean): void;
}

/** The most messages one statement sends. */
const maxBatch = 64;

/**
 * The messages waiting to go, sent in order by `send`: all that queued while the one before was
 * on its way go together, in one statement (one round trip and one transaction, where each
 * message alone would be one of each: under load, the queue would otherwise grow by the time each
 * takes). Each caller waits at most {@link maxPublishWaitMs}, and a message still queued then
 * goes to `notSent`.
 */
function createSendQueue(send: (messages: Outgoing[]) => Promise<string | undefined>, notSent: (message: Outgoing, why: string) => false) {
  const queue: Pending[] = [];
  let sending = false;

  async function sendQueued(): Promise<void> {
    if (sending) return;
    sending = true;
    try {
      for (let batch = queue.splice(0, maxBatch); batch.length; batch = queue.splice(0, maxBatch)) {
        const failure = await send(batch);
        for (const message of batch) message.settle(failure === undefined || notSent(message, failure));
      }
    } finally {
      sending = false;
    }
  }

  return {
    get length() {
      return queue.length;
    },
    enqueue(outgoing: Outgoing): Promise<boolean> {
      return new Promise((resolve) => {
        let settled = false;
        const message: Pending = {
          ...outgoing,
          settle(sent) {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            resolve(sent);
          },
        };
        // The caller waits no longer; a message still queued goes no further.
        const timer = setTimeout(() => {
          const at = queue.indexOf(message);
          if (at >= 0) queue.splice(at, 1);
          message.settle(at >= 0 ? notSent(message, `it waited ${maxPublishWaitMs} ms to be sent`) : false);
        }, maxPublishWaitMs).unref();
        queue.push(message);
        void sendQueued();
      });
    },
    /** Every message still queued goes to `notSent`. */
    drain(why: string) {
      for (const message of queue.splice(0)) message.settle(notSent(message, why));
    },
  };
}

export function createPostgresBus(options: PostgresBusOptions): Bus {
  const { logger } = options;
  const local = localSubscribers();
  let closed = false;
  let key: string | undefined;
  const secret = () => (key ??= options.key());
  const open = createEnvelopeOpener(secret);
  const now = () => (options.clock ?? systemClock).now().getTime();
  const warnRefused = throttledWarning(logger, "a bus message failed authentication and was dropped (another KEY_ENCRYPTION_KEY, or a forgery)");
  const warnDropped = throttledWarning(logger, "console output was dropped: the bus could not send it");
  const warnLocal = throttledWarning(logger, "a bus message was delivered on this instance only: the bus could not send it");

  const connection = openBusConnection(options.url, logger, (wire) => {
    const opened = open(wire, now());
    if ("refused" in opened) return warnRefused({ why: opened.refused });
    local.emit(opened.topic, opened.payload);
  });

  /** What could not be sent: delivered here, or (console output) dropped. */
  function notSent(message: Outgoing, why: string): false {
    if (message.lossy) warnDropped({ why });
    else {
      warnLocal({ why, topic: message.topic });
      local.emit(message.topic, message.payload);
    }
    return false;
  }

  /** Sends the messages together; why not, when they could not go. */
  async function send(messages: Outgoing[]): Promise<string | undefined> {
    let c: pg.Client | undefined;
    try {
      c = await connection.client();
      const sentAt = now();
      await notifyBus(
        onConnection(c),
        messages.map((message) => seal(secret(), message.topic, message.payload, sentAt)),
      );
      return undefined;
    } catch (error) {
      // PostgreSQL refused the statement on a sound connection; anything else (a timeout) leaves it in doubt.
      if (c && !(error instanceof pg.DatabaseError)) connection.lost(c, error);
      return (error as Error).message;
    }
  }

  const queue = createSendQueue(send, notSent);
  return {
    shared: true,
    ready: connection.ready,
    get pending() {
      return queue.length;
    },
    async publish(topic, payload = "", publishOptions: PublishOptions = {}) {
      checkSize(topic, payload);
      const message = { topic, payload, lossy: publishOptions.lossy ?? false };
      if (closed) return notSent(message, "the bus is closed");
      if (queue.length >= maxPendingPublishes) return notSent(message, `${maxPendingPublishes} messages wait to be sent`);
      return queue.enqueue(message);
    },
    subscribe: local.subscribe,
    async close() {
      closed = true;
      queue.drain("the bus is closing");
      await connection.close();
    },
  };
}
