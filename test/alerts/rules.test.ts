import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { AlertsService, AlertDeliveryStatus } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { ActivityKind, ActivityService, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { acmeWithMembers, type AcmeCast, type Account } from "../support/fixtures.ts";

/** Alert rules: who manages them, what they may name, and their activity events. */
describe("alerts: rules", () => {
  let t: TestCore;
  let cast: AcmeCast;
  let hook: string;
  let elsewhereHook: string;
  let server: string;
  const api = (who: Account) => t.client(AlertsService, { session: who.token });
  const acme = { organizationSlug: "acme" };
  const spec = (extra: object = {}) => ({ name: "Ops", enabled: true, integrationIds: [hook], ...extra });

  before(async () => {
    t = await startTestCore(testConfig, { outbound: { allowLocal: true } });
    cast = await acmeWithMembers(t);
    const integrations = (who: Account) => t.client(IntegrationsService, { session: who.token });
    hook = (await integrations(cast.owner).createIntegration({ ...acme, name: "Hook", target: { case: "webhook", value: { url: "http://127.0.0.1:9/h" } } })).integration!
      .id;
    elsewhereHook = (
      await integrations(cast.outsider).createIntegration({
        organizationSlug: "elsewhere",
        name: "Theirs",
        target: { case: "webhook", value: { url: "http://127.0.0.1:9/h" } },
      })
    ).integration!.id;
    server = (await t.client(ServersService, { session: cast.owner.token }).createServer({ ...acme, name: "Survival", game: Game.MINECRAFT })).server!.id;
  });
  after(async () => {
    await t?.close();
  });

  it("lets owners and admins create, list, update and delete rules, each change an activity event", async () => {
    const created = await api(cast.admin).createAlertRule({
      ...acme,
      spec: spec({
        serverId: server,
        kinds: [ActivityKind.STATUS],
        severities: [ActivitySeverity.WARNING],
        notifyDashboard: true,
        quietHours: { start: "22:00", end: "07:00", timeZone: "Europe/Paris" },
        maxDeliveriesPerHour: 5,
      }),
    });
    const rule = created.rule!;
    assert.equal(rule.spec!.serverId, server);
    assert.deepEqual(rule.spec!.kinds, [ActivityKind.STATUS]);
    assert.deepEqual(rule.spec!.severities, [ActivitySeverity.WARNING]);
    assert.deepEqual(rule.spec!.integrationIds, [hook]);
    assert.equal(rule.spec!.quietHours!.timeZone, "Europe/Paris");
    assert.equal(rule.spec!.maxDeliveriesPerHour, 5);
    const listed = await api(cast.owner).listAlertRules(acme);
    assert.deepEqual(
      listed.rules.map((r) => r.id),
      [rule.id],
    );
    assert.deepEqual(listed.rules[0].spec, rule.spec);
    const updated = await api(cast.owner).updateAlertRule({ ...acme, ruleId: rule.id, spec: { name: "Renamed", enabled: false, notifyDashboard: true } });
    assert.equal(updated.rule!.spec!.name, "Renamed");
    assert.deepEqual(updated.rule!.spec!.integrationIds, []);
    assert.equal(updated.rule!.spec!.maxDeliveriesPerHour, 20, "0 is the default cap");
    assert.equal(updated.rule!.spec!.quietHours, undefined);
    await api(cast.owner).deleteAlertRule({ ...acme, ruleId: rule.id });
    assert.deepEqual((await api(cast.owner).listAlertRules(acme)).rules, []);
    const { events } = await t.client(ActivityService, { session: cast.owner.token }).listOrganizationActivity({ ...acme, action: "alert_rule" });
    assert.deepEqual(
      events.map((e) => e.action),
      ["alert_rule.deleted", "alert_rule.updated", "alert_rule.created"],
    );
  });

  it("refuses members (permission_denied) and hides another organization's rules (not_found)", async () => {
    const { rule } = await api(cast.owner).createAlertRule({ ...acme, spec: spec() });
    await rejectsWith(api(cast.member).listAlertRules(acme), Code.PermissionDenied);
    await rejectsWith(api(cast.member).createAlertRule({ ...acme, spec: spec() }), Code.PermissionDenied);
    await rejectsWith(api(cast.member).listAlertDeliveries(acme), Code.PermissionDenied);
    await rejectsWith(
      api(cast.outsider).updateAlertRule({ organizationSlug: "elsewhere", ruleId: rule!.id, spec: spec({ integrationIds: [elsewhereHook] }) }),
      Code.NotFound,
    );
    await rejectsWith(api(cast.outsider).deleteAlertRule({ organizationSlug: "elsewhere", ruleId: rule!.id }), Code.NotFound);
    await api(cast.owner).deleteAlertRule({ ...acme, ruleId: rule!.id });
  });

  it("refuses bad input as invalid_argument naming the field", async () => {
    const bad = async (extra: object, field: string) => {
      const error = await rejectsWith(api(cast.owner).createAlertRule({ ...acme, spec: spec(extra) }), Code.InvalidArgument);
      assert.match(error.message.replace(/_/g, "").toLowerCase(), new RegExp(field.replace(/_/g, "").toLowerCase()), error.message);
    };
    await bad({ quietHours: { start: "22:00", end: "07:00", timeZone: "Mars/Olympus" } }, "time_zone");
    await bad({ quietHours: { start: "24:00", end: "07:00", timeZone: "UTC" } }, "start");
    await bad({ quietHours: { start: "7:00", end: "07:00", timeZone: "UTC" } }, "start");
    await bad({ integrationIds: [elsewhereHook] }, "integration_ids");
    await bad({ serverId: "00000000-0000-4000-8000-000000000000" }, "server_id");
    await bad({ integrationIds: [], notifyDashboard: false }, "notify_dashboard");
    await bad({ name: "" }, "name");
    await bad({ maxDeliveriesPerHour: 1001 }, "max_deliveries_per_hour");
    await rejectsWith(api(cast.owner).listAlertDeliveries({ ...acme, cursor: "nope" }), Code.InvalidArgument);
    assert.deepEqual((await api(cast.owner).listAlertRules(acme)).rules, []);
  });

  it("lists no deliveries for an organization without rules", async () => {
    const res = await api(cast.owner).listAlertDeliveries({ ...acme, status: AlertDeliveryStatus.PENDING });
    assert.deepEqual(res.deliveries, []);
    assert.equal(res.nextCursor, "");
  });
});
