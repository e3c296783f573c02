import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { InvitationStatus, Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { mailHeader, mailText, startSmtpReceiver, verificationLinkTo, type SmtpReceiver } from "../support/receivers.ts";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { joinOrganization, verifyEmail, type Account } from "../support/fixtures.ts";

describe("organizations: invitations by email", () => {
  let t: TestCore;
  let smtp: SmtpReceiver;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);

  let counter = 0;
  async function organization(): Promise<{ slug: string; owner: Account }> {
    const n = ++counter;
    const owner = await t.signUp(`inv-owner${n}@example.com`, { name: `Owner ${n}` });
    const slug = `inv-team-${n}`;
    await orgs(owner).createOrganization({ name: `Invited Team ${n}`, slug });
    return { slug, owner };
  }

  before(async () => {
    smtp = await startSmtpReceiver();
    t = await startTestCore(testConfig, { smtp: { url: smtp.url, from: "Outpost <outpost@example.test>" } });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  it("invites an address without an account, emails the link once, and the new account joins with the role", async () => {
    const { slug, owner } = await organization();
    const invited = await orgs(owner).inviteMember({ organizationSlug: slug, email: "Newcomer1@Example.com", role: Role.ADMIN });
    assert.match(invited.token, /^opi_[0-9A-Za-z]{40}$/);
    assert.equal(invited.link, `http://account.test/app/invitations/accept?token=${invited.token}`);
    assert.equal(invited.emailSent, true, invited.emailError);
    assert.equal(invited.invitation?.email, "newcomer1@example.com");
    assert.equal(invited.invitation?.status, InvitationStatus.PENDING);
    assert.equal(invited.invitation?.inviterEmail, owner.email);
    const mail = smtp.received.find((m) => m.to.includes("newcomer1@example.com"));
    assert.ok(mail, "the invitation was emailed");
    assert.match(mailHeader(mail.raw, "subject") ?? "", /Invited Team/);
    assert.ok(mailText(mail.raw).includes(invited.link), "the email carries the link");
    // Only the hash is stored.
    const [stored] = await sql(`select token_hash from invitations where id = ?`, [invited.invitation!.id]);
    assert.notEqual(stored.token_hash, invited.token);
    assert.equal((await orgs(owner).listInvitations({ organizationSlug: slug })).invitations[0]?.id, invited.invitation!.id);

    const newcomer = await t.signUp("newcomer1@example.com");
    const shown = await orgs(newcomer).getInvitation({ token: invited.token });
    assert.equal(shown.organizationName, `Invited Team ${counter}`);
    assert.equal(shown.role, Role.ADMIN);
    assert.equal(shown.inviterEmail, owner.email);
    assert.equal(shown.forCaller, true);
    // The new account must first show it receives mail at the address: the link mailed at sign-up.
    const unverified = await rejectsWith(orgs(newcomer).acceptInvitation({ token: invited.token }), Code.FailedPrecondition, "email_unverified");
    assert.match(unverified.rawMessage, /Account → Security/);
    await t.client(IdentityService).verifyEmail({ token: verificationLinkTo(smtp, "newcomer1@example.com")!.token });
    const accepted = await orgs(newcomer).acceptInvitation({ token: invited.token });
    assert.equal(accepted.member?.role, Role.ADMIN);
    assert.equal(accepted.organization?.slug, slug);
    const { organizations } = await orgs(newcomer).listOrganizations({});
    assert.deepEqual(
      organizations.map((o) => [o.slug, o.role]),
      [[slug, Role.ADMIN]],
    );

    // Used once: a second accept is refused, and the list shows it accepted.
    await rejectsWith(orgs(newcomer).acceptInvitation({ token: invited.token }), Code.FailedPrecondition, "failed_precondition");
    assert.equal((await orgs(owner).listInvitations({ organizationSlug: slug })).invitations.length, 0);
    const all = await orgs(owner).listInvitations({ organizationSlug: slug, includeClosed: true });
    assert.equal(all.invitations[0]?.status, InvitationStatus.ACCEPTED);
    const events = await t.client(ActivityService, { session: owner.token }).listOrganizationActivity({ organizationSlug: slug });
    const actions = events.events.map((e) => e.action);
    assert.ok(actions.includes("invitation.created") && actions.includes("invitation.accepted"), actions.join(","));
  });

  it("keeps an organization's and an inviter's name stored with a CR or ESC on one line of the email, shown as escapes", async () => {
    const { slug, owner } = await organization();
    // Stored before the contract refused such names (a rename now is invalid_argument).
    await sql(`update organizations set name = ? where slug = ?`, ["Evil\rBcc: all@example.com\u001b[2J\u202eTeam", slug]);
    await sql(`update users set name = ? where id = ?`, ["Mallory\r\nSubject: urgent\u0085x", owner.userId]);
    await rejectsWith(orgs(owner).updateOrganization({ organizationSlug: slug, name: "Evil\rTeam" }), Code.InvalidArgument);
    const invited = await orgs(owner).inviteMember({ organizationSlug: slug, email: "escaped@example.com", role: Role.MEMBER });
    assert.equal(invited.emailSent, true, invited.emailError);
    const mail = smtp.received.find((m) => m.to.includes("escaped@example.com"))!;
    const subject = mailHeader(mail.raw, "subject")!;
    assert.equal(subject, "You are invited to Evil\\x0dBcc: all@example.com\\x1b[2J\\u202eTeam on Outpost");
    assert.equal(mailHeader(mail.raw, "bcc"), undefined);
    const text = mailText(mail.raw).replace(/\r\n/g, "\n");
    assert.doesNotMatch(text, /[\r\u001b\u0085\u202e]/, "no control or bidirectional character in the text");
    const [first] = text.split("\n");
    assert.equal(
      first,
      `Mallory\\x0d\\x0aSubject: urgent\\x85x (${owner.email}) invited you to join Evil\\x0dBcc: all@example.com\\x1b[2J\\u202eTeam on Outpost as a member.`,
    );
  });

  it("refuses an expired, a revoked and a wrongly addressed invitation, leaving it unused", async () => {
    const { slug, owner } = await organization();
    const someone = await t.signUp("someone2@example.com");
    const other = await t.signUp("other2@example.com");
    const expiring = await orgs(owner).inviteMember({ organizationSlug: slug, email: someone.email, role: Role.MEMBER });

    const wrong = await rejectsWith(orgs(other).acceptInvitation({ token: expiring.token }), Code.PermissionDenied, "permission_denied");
    assert.match(wrong.rawMessage, /another email address/);
    assert.doesNotMatch(wrong.rawMessage, /someone2/);
    assert.equal((await orgs(other).getInvitation({ token: expiring.token })).forCaller, false);

    await sql(`update invitations set expires_at = now() - interval '1 minute' where id = ?`, [expiring.invitation!.id]);
    const expired = await rejectsWith(orgs(someone).acceptInvitation({ token: expiring.token }), Code.FailedPrecondition);
    assert.match(expired.rawMessage, /expired/);
    assert.equal((await orgs(someone).getInvitation({ token: expiring.token })).status, InvitationStatus.EXPIRED);

    // An expired invitation does not block a new one; a pending one does.
    const fresh = await orgs(owner).inviteMember({ organizationSlug: slug, email: someone.email, role: Role.MEMBER });
    await rejectsWith(orgs(owner).inviteMember({ organizationSlug: slug, email: "SOMEONE2@example.com", role: Role.MEMBER }), Code.AlreadyExists, "invitation_pending");
    await orgs(owner).revokeInvitation({ organizationSlug: slug, invitationId: fresh.invitation!.id });
    const revoked = await rejectsWith(orgs(someone).acceptInvitation({ token: fresh.token }), Code.FailedPrecondition);
    assert.match(revoked.rawMessage, /revoked/);
    await rejectsWith(orgs(owner).revokeInvitation({ organizationSlug: slug, invitationId: fresh.invitation!.id }), Code.FailedPrecondition);
    assert.equal((await orgs(someone).listOrganizations({})).organizations.length, 0);

    await rejectsWith(orgs(someone).acceptInvitation({ token: "opi_" + "x".repeat(40) }), Code.NotFound, "not_found");
    await rejectsWith(orgs(someone).getInvitation({ token: "not-a-token" }), Code.NotFound, "not_found");
  });

  it("follows the member rules: an admin invites members only, a member none, an outsider sees nothing; members are refused", async () => {
    const { slug, owner } = await organization();
    const admin = await t.signUp("admin3@example.com");
    const member = await t.signUp("member3@example.com");
    const outsider = await t.signUp("outsider3@example.com");
    await joinOrganization(t, owner, slug, admin, Role.ADMIN);
    await joinOrganization(t, owner, slug, member, Role.MEMBER);
    await orgs(admin).inviteMember({ organizationSlug: slug, email: "fine3@example.com", role: Role.MEMBER });
    await rejectsWith(orgs(admin).inviteMember({ organizationSlug: slug, email: "boss3@example.com", role: Role.ADMIN }), Code.PermissionDenied);
    await rejectsWith(orgs(member).inviteMember({ organizationSlug: slug, email: "x3@example.com", role: Role.MEMBER }), Code.PermissionDenied);
    await rejectsWith(orgs(member).listInvitations({ organizationSlug: slug }), Code.PermissionDenied);
    await rejectsWith(orgs(outsider).inviteMember({ organizationSlug: slug, email: "x3@example.com", role: Role.MEMBER }), Code.NotFound);
    await rejectsWith(
      orgs(owner).inviteMember({ organizationSlug: slug, email: "Member3@example.com", role: Role.MEMBER }),
      Code.FailedPrecondition,
      "failed_precondition",
    );
    await rejectsWith(orgs(owner).inviteMember({ organizationSlug: slug, email: "not an email", role: Role.MEMBER }), Code.InvalidArgument);
  });

  it("ends the invitations a member sent when they leave or are removed, and those their new role could not send when demoted", async () => {
    const { slug, owner } = await organization();
    const [admin, demoted, coOwner] = [await t.signUp("admin9@example.com"), await t.signUp("demoted9@example.com"), await t.signUp("coowner9@example.com")];
    await joinOrganization(t, owner, slug, admin, Role.ADMIN);
    await joinOrganization(t, owner, slug, demoted, Role.ADMIN);
    await joinOrganization(t, owner, slug, coOwner, Role.ADMIN);
    await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: coOwner.userId, role: Role.OWNER });
    const byAdmin = await orgs(admin).inviteMember({ organizationSlug: slug, email: "alt9@example.com", role: Role.MEMBER });
    const byDemoted = await orgs(demoted).inviteMember({ organizationSlug: slug, email: "friend9@example.com", role: Role.MEMBER });
    const adminByCoOwner = await orgs(coOwner).inviteMember({ organizationSlug: slug, email: "boss9@example.com", role: Role.ADMIN });
    const memberByCoOwner = await orgs(coOwner).inviteMember({ organizationSlug: slug, email: "crew9@example.com", role: Role.MEMBER });
    const byOwner = await orgs(owner).inviteMember({ organizationSlug: slug, email: "kept9@example.com", role: Role.MEMBER });

    await orgs(owner).removeMember({ organizationSlug: slug, userId: admin.userId });
    await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: demoted.userId, role: Role.MEMBER });
    await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: coOwner.userId, role: Role.ADMIN });

    const status = async (invited: { invitation?: { id: string } }) =>
      InvitationStatus[
        (await orgs(owner).listInvitations({ organizationSlug: slug, includeClosed: true })).invitations.find((i) => i.id === invited.invitation!.id)!.status
      ];
    assert.equal(await status(byAdmin), "REVOKED", "a removed admin's invitation cannot bring anyone in");
    assert.equal(await status(byDemoted), "REVOKED", "a member cannot invite, so neither do their invitations");
    assert.equal(await status(adminByCoOwner), "REVOKED", "an admin cannot invite admins");
    assert.equal(await status(memberByCoOwner), "PENDING");
    assert.equal(await status(byOwner), "PENDING");
    const alt = await t.signUp("alt9@example.com");
    await rejectsWith(orgs(alt).acceptInvitation({ token: byAdmin.token }), Code.FailedPrecondition);
    const { events } = await t
      .client(ActivityService, { session: owner.token })
      .listOrganizationActivity({ organizationSlug: slug, action: "invitation.revoked", limit: 10 });
    assert.deepEqual(events.map((e) => [e.details.email, e.details.reason]).sort(), [
      ["alt9@example.com", "inviter_left_organization"],
      ["boss9@example.com", "inviter_role_changed"],
      ["friend9@example.com", "inviter_role_changed"],
    ]);
  });

  it("refuses accepting when already a member, and the invitation stays pending", async () => {
    const { slug, owner } = await organization();
    const person = await t.signUp("person4@example.com");
    const invited = await orgs(owner).inviteMember({ organizationSlug: slug, email: person.email, role: Role.MEMBER });
    // Meanwhile they join another way: a colleague of the owner's (another organization), added at once.
    await orgs(owner).createOrganization({ name: "Lobby 4", slug: "lobby-4" });
    await joinOrganization(t, owner, "lobby-4", person, Role.MEMBER);
    assert.ok((await orgs(owner).addMember({ organizationSlug: slug, email: person.email, role: Role.MEMBER })).member);
    const refused = await rejectsWith(orgs(person).acceptInvitation({ token: invited.token }), Code.FailedPrecondition);
    assert.match(refused.rawMessage, /already a member/);
    const [row] = await sql(`select accepted_at from invitations where id = ?`, [invited.invitation!.id]);
    assert.equal(row.accepted_at, null);
  });

  it("makes one membership of two concurrent accepts by one user", async () => {
    const { slug, owner } = await organization();
    const person = await t.signUp("race5@example.com");
    await verifyEmail(t, person.email);
    const invited = await orgs(owner).inviteMember({ organizationSlug: slug, email: person.email, role: Role.MEMBER });
    const results = await Promise.allSettled([orgs(person).acceptInvitation({ token: invited.token }), orgs(person).acceptInvitation({ token: invited.token })]);
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1, JSON.stringify(results.map((r) => r.status)));
    const [count] = await sql(`select count(*)::int as n from memberships m join organizations o on o.id = m.organization_id where o.slug = ? and m.user_id = ?`, [
      slug,
      person.userId,
    ]);
    assert.equal(count.n, 1);
    // One account per address (in any case), so no second user can hold the same invitation.
    await rejectsWith(t.signUp("RACE5@example.com"), Code.AlreadyExists);
  });

  it("limits how many invitations one person sends", async () => {
    const { slug, owner } = await organization();
    for (let i = 0; i < 50; i++) await t.rateLimits.invitations.consume(`user:${owner.userId}`);
    await rejectsWith(orgs(owner).inviteMember({ organizationSlug: slug, email: "late6@example.com", role: Role.MEMBER }), Code.ResourceExhausted, "rate_limited");
  });
});

describe("organizations: invitations without SMTP", () => {
  let t: TestCore;
  before(async () => {
    t = await startTestCore();
  });
  after(async () => {
    await t?.close();
  });

  it("returns the link and says the email was not sent", async () => {
    const owner = await t.signUp("nosmtp@example.com");
    const orgs = t.client(OrganizationsService, { session: owner.token });
    await orgs.createOrganization({ name: "No Mail", slug: "no-mail" });
    const invited = await orgs.inviteMember({ organizationSlug: "no-mail", email: "friend@example.com", role: Role.MEMBER });
    assert.equal(invited.emailSent, false);
    assert.match(invited.emailError, /SMTP/);
    assert.ok(invited.link.endsWith(invited.token));
  });
});
