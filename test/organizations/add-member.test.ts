import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { toJson } from "@bufbuild/protobuf";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { AddMemberResponseSchema, OrganizationsService, type AddMemberResponse } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { InvitationStatus, Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { mailHeader, mailText, startSmtpReceiver, verificationLinkTo, type SmtpReceiver } from "../support/receivers.ts";
import { verifyEmail, type Account } from "../support/fixtures.ts";

/**
 * organizations/addMember after issue 27: it adds at once only a verified colleague (an account
 * sharing an organization with the caller); anyone else is invited, with one answer whether or not
 * the address has an account, and an account signed up with someone else's address is never made a
 * member on that someone's behalf.
 */
describe("organizations: addMember neither enumerates accounts nor seats squatters", () => {
  let t: TestCore;
  let smtp: SmtpReceiver;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const members = async (who: Account, slug: string) => (await orgs(who).listMembers({ organizationSlug: slug })).members.map((m) => m.email);
  const invitationsMailedTo = (address: string) => smtp.received.filter((m) => m.to.includes(address) && /invited/.test(mailHeader(m.raw, "subject") ?? ""));

  /** The answer as the HTTP API writes it, with what differs by nature (ids, times, the secret, the address) blanked. */
  const shape = (res: AddMemberResponse, email: string) =>
    JSON.stringify(toJson(AddMemberResponseSchema, res, { alwaysEmitImplicit: true }))
      .replaceAll(email, "<email>")
      .replace(/opi_[0-9A-Za-z]{40}/g, "<token>")
      .replace(/"id":"[0-9a-f-]{36}"/g, '"id":"<id>"')
      .replace(/"\d{4}-\d\d-\d\dT[0-9:.]+Z"/g, '"<time>"');

  let owner: Account;
  before(async () => {
    smtp = await startSmtpReceiver();
    t = await startTestCore(testConfig, { smtp: { url: smtp.url, from: "Outpost <outpost@example.test>" } });
    owner = await t.signUp("owner@acme-corp.example");
    await orgs(owner).createOrganization({ name: "Acme Corp", slug: "acme-corp" });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  it("answers the same for an address with an account (verified or not) and one without: an invitation, mailed", async () => {
    const unverified = await t.signUp("has.account@example.com");
    const verified = await t.signUp("verified.stranger@example.com");
    await verifyEmail(t, verified.email);
    const answers = new Map<string, AddMemberResponse>();
    for (const email of ["no.account@example.com", unverified.email, verified.email]) {
      answers.set(email, await orgs(owner).addMember({ organizationSlug: "acme-corp", email, role: Role.MEMBER }));
    }
    const shapes = [...answers].map(([email, res]) => shape(res, email));
    assert.equal(new Set(shapes).size, 1, `one answer for all three:\n${shapes.join("\n")}`);
    for (const [email, res] of answers) {
      assert.equal(res.member, undefined, `${email} is not added at once`);
      assert.equal(res.invitation?.status, InvitationStatus.PENDING);
      assert.equal(res.emailSent, true, res.emailError);
      assert.equal(invitationsMailedTo(email).length, 1, `${email} got the invitation`);
      assert.ok(mailText(invitationsMailedTo(email)[0].raw).includes(res.link));
    }
    assert.deepEqual(await members(owner, "acme-corp"), [owner.email]);
    const invited = await orgs(owner).listInvitations({ organizationSlug: "acme-corp" });
    assert.deepEqual(invited.invitations.map((i) => i.email).sort(), [...answers.keys()].sort());
    // A second try is refused alike, and never as "no account".
    for (const email of answers.keys()) {
      await rejectsWith(orgs(owner).addMember({ organizationSlug: "acme-corp", email, role: Role.MEMBER }), Code.AlreadyExists, "invitation_pending");
    }
  });

  it("adds at once a verified colleague, whom the caller already sees in a members list", async () => {
    const colleague = await t.signUp("colleague@example.com");
    await verifyEmail(t, colleague.email);
    await orgs(colleague).createOrganization({ name: "Side Project", slug: "side-project" });
    const { token } = await orgs(colleague).inviteMember({ organizationSlug: "side-project", email: owner.email, role: Role.ADMIN });
    await verifyEmail(t, owner.email);
    await orgs(owner).acceptInvitation({ token });

    const res = await orgs(owner).addMember({ organizationSlug: "acme-corp", email: "Colleague@Example.com", role: Role.MEMBER });
    assert.equal(res.member?.email, colleague.email);
    assert.equal(res.member?.emailVerified, true);
    assert.equal(res.invitation, undefined);
    assert.ok((await members(owner, "acme-corp")).includes(colleague.email));
    await rejectsWith(orgs(owner).addMember({ organizationSlug: "acme-corp", email: colleague.email, role: Role.MEMBER }), Code.AlreadyExists, "already_member");
  });

  it("never makes a squatter of the new hire's address a member: addMember invites, and accepting needs the address verified", async () => {
    const squatter = await t.signUp("new.hire@acme-corp.example");
    const res = await orgs(owner).addMember({ organizationSlug: "acme-corp", email: "new.hire@acme-corp.example", role: Role.ADMIN });
    assert.equal(res.member, undefined, "not added at once");
    assert.ok(!(await members(owner, "acme-corp")).includes(squatter.email));
    // Even holding the link (it went to the address's mailbox, which the squatter does not read),
    // an unverified account cannot use it.
    const refused = await rejectsWith(orgs(squatter).acceptInvitation({ token: res.token }), Code.FailedPrecondition, "email_unverified");
    assert.match(refused.rawMessage, /confirm your address new\.hire@acme-corp\.example first/);
    assert.ok(!(await members(owner, "acme-corp")).includes(squatter.email));
    const { invitations } = await orgs(owner).listInvitations({ organizationSlug: "acme-corp" });
    assert.equal(invitations.find((i) => i.id === res.invitation!.id)?.status, InvitationStatus.PENDING, "the invitation stays for the address's owner");
    // The squatter cannot verify either: the verification link went to the same mailbox.
    assert.ok(verificationLinkTo(smtp, squatter.email), "the link is in the address's mailbox, not the squatter's hands");
  });

  it("lets the address's real owner in once they verify it", async () => {
    const res = await orgs(owner).addMember({ organizationSlug: "acme-corp", email: "real.hire@acme-corp.example", role: Role.MEMBER });
    const hire = await t.signUp("real.hire@acme-corp.example");
    await rejectsWith(orgs(hire).acceptInvitation({ token: res.token }), Code.FailedPrecondition, "email_unverified");
    await t.client(IdentityService).verifyEmail({ token: verificationLinkTo(smtp, hire.email)!.token });
    const accepted = await orgs(hire).acceptInvitation({ token: res.token });
    assert.equal(accepted.member?.email, hire.email);
  });
});
