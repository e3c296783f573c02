/**
 * npm run bench:alerts — the alerts' two paths on a real PostgreSQL (DATABASE_URL, a fresh
 * database made by the test harness; the embedded database without it):
 *
 * 1. events/s into the outbox: activity events appended by 50 concurrent writers (appendActivity,
 *    one statement each, the `alert_match` trigger inside it), in an organization with 10 enabled
 *    rules of which 2 match (one webhook each): every event writes 2 deliveries. The same run
 *    with no rules is printed beside it, so the matching's own cost shows.
 * 2. deliveries/s to a local receiver: the worker (50 targets at once) sending those rows, signed,
 *    over loopback HTTP to a receiver that answers 204 at once.
 *
 * Target (issue 15): ≥ 1,000 events/s and ≥ 500 deliveries/s on this machine. Prints figures; a
 * missed target is printed as such and the run exits 0 (the machine decides); an error exits 1.
 * Env: BENCH_EVENTS (default 5000), BENCH_CONCURRENCY (default 50).
 */
import { createServer } from "node:http";
import { loadavg } from "node:os";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { AlertsService } from "../gen/outpost/alerts/v1/alerts_service_pb.js";
import { ActivityKind } from "../gen/outpost/activity/v1/activity_service_pb.js";
import { IntegrationsService } from "../gen/outpost/integrations/v1/integrations_service_pb.js";
import { appendActivity } from "../core/activity/record.ts";
import { createAlertWorker } from "../core/alerts/worker.ts";
import { acmeWithMembers } from "../test/support/fixtures.ts";
import { startTestCore, testConfig } from "../test/support/core.ts";

const events = Number(process.env.BENCH_EVENTS ?? 5000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50);

const receiver = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.writeHead(204).end());
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
const t = await startTestCore(testConfig, { outbound: { allowLocal: true, timeoutMs: 5000 } });
let failed = false;
try {
  const cast = await acmeWithMembers(t);
  const owner = { session: cast.owner.token };
  const [org] = await t.orm.em.fork().getConnection().execute(`select id from organizations where slug = 'acme'`);
  const appendAll = async (count: number) => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          next++;
          await appendActivity(t.deps.statements.on(t.orm.em.fork()), "agent", {
            action: "server.agent_disconnected",
            targetType: "server",
            targetId: org.id,
            organizationId: org.id,
          });
        }
      }),
    );
    return count / ((performance.now() - started) / 1000);
  };
  const baseline = await appendAll(events);

  const integrations = t.client(IntegrationsService, owner);
  const alerts = t.client(AlertsService, owner);
  const hooks = [];
  for (let i = 0; i < 50; i++) {
    hooks.push(
      (await integrations.createIntegration({ organizationSlug: "acme", name: `Hook ${i}`, target: { case: "webhook", value: { url: `${origin}/h/${i}` } } }))
        .integration!.id,
    );
  }
  for (let i = 0; i < 8; i++)
    await alerts.createAlertRule({ organizationSlug: "acme", spec: { name: `Other ${i}`, enabled: true, kinds: [ActivityKind.OAUTH], integrationIds: [hooks[i]] } });
  for (let i = 0; i < 2; i++)
    await alerts.createAlertRule({
      organizationSlug: "acme",
      spec: { name: `Status ${i}`, enabled: true, kinds: [ActivityKind.STATUS], integrationIds: [hooks[i]], maxDeliveriesPerHour: 1000 },
    });
  const matched = await appendAll(events);
  const [{ n: rows }] = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from alert_deliveries`);

  // Deliveries: 50 targets (a rule names at most 20; the cap is per target), each to its own webhook.
  await t.orm.em.fork().getConnection().execute(`delete from alert_deliveries`);
  await t.orm.em.fork().getConnection().execute(`delete from alert_rules`);
  for (let i = 0; i < 50; i += 20) {
    await alerts.createAlertRule({
      organizationSlug: "acme",
      spec: { name: `Fan-out ${i}`, enabled: true, kinds: [ActivityKind.STATUS], integrationIds: hooks.slice(i, i + 20), maxDeliveriesPerHour: 1000 },
    });
  }
  const perTarget = Math.max(1, Math.floor(events / 50 / 5));
  await appendAll(perTarget);
  const [{ n: toSend }] = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from alert_deliveries where status = 'pending'`);
  const worker = createAlertWorker({ ...t.deps, orm: t.orm, logger: pino({ level: "warn" }) }, { concurrency: 50, batch: 1000 });
  const started = performance.now();
  while ((await worker.runOnce()) > 0);
  const sendRate = toSend / ((performance.now() - started) / 1000);
  const [{ n: delivered }] = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from alert_deliveries where status = 'delivered'`);
  if (delivered !== toSend) throw new Error(`only ${delivered} of ${toSend} deliveries were delivered`);

  const mark = (ok: boolean) => (ok ? "" : "  (below target)");
  console.log(
    `database: ${t.database.kind} (pool of 5, as the test harness opens it); ${events} events, ${concurrency} concurrent writers; load average ${loadavg()[0].toFixed(1)}`,
  );
  console.log(`events/s, no rules:                         ${baseline.toFixed(0)}`);
  console.log(`events/s, 10 rules (2 match, ${rows} outbox rows): ${matched.toFixed(0)}${mark(matched >= 1000)}`);
  console.log(`deliveries/s, 50 targets, loopback webhook: ${sendRate.toFixed(0)} (${toSend} signed deliveries)${mark(sendRate >= 500)}`);
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await t.close();
  receiver.close();
}
process.exit(failed ? 1 : 0);
