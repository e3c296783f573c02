import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { IntegrationKind, IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { isUuid } from "../../contract/uuid.ts";
import { acmeWithMembers, joinOrganization, verifyEmail, type AcmeCast, type Account } from "../support/fixtures.ts";
import {
  startDiscordReceiver,
  startHttpReceiver,
  startSmtpReceiver,
  verifyStandardWebhook,
  mailHeader,
  mailText,
  type HttpReceiver,
  type SmtpReceiver,
} from "../support/receivers.ts";

describe("integrations: Discord, signed webhooks and email", () => {
  let t: TestCore;
  /** A second instance on the same database without local development, as production runs. */
  let strict: TestCore;
  let cast: AcmeCast;
  let receiver: HttpReceiver;
  /** Checks each body as Discord does, and answers 400 as Discord does to one it refuses. */
  let discord: HttpReceiver;
  let smtp: SmtpReceiver;
  const api = (who: Account, core = t) => core.client(IntegrationsService, { session: who.token });
  const acme = { organizationSlug: "acme" };

  before(async () => {
    receiver = await startHttpReceiver();
    discord = await startDiscordReceiver();
    smtp = await startSmtpReceiver();
    t = await startTestCore(testConfig, { outbound: { allowLocal: true, timeoutMs: 1000 }, smtp: { url: smtp.url, from: "Outpost <outpost@example.test>" } });
    const resolve = async (host: string) => (host === "hooks.example.test" ? [{ address: "127.0.0.1", family: 4 }] : [{ address: "93.184.216.34", family: 4 }]);
    strict = await startTestCore(testConfig, { database: t.database, outbound: { allowLocal: false, resolve } });
    cast = await acmeWithMembers(t);
  });
  after(async () => {
    await strict?.close();
    await t?.close();
    await receiver?.close();
    await discord?.close();
    await smtp?.close();
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

  describe("email", () => {
    it("sends the test message through the SMTP server to every recipient", async () => {
      const { integration } = await api(cast.owner).createIntegration({
        ...acme,
        name: "On-call",
        target: { case: "email", value: { recipients: ["Owner@Example.com", "member@example.com"] } },
      });
      assert.deepEqual(integration!.recipients, ["owner@example.com", "member@example.com"]);
      const outcome = await api(cast.owner).testIntegration({ ...acme, integrationId: integration!.id });
      assert.equal(outcome.ok, true, outcome.error);
      const mail = smtp.received.at(-1)!;
      assert.equal(mail.from, "outpost@example.test");
      assert.deepEqual(mail.to, ["owner@example.com", "member@example.com"]);
      assert.equal(mailHeader(mail.raw, "subject"), '[Outpost] Test message for "On-call"');
      assert.match(mail.raw, /the integration works/);
      assert.ok(mailText(mail.raw).split("\n").includes("Open: http://account.test/app/o/acme/integrations"), "an absolute link, on ACCOUNT_BASE_URL");
    });

    it("refuses recipients who are not verified addresses of the organization's members, naming them (400)", async () => {
      const unverified = await t.signUp("unverified-member@example.com");
      const stranger = {
        ...acme,
        name: "Mail",
        target: { case: "email" as const, value: { recipients: ["owner@example.com", "stranger@example.com", "Outsider@example.com"] } },
      };
      const refused = await rejectsWith(api(cast.owner).createIntegration(stranger), Code.InvalidArgument);
      assert.match(refused.rawMessage, /^email: stranger@example\.com, outsider@example\.com are not verified addresses of members of this organization/);
      const [violations] = refused.findDetails(ViolationsSchema);
      assert.equal(violations?.violations[0]?.field?.elements[0]?.fieldName, "email");
      // A member whose address is not verified does not qualify either (until they verify it).
      const { token } = await t.client(OrganizationsService, { session: cast.owner.token }).inviteMember({ ...acme, email: unverified.email, role: Role.MEMBER });
      await verifyEmail(t, unverified.email);
      await t.client(OrganizationsService, { session: unverified.token }).acceptInvitation({ token });
      await t.orm.em.fork().getConnection().execute(`update users set email_verified_at = null where id = ?`, [unverified.userId]);
      const one = await rejectsWith(
        api(cast.owner).createIntegration({ ...acme, name: "Mail", target: { case: "email", value: { recipients: [unverified.email] } } }),
        Code.InvalidArgument,
      );
      assert.match(one.rawMessage, /unverified-member@example\.com is not the verified address of a member/);
      const { integration } = await api(cast.owner).createIntegration({ ...acme, name: "Mail", target: { case: "email", value: { recipients: ["owner@example.com"] } } });
      await rejectsWith(
        api(cast.admin).updateIntegration({ ...acme, integrationId: integration!.id, target: { case: "email", value: { recipients: ["stranger@example.com"] } } }),
        Code.InvalidArgument,
      );
      assert.deepEqual((await api(cast.owner).listIntegrations(acme)).integrations.find((i) => i.id === integration!.id)?.recipients, ["owner@example.com"]);
      await api(cast.owner).deleteIntegration({ ...acme, integrationId: integration!.id });
    });

    it("sends only to recipients still verified members; none left, the send is refused", async () => {
      const leaving = await t.signUp("leaving-recipient@example.com");
      await joinOrganization(t, cast.owner, "acme", leaving, Role.MEMBER);
      const { integration } = await api(cast.owner).createIntegration({
        ...acme,
        name: "Two",
        target: { case: "email", value: { recipients: ["owner@example.com", leaving.email] } },
      });
      await t.client(OrganizationsService, { session: leaving.token }).removeMember({ ...acme, userId: leaving.userId });
      const before = smtp.received.length;
      assert.equal((await api(cast.owner).testIntegration({ ...acme, integrationId: integration!.id })).ok, true);
      assert.deepEqual(
        smtp.received.slice(before).map((m) => m.to),
        [["owner@example.com"]],
        "the member who left is dropped",
      );
      const { integration: alone } = await api(cast.owner).createIntegration({
        ...acme,
        name: "Alone",
        target: { case: "email", value: { recipients: ["member@example.com"] } },
      });
      await t.client(OrganizationsService, { session: cast.member.token }).removeMember({ ...acme, userId: cast.member.userId });
      const refused = await api(cast.owner).testIntegration({ ...acme, integrationId: alone!.id });
      assert.equal(refused.ok, false);
      assert.match(refused.error, /refused: none of the recipients \(member@example\.com\) is a verified address of a member/);
      assert.equal(smtp.received.length, before + 1, "nothing more was sent");
      await joinOrganization(t, cast.owner, "acme", cast.member, Role.MEMBER);
      for (const i of [integration!, alone!]) await api(cast.owner).deleteIntegration({ ...acme, integrationId: i.id });
    });

    it("is refused when the deployment has no SMTP server", async () => {
      await rejectsWith(
        api(cast.owner, strict).createIntegration({ ...acme, name: "Mail", target: { case: "email", value: { recipients: ["a@example.com"] } } }),
        Code.FailedPrecondition,
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

  describe("bad input and SSRF", () => {
    const webhook = (url: string) => ({ ...acme, name: "Bad", target: { case: "webhook" as const, value: { url } } });

    it("refuses a bad URL, http without local development, private and metadata addresses (400)", async () => {
      for (const url of [
        "not a url",
        "ftp://example.com/",
        "http://example.com/hook",
        "https://169.254.169.254/",
        "https://10.0.0.1/",
        "https://localhost/hook",
        "https://user:pw@example.com/",
      ]) {
        await rejectsWith(api(cast.owner, strict).createIntegration(webhook(url)), Code.InvalidArgument);
      }
      const error = await rejectsWith(api(cast.owner, strict).createIntegration(webhook("http://example.com/hook")), Code.InvalidArgument);
      assert.match(error.rawMessage, /must use https/);
      // Local development allows http and loopback, never a private network.
      await rejectsWith(api(cast.owner).createIntegration(webhook("http://10.0.0.1/")), Code.InvalidArgument);
      await rejectsWith(api(cast.owner).createIntegration(webhook("http://169.254.169.254/")), Code.InvalidArgument);
    });

    it("refuses too many recipients, a bad address, and a request without a target (400)", async () => {
      const email = (recipients: string[]) => ({ ...acme, name: "Mail", target: { case: "email" as const, value: { recipients } } });
      await rejectsWith(api(cast.owner).createIntegration(email(Array.from({ length: 11 }, (_, i) => `r${i}@example.com`))), Code.InvalidArgument);
      await rejectsWith(api(cast.owner).createIntegration(email(["not an address"])), Code.InvalidArgument);
      await rejectsWith(api(cast.owner).createIntegration(email([])), Code.InvalidArgument);
      await rejectsWith(api(cast.owner).createIntegration({ ...acme, name: "Nothing" }), Code.InvalidArgument);
      await rejectsWith(
        api(cast.owner).createIntegration({ ...acme, name: "", target: { case: "webhook", value: { url: "https://example.com/" } } }),
        Code.InvalidArgument,
      );
    });

    it("refuses at send time a host name that resolves to 127.0.0.1, without local development", async () => {
      const { integration } = await api(cast.owner, strict).createIntegration(webhook(`https://hooks.example.test:${receiver.port}/hook`));
      const outcome = await api(cast.owner, strict).testIntegration({ ...acme, integrationId: integration!.id });
      assert.equal(outcome.ok, false);
      assert.equal(outcome.httpStatus, 0);
      assert.match(outcome.error, /hooks\.example\.test resolves to 127\.0\.0\.1 is a loopback address, which Outpost does not send to/);
      assert.equal(receiver.received.length, 0);
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
