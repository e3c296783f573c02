import assert from "node:assert/strict";
import { AlertDeliveryStatus, AlertsService } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { ActivityKind, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { NotificationsService } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { createAlertWorker, type AlertWorker } from "../../core/alerts/worker.ts";
import { claimDue } from "../../core/alerts/alert-queries.ts";
import { sql } from "../../core/db/sql.ts";
import { int, row, text } from "../../core/db/rows.ts";
import { appendActivity, recordActivity } from "../../core/activity/record.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";
import { startHttpReceiver, verifyStandardWebhook, type HttpReceiver } from "../support/receivers.ts";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AlertRuleSpecSchema } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";

/**
 * Alert deliveries end to end with real parts: events written by the services, the outbox filled
 * by the trigger in their transaction, the worker sending to a local receiver that checks the
 * Standard Webhooks signature. The worker is driven round by round (`runOnce`) and the retry
 * delays are taken at their ceiling (`random: () => 1`), so the test moves a clock instead of waiting.
 */
describe("alerts: deliveries", () => {
  let t: TestCore;
  let cast: AcmeCast;
  let receiver: HttpReceiver;
  let worker: AlertWorker;
  let hook: string;
  let secret: string;
  let survival: string;
  let creative: string;
  const acme = { organizationSlug: "acme" };
  const alerts = () => t.client(AlertsService, { session: cast.owner.token });
  const servers = () => t.client(ServersService, { session: cast.owner.token });
  const rule = async (spec: MessageInitShape<typeof AlertRuleSpecSchema>) =>
    (await alerts().createAlertRule({ ...acme, spec: { name: "Rule", enabled: true, ...spec } })).rule!.id;
  const deliveries = async (ruleId: string) => (await alerts().listAlertDeliveries({ ...acme, ruleId })).deliveries;
  const securityEvent = (serverId = survival) => servers().regenerateAgentKey({ serverId });
  const query = () => t.deps.statements.on(t.orm.em.fork());
  const counted = row({ n: int });

  before(async () => {
    receiver = await startHttpReceiver();
    t = await startTestCore(testConfig, { outbound: { allowLocal: true, timeoutMs: 2000 } });
    cast = await acmeWithMembers(t);
    const created = await t
      .client(IntegrationsService, { session: cast.owner.token })
      .createIntegration({ ...acme, name: "Hook", target: { case: "webhook", value: { url: `${receiver.origin}/alerts` } } });
    hook = created.integration!.id;
    secret = created.secret;
    survival = (await servers().createServer({ ...acme, name: "Survival", game: Game.MINECRAFT })).server!.id;
    creative = (await servers().createServer({ ...acme, name: "Creative", game: Game.MINECRAFT })).server!.id;
    worker = createAlertWorker({ ...t.deps, orm: t.orm }, { random: () => 1 });
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });
  beforeEach(async () => {
    receiver.received.length = 0;
    receiver.behaviour = { status: 204 };
    for (const r of (await alerts().listAlertRules(acme)).rules) await alerts().deleteAlertRule({ ...acme, ruleId: r.id });
  });

  it("sends a matching event to the webhook, signed, and retries a 500 with the same webhook-id until it is delivered", async () => {
    const id = await rule({ kinds: [ActivityKind.SECURITY], integrationIds: [hook] });
    await securityEvent();
    const [pending] = await deliveries(id);
    assert.equal(pending.status, AlertDeliveryStatus.PENDING);
    assert.equal(pending.action, "server.agent_key_regenerated");
    receiver.behaviour = { status: 500 };
    assert.equal(await worker.runOnce(), 1);
    let [d] = await deliveries(id);
    assert.deepEqual([d.status, d.attempts, d.lastResponseStatus], [AlertDeliveryStatus.PENDING, 1, 500]);
    assert.ok(d.nextAttemptAt, "it says when it tries again");
    assert.equal(await worker.runOnce(), 0, "not due before its backoff");
    t.clock.advance(30_001);
    await worker.runOnce();
    [d] = await deliveries(id);
    assert.deepEqual([d.status, d.attempts], [AlertDeliveryStatus.PENDING, 2]);
    receiver.behaviour = { status: 204 };
    t.clock.advance(60_001);
    await worker.runOnce();
    [d] = await deliveries(id);
    assert.deepEqual([d.status, d.attempts, d.lastResponseStatus, d.lastError], [AlertDeliveryStatus.DELIVERED, 3, 204, ""]);
    assert.ok(d.deliveredAt);
    assert.equal(d.nextAttemptAt, undefined);
    assert.equal(receiver.received.length, 3);
    for (const request of receiver.received) {
      assert.equal(request.headers["webhook-id"], d.id, "the delivery's id is the idempotency id on every attempt");
      assert.ok(verifyStandardWebhook(secret, request.headers, request.body));
    }
    const envelope = JSON.parse(receiver.received[2].body);
    assert.equal(envelope.type, "alert.fired");
    assert.equal(envelope.data.event.action, "server.agent_key_regenerated");
    assert.equal(envelope.data.event.serverId, survival);
    assert.equal(envelope.data.rule.id, id);
  });

  it("fails at once on a failure no retry helps (404)", async () => {
    const id = await rule({ kinds: [ActivityKind.SECURITY], integrationIds: [hook] });
    await securityEvent();
    receiver.behaviour = { status: 404 };
    await worker.runOnce();
    const [d] = await deliveries(id);
    assert.deepEqual([d.status, d.attempts, d.lastResponseStatus], [AlertDeliveryStatus.FAILED, 1, 404]);
    assert.equal(
      (await alerts().listAlertDeliveries({ ...acme, status: AlertDeliveryStatus.FAILED })).deliveries.some((x) => x.id === d.id),
      true,
    );
  });

  it("gives up when the next try would come past its time to live (24 hours; a minute here)", async () => {
    // Events are stamped with the real time and the test clock runs ahead: the minute counts from the event.
    const impatient = createAlertWorker({ ...t.deps, orm: t.orm }, { random: () => 1, giveUpAfterMs: t.clock.now().getTime() - Date.now() + 60_000 });
    const id = await rule({ kinds: [ActivityKind.SECURITY], integrationIds: [hook] });
    await securityEvent();
    receiver.behaviour = { status: 503 };
    await impatient.runOnce();
    assert.equal((await deliveries(id))[0].status, AlertDeliveryStatus.PENDING, "the first retry, 30 s on, is within the minute");
    t.clock.advance(30_001);
    await impatient.runOnce();
    const [d] = await deliveries(id);
    assert.deepEqual([d.status, d.attempts], [AlertDeliveryStatus.FAILED, 2]);
  });

  it("matches by kind, severity and server, only enabled rules, never events of no organization", async () => {
    const onCreative = await rule({ serverId: creative, kinds: [ActivityKind.SECURITY], integrationIds: [hook] });
    const errors = await rule({ severities: [ActivitySeverity.ERROR], integrationIds: [hook] });
    const warnings = await rule({ kinds: [ActivityKind.SECURITY], severities: [ActivitySeverity.WARNING], integrationIds: [hook], notifyDashboard: true });
    const off = await rule({ enabled: false, integrationIds: [hook] });
    await securityEvent(survival);
    await t.signUp("someone-new@example.com");
    assert.deepEqual(await deliveries(onCreative), []);
    assert.deepEqual(await deliveries(errors), []);
    assert.deepEqual(await deliveries(off), []);
    const both = await deliveries(warnings);
    assert.deepEqual(both.map((d) => d.dashboard).sort(), [false, true], "one per target: the integration and the dashboard");
    await securityEvent(creative);
    assert.deepEqual(
      (await deliveries(onCreative)).map((d) => d.action),
      ["server.agent_key_regenerated"],
    );
  });

  it("writes deliveries with the event, whichever funnel wrote it, and none for a change rolled back", async () => {
    const id = await rule({ kinds: [ActivityKind.PLAYER_ADMIN, ActivityKind.SECURITY], integrationIds: [hook] });
    const org = (await query().one(sql`select id from organizations where slug = 'acme'`, row({ id: text })))!;
    await appendActivity(query(), "agent", { action: "server.console_command", targetType: "server", targetId: survival, organizationId: org.id, serverId: survival });
    assert.deepEqual(
      (await deliveries(id)).map((d) => d.action),
      ["server.console_command"],
    );
    await assert.rejects(
      t.orm.em.fork().transactional(async (tx) => {
        recordActivity(tx, "system", { action: "server.agent_key_regenerated", targetType: "server", targetId: survival, organizationId: org.id, serverId: survival });
        await tx.flush();
        throw new Error("the change fails after its event was flushed");
      }),
    );
    assert.equal((await deliveries(id)).length, 1, "the rolled-back event left no delivery");
  });

  it("waits at least as long as the target's Retry-After", async () => {
    const id = await rule({ kinds: [ActivityKind.SECURITY], integrationIds: [hook] });
    await securityEvent();
    receiver.behaviour = { status: 429, headers: { "retry-after": "900" } };
    const before = t.clock.now().getTime();
    await worker.runOnce();
    const [d] = await deliveries(id);
    assert.deepEqual([d.status, d.lastResponseStatus], [AlertDeliveryStatus.PENDING, 429]);
    assert.ok(
      Number(d.nextAttemptAt!.seconds) * 1000 >= before + 899_000,
      `${new Date(Number(d.nextAttemptAt!.seconds) * 1000).toISOString()} vs ${new Date(before).toISOString()}`,
    );
  });

  it("tells the owners and admins in the dashboard when the rule names it", async () => {
    await rule({ kinds: [ActivityKind.SECURITY], notifyDashboard: true });
    await securityEvent();
    await worker.runOnce();
    const list = async (token: string) => (await t.client(NotificationsService, { session: token }).listNotifications({})).notifications;
    assert.ok((await list(cast.owner.token)).some((n) => n.title === "Rule: server.agent_key_regenerated"));
    assert.ok((await list(cast.admin.token)).some((n) => n.title === "Rule: server.agent_key_regenerated"));
    assert.ok(!(await list(cast.member.token)).some((n) => n.title.startsWith("Rule:")));
  });

  it("holds what happens in quiet hours and sends it when they end", async () => {
    const now = t.clock.now();
    const hhmm = (ms: number) => new Date(now.getTime() + ms).toISOString().slice(11, 16);
    const id = await rule({ kinds: [ActivityKind.SECURITY], integrationIds: [hook], quietHours: { start: hhmm(-3_600_000), end: hhmm(3_600_000), timeZone: "UTC" } });
    await securityEvent();
    await worker.runOnce();
    const [held] = await deliveries(id);
    assert.deepEqual([held.status, held.attempts], [AlertDeliveryStatus.PENDING, 0]);
    const due = Number(held.nextAttemptAt!.seconds) * 1000;
    const end = Date.parse(`${new Date(now.getTime() + 3_600_000).toISOString().slice(0, 16)}:00Z`);
    assert.ok(due >= end && due < end + 60_000, `due at the window's end (${new Date(due).toISOString()})`);
    assert.equal(receiver.received.length, 0);
    t.clock.advance(2 * 3_600_000);
    await worker.runOnce();
    assert.equal((await deliveries(id))[0].status, AlertDeliveryStatus.DELIVERED);
    assert.equal(receiver.received.length, 1);
  });

  it("keeps to the hourly cap and sends what is past it as one summary when the hour allows", async () => {
    const id = await rule({ kinds: [ActivityKind.SECURITY], integrationIds: [hook], maxDeliveriesPerHour: 2 });
    for (let i = 0; i < 5; i++) await securityEvent();
    await worker.runOnce();
    assert.equal(receiver.received.length, 2);
    let list = await deliveries(id);
    const held = list.filter((d) => d.status === AlertDeliveryStatus.PENDING);
    assert.equal(held.length, 3);
    const summaryId = held[0].summaryId;
    assert.ok(summaryId && held.every((d) => d.summaryId === summaryId));
    await worker.runOnce();
    assert.equal(receiver.received.length, 2, "nothing more within the hour");
    t.clock.advance(3_600_001);
    await worker.runOnce();
    assert.equal(receiver.received.length, 3);
    const summary = receiver.received[2];
    assert.equal(summary.headers["webhook-id"], summaryId);
    const envelope = JSON.parse(summary.body);
    assert.equal(envelope.type, "alert.summary");
    assert.equal(envelope.data.count, 3);
    list = await deliveries(id);
    assert.ok(list.every((d) => d.status === AlertDeliveryStatus.DELIVERED));
  });

  it("loses nothing when an instance dies mid-delivery: another sends it once the lease ends", async () => {
    const other = await startTestCore(testConfig, { database: t.database, outbound: { allowLocal: true, timeoutMs: 2000 } });
    try {
      const id = await rule({ kinds: [ActivityKind.SECURITY], integrationIds: [hook] });
      await securityEvent();
      // This instance claims it and dies before sending: its lease is all that is left.
      const now = t.clock.now();
      assert.equal((await claimDue(query(), now, new Date(now.getTime() + 60_000), 10)).length, 1);
      other.clock.advance(now.getTime() - other.clock.now().getTime());
      const survivor = createAlertWorker({ ...other.deps, orm: other.orm }, { random: () => 1 });
      assert.equal(await survivor.runOnce(), 0, "leased to the dead instance");
      other.clock.advance(60_001);
      assert.equal(await survivor.runOnce(), 1);
      const [d] = await deliveries(id);
      assert.deepEqual([d.status, d.attempts], [AlertDeliveryStatus.DELIVERED, 1]);
      assert.equal(receiver.received.length, 1);
      assert.equal(receiver.received[0].headers["webhook-id"], d.id);
    } finally {
      await other.close();
    }
  });

  it("pages deliveries with a cursor, newest first", async () => {
    const id = await rule({ kinds: [ActivityKind.SECURITY], integrationIds: [hook] });
    for (let i = 0; i < 3; i++) await securityEvent();
    const first = await alerts().listAlertDeliveries({ ...acme, ruleId: id, limit: 2 });
    assert.equal(first.deliveries.length, 2);
    assert.ok(first.nextCursor);
    const second = await alerts().listAlertDeliveries({ ...acme, ruleId: id, limit: 2, cursor: first.nextCursor });
    assert.equal(second.deliveries.length, 1);
    assert.equal(second.nextCursor, "");
    assert.equal(new Set([...first.deliveries, ...second.deliveries].map((d) => d.id)).size, 3);
  });

  it("lets a server, an integration and an organization with rules and pending deliveries be deleted (their rules and deliveries go with them)", async () => {
    const doomed = (await servers().createServer({ ...acme, name: "Doomed", game: Game.MINECRAFT })).server!.id;
    const integrations = t.client(IntegrationsService, { session: cast.owner.token });
    const spare = (await integrations.createIntegration({ ...acme, name: "Spare", target: { case: "webhook", value: { url: `${receiver.origin}/spare` } } })).integration!
      .id;
    const onDoomed = await rule({ serverId: doomed, integrationIds: [spare], notifyDashboard: true });
    await securityEvent(doomed);
    assert.ok((await deliveries(onDoomed)).length >= 2);
    await integrations.deleteIntegration({ ...acme, integrationId: spare });
    assert.deepEqual((await alerts().listAlertRules(acme)).rules.find((r) => r.id === onDoomed)!.spec!.integrationIds, []);
    assert.ok(
      (await deliveries(onDoomed)).every((d) => d.dashboard),
      "the integration's deliveries went with it",
    );
    await servers().deleteServer({ serverId: doomed });
    assert.equal(
      (await alerts().listAlertRules(acme)).rules.some((r) => r.id === onDoomed),
      false,
      "a rule about a deleted server goes with it",
    );
    await worker.runOnce();
    // A fresh account (the cast's other sessions went idle while the clock moved).
    const founder = await t.signUp("founder@example.com");
    const mine = t.client(OrganizationsService, { session: founder.token });
    await mine.createOrganization({ name: "Short lived", slug: "short-lived" });
    await t
      .client(AlertsService, { session: founder.token })
      .createAlertRule({ organizationSlug: "short-lived", spec: { name: "All", enabled: true, notifyDashboard: true } });
    const pending = await query().one(
      sql`select count(*) as n from alert_deliveries d join organizations o on o.id = d.organization_id where o.slug = 'short-lived'`,
      counted,
    );
    assert.equal(pending?.n, 1, "the rule's own creation matched it");
    await mine.deleteOrganization({ organizationSlug: "short-lived" });
    const rules = await query().one(sql`select count(*) as n from alert_rules r join organizations o on o.id = r.organization_id where o.slug = 'short-lived'`, counted);
    assert.equal(rules?.n, 0);
  });
});
