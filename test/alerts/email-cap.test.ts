import assert from "node:assert/strict";
import { AlertDeliveryStatus, AlertsService } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { ActivityKind } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { createAlertWorker } from "../../core/alerts/worker.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";
import { mailHeader, startSmtpReceiver, type SmtpReceiver } from "../support/receivers.ts";

/**
 * The organization's hourly email cap (its plan's emailsPerHour; 3 here): however many events an
 * email rule matches, at most the cap's mails go out in an hour, from every instance together, and
 * the rest are listed as refused, saying why. The hour is the database's: the test ages the counted
 * mails in SQL instead of waiting.
 */
describe("alerts: the organization's hourly email cap", () => {
  let t: TestCore;
  let other: TestCore;
  let smtp: SmtpReceiver;
  let cast: AcmeCast;
  let integrationId: string;
  let ruleId: string;
  let serverId: string;
  const acme = { organizationSlug: "acme" };
  const config = { ...testConfig, plans: { ...testConfig.plans, free: { ...testConfig.plans.free, emailsPerHour: 3 } } };
  const alerts = () => t.client(AlertsService, { session: cast.owner.token });
  const alertMails = () => smtp.received.filter((m) => (mailHeader(m.raw, "subject") ?? "").startsWith("[Outpost]"));
  const events = async (n: number) => {
    for (let i = 0; i < n; i++) await t.client(ServersService, { session: cast.owner.token }).regenerateAgentKey({ serverId });
  };

  before(async () => {
    smtp = await startSmtpReceiver();
    const mail = { url: smtp.url, from: "Outpost <outpost@example.test>" };
    t = await startTestCore(config, { smtp: mail });
    other = await startTestCore(config, { smtp: mail, database: t.database });
    cast = await acmeWithMembers(t);
    const integrations = t.client(IntegrationsService, { session: cast.owner.token });
    integrationId = (await integrations.createIntegration({ ...acme, name: "On-call", target: { case: "email", value: { recipients: [cast.owner.email] } } }))
      .integration!.id;
    serverId = (await t.client(ServersService, { session: cast.owner.token }).createServer({ ...acme, name: "Survival", game: Game.MINECRAFT })).server!.id;
    ruleId = (
      await alerts().createAlertRule({
        ...acme,
        spec: { name: "Keys", enabled: true, kinds: [ActivityKind.SECURITY], integrationIds: [integrationId], maxDeliveriesPerHour: 1000 },
      })
    ).rule!.id;
  });
  after(async () => {
    await other?.close();
    await t?.close();
    await smtp?.close();
  });

  it("sends at most the cap's mails an hour across two instances; the rest are refused, visibly", async () => {
    await events(10);
    // Two instances' workers at once, each claiming a few at a time: they count in one place.
    const here = createAlertWorker({ ...t.deps, orm: t.orm }, { random: () => 1, batch: 3 });
    const there = createAlertWorker({ ...other.deps, orm: other.orm }, { random: () => 1, batch: 3 });
    const drain = async (worker: typeof here) => {
      while ((await worker.runOnce()) > 0);
    };
    await Promise.all([drain(here), drain(there)]);

    assert.equal(alertMails().length, 3, "the cap's mails, no more");
    const { deliveries } = await alerts().listAlertDeliveries({ ...acme, ruleId });
    const count = (status: AlertDeliveryStatus) => deliveries.filter((d) => d.status === status).length;
    assert.deepEqual([count(AlertDeliveryStatus.DELIVERED), count(AlertDeliveryStatus.REFUSED)], [3, 7]);
    for (const d of deliveries.filter((x) => x.status === AlertDeliveryStatus.REFUSED)) {
      assert.match(d.lastError, /^refused: the organization's email cap is reached \(its free plan allows 3 emails an hour/);
      assert.equal(d.nextAttemptAt, undefined, "never tried again");
    }
    const refused = await alerts().listAlertDeliveries({ ...acme, status: AlertDeliveryStatus.REFUSED });
    assert.equal(refused.deliveries.length, 7, "the list filters on it");

    // A test send counts against the same cap.
    const test = await t.client(IntegrationsService, { session: cast.owner.token }).testIntegration({ ...acme, integrationId });
    assert.deepEqual([test.ok, alertMails().length], [false, 3]);
    assert.match(test.error, /email cap is reached/);
  });

  it("allows mail again once the hour has passed", async () => {
    await t.orm.em.fork().getConnection().execute(`update organization_emails set sent_at = sent_at - interval '61 minutes'`);
    await events(1);
    await createAlertWorker({ ...t.deps, orm: t.orm }, { random: () => 1 }).runOnce();
    assert.equal(alertMails().length, 4);
    const [newest] = (await alerts().listAlertDeliveries({ ...acme, ruleId, limit: 1 })).deliveries;
    assert.equal(newest.status, AlertDeliveryStatus.DELIVERED);
  });

  it("refuses, visibly, an alert whose every recipient has left the organization", async () => {
    const integrations = t.client(IntegrationsService, { session: cast.owner.token });
    const theirs = (await integrations.createIntegration({ ...acme, name: "Member's", target: { case: "email", value: { recipients: [cast.member.email] } } }))
      .integration!.id;
    await alerts().updateAlertRule({
      ...acme,
      ruleId,
      spec: { name: "Keys", enabled: true, kinds: [ActivityKind.SECURITY], integrationIds: [theirs], maxDeliveriesPerHour: 1000 },
    });
    await t.client(OrganizationsService, { session: cast.member.token }).removeMember({ ...acme, userId: cast.member.userId });
    const before = alertMails().length;
    await events(1);
    await createAlertWorker({ ...t.deps, orm: t.orm }, { random: () => 1 }).runOnce();
    assert.equal(alertMails().length, before, "nothing sent");
    const [newest] = (await alerts().listAlertDeliveries({ ...acme, ruleId, limit: 1 })).deliveries;
    assert.equal(newest.status, AlertDeliveryStatus.REFUSED);
    assert.match(newest.lastError, /^refused: none of the recipients \(member@example\.com\) is a verified address of a member/);
  });
});
