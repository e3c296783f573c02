/**
 * The alert deliveries' worker. Every instance runs one: each round it claims due deliveries
 * (`FOR UPDATE SKIP LOCKED`, moving them past a lease in the same short statement), sends them by
 * rule and target, and records each outcome. A delivery whose instance dies mid-send is due again
 * when its lease ends, and another instance sends it: at least once, with the same message id.
 *
 * Waking: it polls every second (one indexed query on the partial due index; cheap), and goes
 * round again at once while rounds come back full. The bus is not used: it is not in CoreDeps, the
 * embedded database does not deliver LISTEN/NOTIFY anyway, and an alert a second late is on time.
 */
import type { Orm } from "../db/orm.ts";
import { AlertRule } from "../db/alert-entities.ts";
import { Organization } from "../db/entities.ts";
import { Integration } from "../db/integration-entities.ts";
import { claimDue, eventsById, type DeliveryRow } from "./alert-queries.ts";
import { sendGroup, type Group, type SendDeps } from "./send.ts";
import { defaultRetryPolicy, type RetryPolicy } from "./retry.ts";
import { jobFailureLog } from "../log-throttle.ts";

export interface AlertWorkerOptions extends Partial<RetryPolicy> {
  /** How long a claimed delivery is this instance's before another may take it (60 s). */
  leaseMs?: number;
  /** Deliveries claimed per round (200). */
  batch?: number;
  /** Targets sent to at once (50). */
  concurrency?: number;
  /** Between rounds when nothing is due (1 s). */
  pollMs?: number;
}

export type AlertWorkerDeps = SendDeps & { orm: Orm };

export interface AlertWorker {
  /** One round now: claims what is due and sends it; resolves to how many deliveries it claimed. */
  runOnce(): Promise<number>;
  /** Rounds every `pollMs` until stopped. */
  start(): void;
  /** Stops polling and waits for the round in progress. */
  stop(): Promise<void>;
}

/** Claimed rows by rule and target, with what sending them needs (rules, integrations, events, slugs). */
async function groupsOf(deps: AlertWorkerDeps, rows: DeliveryRow[]): Promise<Group[]> {
  const em = deps.orm.em.fork();
  const unique = (values: Array<string | null>) => [...new Set(values.filter((v): v is string => v !== null))];
  const rules = new Map((await em.find(AlertRule, { id: { $in: unique(rows.map((r) => r.rule_id)) } })).map((r) => [r.id, r]));
  const integrations = new Map((await em.find(Integration, { id: { $in: unique(rows.map((r) => r.integration_id)) } })).map((i) => [i.id, i]));
  const organizations = new Map((await em.find(Organization, { id: { $in: unique(rows.map((r) => r.organization_id)) } })).map((o) => [o.id, o]));
  const events = await eventsById(deps.statements.on(em), unique(rows.map((r) => r.event_id)));
  const groups = new Map<string, Group>();
  for (const row of rows) {
    const rule = rules.get(row.rule_id);
    const organization = organizations.get(row.organization_id);
    // A rule or integration deleted meanwhile took its deliveries with it (cascade): nothing to send.
    if (!rule || !organization || (row.integration_id && !integrations.has(row.integration_id))) continue;
    const key = `${row.rule_id}/${row.integration_id ?? "dashboard"}`;
    let group = groups.get(key);
    if (!group) {
      group = {
        context: { rule, organization: { id: organization.id, slug: organization.slug } },
        integration: row.integration_id ? integrations.get(row.integration_id) : undefined,
        rows: [],
        events,
      };
      groups.set(key, group);
    }
    group.rows.push(row);
  }
  return [...groups.values()];
}

export function createAlertWorker(deps: AlertWorkerDeps, options: AlertWorkerOptions = {}): AlertWorker {
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...Object.fromEntries(Object.entries(options).filter(([k]) => k in defaultRetryPolicy)) };
  const { leaseMs = 60_000, batch = 200, concurrency = 50, pollMs = 1000 } = options;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let round: Promise<unknown> = Promise.resolve();

  async function runOnce(): Promise<number> {
    const now = deps.clock.now();
    const rows = await claimDue(deps.statements.on(deps.orm.em.fork()), now, new Date(now.getTime() + leaseMs), batch);
    if (!rows.length) return 0;
    const queue = await groupsOf(deps, rows);
    const lanes = Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
      for (let group = queue.shift(); group; group = queue.shift()) {
        await sendGroup(deps, policy, deps.orm.em.fork(), group).catch((error) =>
          deps.logger.error({ err: error, ruleId: group.context.rule.id }, "sending alert deliveries failed"),
        );
      }
    });
    await Promise.all(lanes);
    return rows.length;
  }

  const roundFailed = jobFailureLog(deps.logger, "an alert delivery round failed");
  const tick = () => {
    if (stopped) return;
    round = (async () => {
      try {
        while (!stopped && (await runOnce()) >= batch);
      } catch (error) {
        roundFailed(error);
      }
      if (!stopped) timer = setTimeout(tick, pollMs).unref();
    })();
  };

  return {
    runOnce,
    start: () => {
      stopped = false;
      tick();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await round;
    },
  };
}
