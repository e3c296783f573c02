/**
 * Tells users of their API keys that expire within {@link noticeDays} days (an `api_key`
 * notification each, once per key: its dedupe key), so a script's key can be replaced before it
 * stops working. Every instance runs it; the dedupe key keeps it to one notice however many do.
 */
import type { Logger } from "pino";
import type { Orm } from "../db/orm.ts";
import type { Statements } from "../db/sql.ts";
import type { Clock } from "../deps.ts";
import { findExpiringKeys } from "./notification-queries.ts";
import { keepNotification, type Notifier } from "./notify.ts";

export const noticeDays = 7;
export const checkEveryMs = 60 * 60_000;

/** Keeps a notice for each key newly within the window; returns how many were kept. */
export async function noticeExpiringKeys(deps: { orm: Orm; statements: Statements; notifier: Notifier }, now: Date): Promise<number> {
  const query = deps.statements.on(deps.orm.em.fork());
  const keys = await findExpiringKeys(query, now, new Date(now.getTime() + noticeDays * 86_400_000));
  const kept = [];
  for (const key of keys) {
    kept.push(
      await keepNotification(
        query,
        {
          userId: key.user_id,
          kind: "api_key",
          title: `Your API key "${key.name}" expires soon`,
          body: `It stops working at ${key.expires_at.toISOString().slice(0, 16).replace("T", " ")} UTC. Make a new key and move your scripts to it before then.`,
          link: "/app/account/security",
          dedupeKey: `api_key_expiring:${key.id}`,
        },
        now,
      ),
    );
  }
  deps.notifier.announce(kept);
  return kept.filter(Boolean).length;
}

/** Runs {@link noticeExpiringKeys} now and every {@link checkEveryMs} (unref'd) until `stop`. */
export function startExpiringKeyNotices(deps: { orm: Orm; statements: Statements; notifier: Notifier; clock: Clock; logger: Logger }): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const run = () => {
    running = noticeExpiringKeys(deps, deps.clock.now()).catch((error) => deps.logger.error({ err: error }, "telling users of expiring API keys failed"));
  };
  run();
  const timer = setInterval(run, checkEveryMs).unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
