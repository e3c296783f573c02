import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import type { TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { joinOrganization, verifyEmail, type AcmeCast, type Account } from "../support/fixtures.ts";
import { mailHeader, mailText, type HttpReceiver, type SmtpReceiver } from "../support/receivers.ts";
import { startIntegrationsFixture, type IntegrationsFixture } from "./integrations-fixture.ts";

/** Email integrations (recipients who are verified members, through the SMTP server) and the targets refused: bad input and SSRF. Webhooks and Discord: integrations.test.ts. */
describe("integrations: email recipients, bad input and SSRF", () => {
  let t: TestCore;
  /** A second instance on the same database without local development, as production runs. */
  let strict: TestCore;
  let cast: AcmeCast;
  let receiver: HttpReceiver;
  let smtp: SmtpReceiver;
  let fixture: IntegrationsFixture | undefined;
  const api = (who: Account, core = t) => core.client(IntegrationsService, { session: who.token });
  const acme = { organizationSlug: "acme" };

  before(async () => {
    fixture = await startIntegrationsFixture();
    ({ t, strict, cast, receiver, smtp } = fixture);
  });
  after(async () => {
    await fixture?.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.behaviour = { status: 204 };
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
});
