import assert from "node:assert/strict";
import { AlertDeliveryStatus, AlertsService } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { ActivityKind } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { NotificationsService } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { createAlertWorker, type AlertWorker } from "../../core/alerts/worker.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";
import { discordWebhookErrors, mailHeader, mailText, startDiscordReceiver, startSmtpReceiver, type HttpReceiver, type SmtpReceiver } from "../support/receivers.ts";

/**
 * The links in alerts that leave Outpost are absolute URLs on ACCOUNT_BASE_URL (the suite's core
 * has http://account.test): a Discord embed's `url`, which a stand-in checks as Discord does (a
 * relative one is a 400 there, and the whole alert lost), and an email's "Open:" line. The
 * dashboard's own notification keeps the path.
 */
describe("alerts: links that leave Outpost", () => {
  let t: TestCore;
  let cast: AcmeCast;
  let discord: HttpReceiver;
  let smtp: SmtpReceiver;
  let worker: AlertWorker;
  let survival: string;
  const acme = { organizationSlug: "acme" };
  const activityUrl = "http://account.test/app/o/acme/activity";
  const alerts = () => t.client(AlertsService, { session: cast.owner.token });
  const integrations = () => t.client(IntegrationsService, { session: cast.owner.token });
  const securityEvent = () => t.client(ServersService, { session: cast.owner.token }).regenerateAgentKey({ serverId: survival });

  before(async () => {
    discord = await startDiscordReceiver();
    smtp = await startSmtpReceiver();
    t = await startTestCore(testConfig, { outbound: { allowLocal: true, timeoutMs: 2000 }, smtp: { url: smtp.url, from: "Outpost <outpost@example.test>" } });
    cast = await acmeWithMembers(t);
    survival = (await t.client(ServersService, { session: cast.owner.token }).createServer({ ...acme, name: "Survival", game: Game.MINECRAFT })).server!.id;
    worker = createAlertWorker({ ...t.deps, orm: t.orm }, { random: () => 1 });
  });
  after(async () => {
    await t?.close();
    await discord?.close();
    await smtp?.close();
  });
  beforeEach(async () => {
    discord.received.length = 0;
    smtp.received.length = 0;
    for (const r of (await alerts().listAlertRules(acme)).rules) await alerts().deleteAlertRule({ ...acme, ruleId: r.id });
  });

  it("the Discord stand-in refuses what Discord refuses: a relative url, a title over 256, more than 6,000 characters", async () => {
    const embed = {
      title: "Rule: server.agent_key_regenerated",
      description: "…",
      color: 0xf59e0b,
      timestamp: new Date().toISOString(),
      footer: { text: "Outpost · alert.fired" },
    };
    assert.equal(discordWebhookErrors({ username: "Outpost", embeds: [{ ...embed, url: activityUrl }] }), undefined);
    assert.deepEqual(discordWebhookErrors({ embeds: [{ ...embed, url: "/app/o/acme/activity" }] }), {
      embeds: { "0": { url: { _errors: [{ code: "URL_TYPE_INVALID_URL", message: "Not a well formed URL." }] } } },
    });
    assert.ok(discordWebhookErrors({ embeds: [{ ...embed, url: "ftp://account.test/" }] })!.embeds["0"].url._errors);
    assert.ok(discordWebhookErrors({ embeds: [{ ...embed, title: "x".repeat(257) }] })!.embeds["0"].title._errors);
    assert.ok(
      discordWebhookErrors({
        embeds: [
          { ...embed, description: "x".repeat(4096) },
          { ...embed, description: "x".repeat(4096) },
        ],
      })!.embeds._errors,
    );
    assert.ok(discordWebhookErrors({ embeds: [{ ...embed, timestamp: "yesterday", color: 1.5 }] })!.embeds["0"].timestamp._errors);
    assert.ok(discordWebhookErrors({ embeds: [{ ...embed, fields: Array.from({ length: 26 }, () => ({ name: "n", value: "v" })) }] })!.embeds["0"].fields._errors);
    assert.ok(discordWebhookErrors({ username: "Outpost" })!._errors, "an empty message");
    const refused = await fetch(`${discord.origin}/api/webhooks/1/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ embeds: [{ ...embed, url: "/app" }] }),
    });
    assert.equal(refused.status, 400);
    assert.deepEqual(Object.keys((await refused.json()) as object).sort(), ["code", "errors", "message"]);
  });

  it("sends an alert to Discord with the activity log's absolute URL, which Discord accepts; the dashboard's notification keeps the path", async () => {
    const { integration } = await integrations().createIntegration({
      ...acme,
      name: "Discord #ops",
      target: { case: "discord", value: { url: `${discord.origin}/api/webhooks/42/t0ken` } },
    });
    const id = (
      await alerts().createAlertRule({
        ...acme,
        spec: { name: "Keys", enabled: true, kinds: [ActivityKind.SECURITY], integrationIds: [integration!.id], notifyDashboard: true },
      })
    ).rule!.id;
    await securityEvent();
    await worker.runOnce();
    const sent = (await alerts().listAlertDeliveries({ ...acme, ruleId: id })).deliveries.find((d) => !d.dashboard)!;
    assert.deepEqual([sent.status, sent.lastResponseStatus, sent.lastError], [AlertDeliveryStatus.DELIVERED, 204, ""]);
    const [request] = discord.received;
    const body = JSON.parse(request.body);
    assert.equal(discordWebhookErrors(body), undefined);
    assert.equal(body.embeds[0].url, activityUrl);
    const { notifications } = await t.client(NotificationsService, { session: cast.owner.token }).listNotifications({});
    assert.equal(notifications.find((n) => n.title === "Keys: server.agent_key_regenerated")!.link, "/app/o/acme/activity");
  });

  it("sends an alert email whose Open: line is the activity log's absolute URL", async () => {
    const { integration } = await integrations().createIntegration({ ...acme, name: "On-call", target: { case: "email", value: { recipients: [cast.owner.email] } } });
    const id = (await alerts().createAlertRule({ ...acme, spec: { name: "Keys", enabled: true, kinds: [ActivityKind.SECURITY], integrationIds: [integration!.id] } }))
      .rule!.id;
    await securityEvent();
    await worker.runOnce();
    assert.equal((await alerts().listAlertDeliveries({ ...acme, ruleId: id })).deliveries[0].status, AlertDeliveryStatus.DELIVERED);
    const mail = smtp.received.findLast((m) => m.to.includes(cast.owner.email) && /Keys/.test(mailHeader(m.raw, "subject") ?? ""))!;
    const text = mailText(mail.raw);
    assert.ok(text.split("\n").includes(`Open: ${activityUrl}`), text);
  });
});
