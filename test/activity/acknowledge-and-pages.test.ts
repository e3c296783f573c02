import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { ActivityKind, ActivityService, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { joinOrganization } from "../support/fixtures.ts";

type Account = { token: string; userId: string; email: string };

/** The organization log's filters (server, kinds, severities), its cursor, and acknowledgement. */
describe("activity: filters, the cursor and acknowledgement", function () {
  this.timeout(60_000);
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let member: Account;
  let outsider: Account;
  let keep: string;
  let drop: string;
  const activity = (who: Account) => t.client(ActivityService, { session: who.token });
  const servers = (who: Account) => t.client(ServersService, { session: who.token });

  before(async () => {
    t = await startTestCore({
      ...testConfig,
      plans: { free: { servers: 10, gameOAuthClients: 2, notes: 50, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 } },
    });
    [owner, admin, member, outsider] = await Promise.all(["owner", "admin", "member", "outsider"].map((n) => t.signUp(`${n}@example.com`)));
    const orgs = t.client(OrganizationsService, { session: owner.token });
    await orgs.createOrganization({ name: "Acme", slug: "acme" });
    await joinOrganization(t, owner, "acme", admin, Role.ADMIN);
    await joinOrganization(t, owner, "acme", member, Role.MEMBER);
    await t.client(OrganizationsService, { session: outsider.token }).createOrganization({ name: "Elsewhere", slug: "elsewhere" });
    keep = (await servers(owner).createServer({ organizationSlug: "acme", name: "Keep", game: Game.MINECRAFT })).server!.id;
    drop = (await servers(owner).createServer({ organizationSlug: "acme", name: "Drop", game: Game.MINECRAFT })).server!.id;
    await servers(owner).regenerateAgentKey({ serverId: keep });
    await servers(owner).deleteServer({ serverId: drop });
  });
  after(async () => {
    await t?.close();
  });

  describe("filters", () => {
    it("filters by one kind or several, by severity, and by server, combined", async () => {
      const list = (filter: object) => activity(owner).listOrganizationActivity({ organizationSlug: "acme", limit: 200, ...filter });
      const access = (await list({ kind: [ActivityKind.ACCESS] })).events;
      const joined = ["invitation.accepted", "invitation.accepted", "invitation.created", "invitation.created"];
      assert.deepEqual(access.map((e) => e.action).sort(), joined);
      const either = (await list({ kind: [ActivityKind.ACCESS, ActivityKind.SECURITY] })).events;
      assert.deepEqual(either.map((e) => e.action).sort(), [...joined, "server.agent_key_regenerated"]);
      const warnings = (await list({ severity: [ActivitySeverity.WARNING] })).events;
      assert.deepEqual(warnings.map((e) => e.action).sort(), ["server.agent_key_regenerated", "server.deleted"]);
      const configWarnings = (await list({ kind: [ActivityKind.CONFIGURATION], severity: [ActivitySeverity.WARNING, ActivitySeverity.ERROR] })).events;
      assert.deepEqual(
        configWarnings.map((e) => [e.action, e.serverId]),
        [["server.deleted", drop]],
      );
      const onKeep = (await list({ serverId: keep, kind: [ActivityKind.CONFIGURATION] })).events;
      assert.deepEqual(
        onKeep.map((e) => e.action),
        ["server.created"],
      );
      assert.deepEqual((await list({ kind: [ActivityKind.STATUS] })).events, []);
    });

    it("refuses an unknown or repeated kind, and UNSPECIFIED, naming the field", async () => {
      const cases: Array<[{ kind?: ActivityKind[]; severity?: ActivitySeverity[] }, string]> = [
        [{ kind: [ActivityKind.UNSPECIFIED] }, "kind"],
        [{ kind: [99 as ActivityKind] }, "kind"],
        [{ kind: [ActivityKind.ACCESS, ActivityKind.ACCESS] }, "kind"],
        [{ severity: [ActivitySeverity.UNSPECIFIED] }, "severity"],
      ];
      for (const [request, field] of cases) {
        const error = await rejectsWith(activity(owner).listOrganizationActivity({ organizationSlug: "acme", ...request }), Code.InvalidArgument);
        assert.match(error.rawMessage, new RegExp(field));
      }
    });
  });

  describe("the cursor", () => {
    it("pages to the end without gaps or repeats, even with new events written between pages", async () => {
      const everything = (await activity(owner).listOrganizationActivity({ organizationSlug: "acme", limit: 200 })).events.map((e) => e.id);
      const first = await activity(owner).listOrganizationActivity({ organizationSlug: "acme", limit: 2 });
      assert.ok(first.nextCursor);
      // Written while the reader is between pages: newer than the first page, so never on a later one.
      t.clock.advance(1_000);
      await servers(owner).updateServer({ serverId: keep, name: "Kept" });
      const paged = first.events.map((e) => e.id);
      let cursor = first.nextCursor;
      while (cursor) {
        const page = await activity(admin).listOrganizationActivity({ organizationSlug: "acme", limit: 2, cursor });
        paged.push(...page.events.map((e) => e.id));
        cursor = page.nextCursor;
      }
      assert.deepEqual(paged, everything);
      const last = await activity(owner).listOrganizationActivity({ organizationSlug: "acme", limit: 200 });
      assert.equal(last.nextCursor, "", "no cursor after the last page");
      assert.equal(last.events[0].action, "server.renamed");
    });

    it("keeps the filters across pages", async () => {
      const filter = { organizationSlug: "acme", kind: [ActivityKind.ACCESS, ActivityKind.CONFIGURATION], limit: 1 };
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await activity(owner).listOrganizationActivity({ ...filter, cursor });
        seen.push(...page.events.map((e) => e.action));
        cursor = page.nextCursor || undefined;
      } while (cursor);
      assert.ok(seen.length >= 5);
      assert.ok(!seen.includes("server.agent_key_regenerated"));
    });

    it("refuses a cursor that is not one (invalid_argument on the field), and cursor with before", async () => {
      const { events, nextCursor } = await activity(owner).listOrganizationActivity({ organizationSlug: "acme", limit: 1 });
      for (const cursor of ["nope", "!!!", Buffer.from("12.not-a-uuid").toString("base64url"), `${nextCursor}x`]) {
        const error = await rejectsWith(activity(owner).listOrganizationActivity({ organizationSlug: "acme", cursor }), Code.InvalidArgument, "invalid_argument");
        assert.match(error.rawMessage, /cursor/);
      }
      await rejectsWith(activity(owner).listOrganizationActivity({ organizationSlug: "acme", cursor: nextCursor, before: events[0].id }), Code.InvalidArgument);
    });
  });

  describe("acknowledgement", () => {
    const newest = async (action: string) => (await activity(owner).listOrganizationActivity({ organizationSlug: "acme", action })).events[0];

    it("lets an owner acknowledge, recording who and when; again changes nothing", async () => {
      const event = await newest("server.deleted");
      const acked = await activity(owner).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: event.id });
      const ack = acked.event!.acknowledgement!;
      assert.deepEqual([ack.userId, ack.email], [owner.userId, owner.email]);
      assert.equal(Number(ack.acknowledgedAt!.seconds), Math.floor(t.clock.now().getTime() / 1000));
      t.clock.advance(5_000);
      const again = await activity(admin).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: event.id });
      assert.deepEqual(again.event!.acknowledgement, ack, "the first acknowledgement stays");
      assert.deepEqual((await newest("server.deleted")).acknowledgement, ack, "and the log shows it");
    });

    it("lets an admin acknowledge; refuses a member (permission_denied) and an anonymous caller", async () => {
      const event = await newest("server.agent_key_regenerated");
      await rejectsWith(
        activity(member).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: event.id }),
        Code.PermissionDenied,
        "permission_denied",
      );
      await rejectsWith(t.client(ActivityService).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: event.id }), Code.Unauthenticated);
      assert.equal((await newest("server.agent_key_regenerated")).acknowledgement, undefined);
      const acked = await activity(admin).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: event.id });
      assert.equal(acked.event!.acknowledgement!.userId, admin.userId);
    });

    it("answers not_found for another organization's event, an unknown one, and an organization the caller is not in", async () => {
      const theirs = (await activity(outsider).listOrganizationActivity({ organizationSlug: "elsewhere", limit: 1 })).events[0];
      const other = await rejectsWith(activity(owner).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: theirs.id }), Code.NotFound, "not_found");
      const unknown = await rejectsWith(
        activity(owner).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: "00000000-0000-4000-8000-000000000000" }),
        Code.NotFound,
      );
      assert.equal(other.rawMessage, unknown.rawMessage, "another organization's event reads as none");
      const event = await newest("server.created");
      await rejectsWith(activity(outsider).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: event.id }), Code.NotFound);
      await rejectsWith(activity(owner).acknowledgeOrganizationActivityEvent({ organizationSlug: "acme", eventId: "nope" }), Code.InvalidArgument);
      assert.equal((await activity(outsider).listOrganizationActivity({ organizationSlug: "elsewhere", limit: 1 })).events[0].acknowledgement, undefined);
    });
  });
});
