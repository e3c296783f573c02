/**
 * Deletes what the two issuers' flows no longer need, an hour after it expired: Game OAuth's
 * hosted sessions (their codes and those codes' tokens go with them) and access tokens; Account
 * OAuth's authorization requests, codes (their tokens, expired 15 minutes after the exchange,
 * go with them) and access tokens. Also the records of console commands past their 30 days, and idempotency keys past their 24 hours.
 * Idempotent, so instances may run it at once.
 */
import type { Logger } from "pino";
import type { Clock, CoreDeps } from "../deps.ts";
import { deleteExpiredGameFlowRows } from "../game-oauth/game-oauth-queries.ts";
import { deleteExpiredAccountFlowRows } from "../account-oauth/account-oauth-queries.ts";
import { deleteOldCommands } from "../servers/console-command-queries.ts";
import { deleteOldClaims, idempotencyKeptMs } from "../idempotency/idempotency-queries.ts";

export const cleanupEveryMs = 10 * 60_000;
const keepMs = 60 * 60_000;

type Db = Pick<CoreDeps, "orm" | "statements">;

export async function deleteExpiredFlowRows(db: Db, now: Date): Promise<void> {
  const query = db.statements.on(db.orm.em.fork());
  const before = new Date(now.getTime() - keepMs);
  await deleteExpiredGameFlowRows(query, before);
  await deleteExpiredAccountFlowRows(query, before);
  await deleteOldCommands(query, now);
  await deleteOldClaims(query, new Date(now.getTime() - idempotencyKeptMs));
}

/** Runs {@link deleteExpiredFlowRows} every {@link cleanupEveryMs} (unref'd) until `stop`. */
export function startFlowCleanup(deps: Db & { clock: Clock; logger: Logger }): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = deleteExpiredFlowRows(deps, deps.clock.now()).catch((error) => deps.logger.error({ err: error }, "deleting expired sign-in rows failed"));
  }, cleanupEveryMs).unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
