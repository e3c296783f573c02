import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { IntegrationKind, IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import type { TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { isUuid } from "../../contract/uuid.ts";
import type { AcmeCast, Account } from "../support/fixtures.ts";
import { verifyStandardWebhook, type HttpReceiver } from "../support/receivers.ts";
import { startIntegrationsFixture, type IntegrationsFixture } from "./integrations-fixture.ts";

/** Webhooks and Discord from creation to deletion, who may touch them, and their activity. Email and refused targets: integration-targets.test.ts. */
describe("integrations: signed webhooks and Discord", () => {
  let t: TestCore;
  /** A second instance on the same database without local development, as production runs. */
  let strict: TestCore;
  let cast: AcmeCast;
  let receiver: HttpReceiver;
  /** Checks each body as Discord does, and answers 400 as Discord does to one it refuses. */
  let discord: HttpReceiver;
  let fixture: IntegrationsFixture | undefined;
  const api = (who: Account, core = t) => core.client(IntegrationsService, { session: who.token });
  const acme = { organizationSlug: "acme" };

  before(async () => {
    fixture = await startIntegrationsFixture();
    ({ t, strict, cast, receiver, discord } = fixture);
  });
  after(async () => {
    await fixture?.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.behaviour = { status: 204 };
  });

  describe("webhook", () => {
    let id: string;
    let secret: string;

    it("shows the signing secret once, at creation; the list never shows it", async () => {
      const res = await api(cast.owner).createIntegration({
        ...acme,
        name: "Ops hook",
        target: { case: "webhook", value: { url: `${receiver.origin}/hooks/outpost?token=Q-s3cret` } },
      });
      secret = res.secret;
      id = res.integration!.id;
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
      assert.equal(res.integration!.kind, IntegrationKind.WEBHOOK);
      // The URL may carry the receiver's token (path or query): shown as host and the path's last 4 characters.
      assert.equal(res.integration!.url, `${receiver.origin}/…post`);
      assert.equal(res.integration!.secretPrefix, secret.slice(0, 10));
      const { integrations } = await api(cast.admin).listIntegrations(acme);
      assert.deepEqual(
        integrations.map((i) => i.id),
        [id],
      );
      assert.ok(!JSON.stringify(integrations, (_, v) => (typeof v === "bigint" ? String(v) : v)).includes(secret.slice(10)));
      assert.equal(integrations[0].url, `${receiver.origin}/…post`);
      const events = await t.orm.em.fork().getConnection().execute(`select details from activity_events where target_id = ?`, [id]);
      assert.equal(events[0].details.url, `${receiver.origin}/…post`);
      const stored = await t.orm.em.fork().getConnection().execute(`select display_url from integrations where id = ?`, [id]);
      assert.ok(
        !JSON.stringify([events, stored]).includes("s3cret") && !JSON.stringify([events, stored]).includes("hooks/outpost"),
        "the full URL is only in the sealed credentials",
      );
    });

    it("keeps the secret only encrypted in the database", async () => {
      const rows = await t.orm.em.fork().getConnection().execute(`select * from integrations where id = ?`, [id]);
      const dump = JSON.stringify(rows[0]) + Buffer.from(rows[0].sealed_ciphertext).toString("latin1");
      assert.ok(!dump.includes(secret.slice(6)), "the secret is not stored plain");
    });

    it("sends a test delivery that a Standard Webhooks verifier accepts, with the JSON envelope", async () => {
      const outcome = await api(cast.admin).testIntegration({ ...acme, integrationId: id });
      assert.equal(outcome.ok, true, outcome.error);
      assert.equal(outcome.httpStatus, 204);
      const [request] = receiver.received;
      assert.equal(request.path, "/hooks/outpost?token=Q-s3cret", "the delivery goes to the full URL");
      assert.equal(request.headers["content-type"], "application/json");
      assert.equal(request.headers["webhook-id"], outcome.messageId);
      assert.ok(isUuid(outcome.messageId), `a UUID, as an alert's webhook-id (its delivery's id) is: ${outcome.messageId}`);
      assert.ok(verifyStandardWebhook(secret, request.headers, request.body), "the signature verifies");
      assert.ok(!verifyStandardWebhook(secret, request.headers, request.body.replace("acme", "acmf")), "an altered body does not");
      const envelope = JSON.parse(request.body);
      assert.deepEqual(Object.keys(envelope), ["type", "timestamp", "data"]);
      assert.equal(envelope.type, "integration.test");
      assert.ok(!Number.isNaN(Date.parse(envelope.timestamp)));
      assert.equal(envelope.data.organization.slug, "acme");
      assert.equal(envelope.data.integration.id, id);
      assert.equal(envelope.data.requestedBy.email, cast.admin.email);
    });

    it("rotates the secret: the new one is shown once and verifies, the old one no longer does", async () => {
      const rotated = await api(cast.owner).rotateIntegrationSecret({ ...acme, integrationId: id });
      assert.notEqual(rotated.secret, secret);
      assert.equal(rotated.integration!.secretPrefix, rotated.secret.slice(0, 10));
      await api(cast.owner).testIntegration({ ...acme, integrationId: id });
      const [request] = receiver.received;
      assert.ok(verifyStandardWebhook(rotated.secret, request.headers, request.body));
      assert.ok(!verifyStandardWebhook(secret, request.headers, request.body), "the old secret no longer verifies");
      secret = rotated.secret;
    });

    it("reports a 500, a target that never answers and a closed connection clearly", async () => {
      receiver.behaviour = { status: 500 };
      const failed = await api(cast.owner).testIntegration({ ...acme, integrationId: id });
      assert.deepEqual([failed.ok, failed.httpStatus, failed.error], [false, 500, "answered 500"]);
      receiver.behaviour = "hang";
      const hung = await api(cast.owner).testIntegration({ ...acme, integrationId: id });
      assert.deepEqual([hung.ok, hung.httpStatus], [false, 0]);
      assert.match(hung.error, /no answer in time/);
      receiver.behaviour = "close";
      const closed = await api(cast.owner).testIntegration({ ...acme, integrationId: id });
      assert.equal(closed.ok, false);
      assert.match(closed.error, /connection was closed/);
      receiver.behaviour = { status: 307, headers: { location: "http://169.254.169.254/latest/meta-data/" } };
      const redirected = await api(cast.owner).testIntegration({ ...acme, integrationId: id });
      assert.deepEqual([redirected.ok, redirected.httpStatus], [false, 307]);
      assert.match(redirected.error, /redirect to http:\/\/169\.254\.169\.254\/latest\/meta-data\/, which Outpost does not follow/);
    });

    it("updates the name, the state and the URL, keeping the secret; a target of another kind is refused", async () => {
      const res = await api(cast.owner).updateIntegration({
        ...acme,
        integrationId: id,
        name: "Renamed",
        enabled: false,
        target: { case: "webhook", value: { url: `${receiver.origin}/v2` } },
      });
      assert.deepEqual([res.integration!.name, res.integration!.enabled, res.integration!.url], ["Renamed", false, `${receiver.origin}/…v2`]);
      await api(cast.owner).testIntegration({ ...acme, integrationId: id });
      assert.equal(receiver.received[0].path, "/v2");
      assert.ok(verifyStandardWebhook(secret, receiver.received[0].headers, receiver.received[0].body));
      await rejectsWith(
        api(cast.owner).updateIntegration({ ...acme, integrationId: id, target: { case: "email", value: { recipients: ["a@example.com"] } } }),
        Code.InvalidArgument,
      );
    });
  });

  describe("discord", () => {
    it("posts a payload Discord accepts, linking to the integrations page by its absolute URL, and hides the token of its URL", async () => {
      const url = `${discord.origin}/api/webhooks/123456789/s3cret-T0ken_value`;
      const { integration, secret } = await api(cast.owner).createIntegration({ ...acme, name: "Discord #ops", target: { case: "discord", value: { url } } });
      assert.equal(secret, "");
      assert.equal(integration!.url, `${discord.origin}/…alue`);
      const rows = await t.orm.em.fork().getConnection().execute(`select * from integrations where id = ?`, [integration!.id]);
      assert.ok(!(JSON.stringify(rows[0]) + Buffer.from(rows[0].sealed_ciphertext).toString("latin1")).includes("s3cret-T0ken"));
      const events = await t.orm.em.fork().getConnection().execute(`select details from activity_events where target_id = ?`, [integration!.id]);
      assert.ok(!JSON.stringify(events).includes("s3cret-T0ken"));
      discord.received.length = 0;
      const outcome = await api(cast.owner).testIntegration({ ...acme, integrationId: integration!.id });
      assert.equal(outcome.ok, true, outcome.error);
      const [request] = discord.received;
      assert.equal(request.path, "/api/webhooks/123456789/s3cret-T0ken_value");
      assert.equal(request.headers["content-type"], "application/json");
      const body = JSON.parse(request.body);
      // Discord's execute-webhook shape: content and/or embeds; nobody is pinged.
      assert.deepEqual(body.allowed_mentions, { parse: [] });
      assert.equal(body.embeds.length, 1);
      assert.match(body.embeds[0].title, /Test message for "Discord #ops"/);
      assert.ok(body.embeds[0].description.length <= 4096);
      assert.equal(typeof body.embeds[0].color, "number");
      assert.ok(!Number.isNaN(Date.parse(body.embeds[0].timestamp)));
      assert.equal(body.embeds[0].url, "http://account.test/app/o/acme/integrations", "absolute, on ACCOUNT_BASE_URL");
    });

    it("refuses a URL that is not a Discord webhook", async () => {
      const error = await rejectsWith(
        api(cast.owner).createIntegration({ ...acme, name: "x", target: { case: "discord", value: { url: `${discord.origin}/not-discord` } } }),
        Code.InvalidArgument,
      );
      assert.match(error.rawMessage, /Discord webhook URL/);
      await rejectsWith(
        api(cast.owner, strict).createIntegration({ ...acme, name: "x", target: { case: "discord", value: { url: "https://evil.example.com/api/webhooks/1/abc" } } }),
        Code.InvalidArgument,
      );
    });
  });

  describe("access", () => {
    it("refuses a member (permission_denied) and answers another organization with not_found", async () => {
      const { integration } = await api(cast.owner).createIntegration({ ...acme, name: "Hook", target: { case: "webhook", value: { url: `${receiver.origin}/x` } } });
      const target = { case: "webhook" as const, value: { url: `${receiver.origin}/y` } };
      await rejectsWith(api(cast.member).listIntegrations(acme), Code.PermissionDenied);
      await rejectsWith(api(cast.member).createIntegration({ ...acme, name: "Mine", target }), Code.PermissionDenied);
      await rejectsWith(api(cast.member).testIntegration({ ...acme, integrationId: integration!.id }), Code.PermissionDenied);
      await rejectsWith(api(cast.outsider).listIntegrations(acme), Code.NotFound);
      await rejectsWith(api(cast.outsider).testIntegration({ ...acme, integrationId: integration!.id }), Code.NotFound);
      // Through the outsider's own organization, acme's integration does not exist either.
      const theirs = { organizationSlug: "elsewhere", integrationId: integration!.id };
      await rejectsWith(api(cast.outsider).testIntegration(theirs), Code.NotFound);
      await rejectsWith(api(cast.outsider).updateIntegration({ ...theirs, name: "Stolen" }), Code.NotFound);
      await rejectsWith(api(cast.outsider).rotateIntegrationSecret(theirs), Code.NotFound);
      await rejectsWith(api(cast.outsider).deleteIntegration(theirs), Code.NotFound);
      assert.equal(receiver.received.length, 0);
    });

    it("deletes an integration; it is gone afterwards", async () => {
      const { integration } = await api(cast.owner).createIntegration({
        ...acme,
        name: "Short-lived",
        target: { case: "webhook", value: { url: `${receiver.origin}/z` } },
      });
      await api(cast.admin).deleteIntegration({ ...acme, integrationId: integration!.id });
      await rejectsWith(api(cast.admin).testIntegration({ ...acme, integrationId: integration!.id }), Code.NotFound);
      assert.ok(!(await api(cast.admin).listIntegrations(acme)).integrations.some((i) => i.id === integration!.id));
    });
  });

  describe("activity", () => {
    it("records every change and test as an activity event", async () => {
      const { events } = await t.client(ActivityService, { session: cast.owner.token }).listOrganizationActivity({ ...acme, action: "integration", limit: 200 });
      const actions = new Set(events.map((e) => e.action));
      for (const action of ["integration.created", "integration.updated", "integration.deleted", "integration.secret_rotated", "integration.tested"])
        assert.ok(actions.has(action), action);
      const failed = events.find((e) => e.action === "integration.tested" && e.details.httpStatus === "500");
      assert.equal(failed?.details.ok, "false");
      assert.equal(failed?.details.error, "answered 500");
    });
  });
});
