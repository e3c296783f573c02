/**
 * Alert thresholds (a rule's `threshold`, migration 0037): every minute one instance (the one that
 * gets the lock) checks each enabled threshold rule on each server it covers. Where the condition
 * starts to hold it writes `server.threshold_crossed` (a warning), where it stops
 * `server.threshold_cleared`, each in the transaction that records the pair's state
 * (`alert_threshold_states`), so each is said once; the alert_match trigger sends them to their
 * own rule only. The conditions on statistics read the samples (kept two days by default), so a
 * threshold looks back at most 24 hours.
 */
import type { Logger } from "pino";
import type { CoreDeps } from "../deps.ts";
import { inTransaction, sql, type SqlRunner } from "../db/sql.ts";
import { bool, float, int, nullable, row, text, timestamp, type Row } from "../db/rows.ts";
import { appendActivity } from "../activity/record.ts";
import { jobFailureLog } from "../log-throttle.ts";

export const conditions = ["tps_below", "memory_above_percent", "crash_loop", "stopped_unexpectedly", "no_samples"] as const;
export type Condition = (typeof conditions)[number];

/** A rule's threshold as `alert_rules.threshold` holds it. */
export interface Threshold {
  condition: Condition;
  value: number;
  minutes: number;
}

export const thresholdEveryMs = 60_000;
const lockKey = 7_302_031;
/** A sample every 10 s (each with the latest TPS): the window counts as covered from a sample this near its start. */
const coverageSlackMs = 20_000;
/** How far back a server that stopped sending samples is still one that sent some. */
const noSamplesLookbackMs = 48 * 3_600_000;

const targetRow = row({
  rule_id: text,
  organization_id: text,
  rule_name: text,
  threshold: (value) => value as Threshold,
  server_id: text,
  game_state: nullable(text),
  game_state_detail: nullable(text),
  memory_limit_bytes: nullable(float),
  breached: bool,
});
type Target = Row<typeof targetRow>;

/** Each enabled threshold rule with each server it covers, and whether it holds there as last seen. */
function targets(query: SqlRunner): Promise<Target[]> {
  return query.rows(
    sql`select r.id as rule_id, r.organization_id, r.name as rule_name, r.threshold, s.id as server_id, s.game_state, s.game_state_detail,
               s.memory_limit_bytes::float8 as memory_limit_bytes, st.rule_id is not null as breached
          from alert_rules r join servers s on s.organization_id = r.organization_id and (r.server_id is null or r.server_id = s.id)
          left join alert_threshold_states st on st.rule_id = r.id and st.server_id = s.id
         where r.enabled and r.threshold is not null`,
    targetRow,
  );
}

const factsRow = row({
  server_id: text,
  first_at: nullable(timestamp),
  last_at: nullable(timestamp),
  tps_samples: int,
  max_tps: nullable(float),
  memory_samples: int,
  min_memory: nullable(float),
});
type Facts = Row<typeof factsRow>;

/** What the servers' samples since `since` say, per server that sent any. */
async function sampleFacts(query: SqlRunner, serverIds: readonly string[], since: Date): Promise<Map<string, Facts>> {
  const rows = await query.rows(
    sql`select server_id, min(at) as first_at, max(at) as last_at, count(tps)::int as tps_samples, max(tps)::float8 as max_tps,
               count(memory)::int as memory_samples, min(memory)::float8 as min_memory
          from server_samples where server_id = any(${serverIds}::uuid[]) and at >= ${since} group by server_id`,
    factsRow,
  );
  return new Map(rows.map((r) => [r.server_id, r]));
}

/** Whether `t` holds on the server, and the figure that says so. */
export function judge(
  t: Threshold,
  target: Pick<Target, "game_state" | "game_state_detail" | "memory_limit_bytes">,
  facts: Facts | undefined,
  now: Date,
): { holds: boolean; observed?: number } {
  const first = facts?.first_at;
  const covered = facts !== undefined && first !== null && first !== undefined && first.getTime() <= now.getTime() - t.minutes * 60_000 + coverageSlackMs;
  switch (t.condition) {
    case "tps_below":
      return covered && facts.tps_samples > 0 && facts.max_tps! < t.value ? { holds: true, observed: facts.max_tps! } : { holds: false };
    case "memory_above_percent": {
      const limit = target.memory_limit_bytes;
      if (!limit || !covered || facts.memory_samples === 0) return { holds: false };
      const percent = (facts.min_memory! / limit) * 100;
      return percent > t.value ? { holds: true, observed: Math.round(percent * 10) / 10 } : { holds: false };
    }
    case "crash_loop":
      return { holds: target.game_state === "crashed" && /crash loop/.test(target.game_state_detail ?? "") };
    case "stopped_unexpectedly":
      return { holds: target.game_state === "crashed" };
    case "no_samples": {
      const last = facts?.last_at;
      if (!last) return { holds: false };
      const silentMinutes = (now.getTime() - last.getTime()) / 60_000;
      return silentMinutes >= t.minutes ? { holds: true, observed: Math.floor(silentMinutes) } : { holds: false };
    }
  }
}

/** The event and state change of a pair whose condition changed, once (the state row decides). */
async function record(query: SqlRunner, target: Target, holds: boolean, observed: number | undefined, now: Date): Promise<void> {
  const t = target.threshold;
  const changed = holds
    ? await query.rows(
        sql`insert into alert_threshold_states (rule_id, server_id, since, observed) values (${target.rule_id}, ${target.server_id}, ${now}, ${observed ?? null})
            on conflict do nothing returning rule_id`,
        row({ rule_id: text }),
      )
    : await query.rows(
        sql`delete from alert_threshold_states where rule_id = ${target.rule_id} and server_id = ${target.server_id} returning rule_id`,
        row({ rule_id: text }),
      );
  if (!changed.length) return;
  await appendActivity(query, "system", {
    organizationId: target.organization_id,
    action: holds ? "server.threshold_crossed" : "server.threshold_cleared",
    targetType: "server",
    targetId: target.server_id,
    serverId: target.server_id,
    details: {
      ruleId: target.rule_id,
      rule: target.rule_name,
      condition: t.condition,
      ...(t.condition === "tps_below" || t.condition === "memory_above_percent" ? { value: String(t.value) } : {}),
      ...(t.minutes ? { minutes: String(t.minutes) } : {}),
      ...(observed !== undefined ? { observed: String(observed) } : {}),
    },
  });
}

const lockedRow = row({ locked: bool });

/** One check of every threshold rule, by whichever instance gets the lock; false when another holds it. */
export async function checkThresholds(deps: Pick<CoreDeps, "orm" | "clock">): Promise<boolean> {
  return deps.orm.em.fork().transactional(async (tx) => {
    const query = inTransaction(tx);
    const got = await query.one(sql`select pg_try_advisory_xact_lock(${lockKey}) as locked`, lockedRow);
    if (!got?.locked) return false;
    const now = deps.clock.now();
    // A rule paused, deleted or no longer a threshold says nothing more about its servers.
    await query.run(sql`delete from alert_threshold_states st using alert_rules r where r.id = st.rule_id and (not r.enabled or r.threshold is null)`);
    const all = await targets(query);
    const byRule = Map.groupBy(all, (t) => t.rule_id);
    for (const rule of byRule.values()) {
      const t = rule[0].threshold;
      const lookback = t.condition === "no_samples" ? noSamplesLookbackMs : t.minutes * 60_000;
      const facts =
        t.condition === "crash_loop" || t.condition === "stopped_unexpectedly"
          ? new Map<string, Facts>()
          : await sampleFacts(
              query,
              rule.map((r) => r.server_id),
              new Date(now.getTime() - lookback),
            );
      for (const target of rule) {
        const verdict = judge(t, target, facts.get(target.server_id), now);
        if (verdict.holds !== target.breached) await record(query, target, verdict.holds, verdict.observed, now);
      }
    }
    return true;
  });
}

/** Checks now and every {@link thresholdEveryMs} (unref'd) until `stop`. */
export function startThresholdChecks(deps: Pick<CoreDeps, "orm" | "clock"> & { logger: Logger }, everyMs = thresholdEveryMs): { stop(): Promise<void> } {
  const failed = jobFailureLog(deps.logger, "checking alert thresholds failed");
  const check = () => checkThresholds(deps).then(() => undefined, failed);
  let running: Promise<void> = check();
  const timer = setInterval(() => (running = running.then(check)), everyMs).unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
