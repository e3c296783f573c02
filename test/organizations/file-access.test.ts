import assert from "node:assert/strict";
import { Code, type ConnectError } from "@connectrpc/connect";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { AccessRequestStatus, ServerAction } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { NotificationsService } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { findGrant, findServerAccess } from "../../core/access-queries.ts";
import { fileAccessOf } from "../../core/access.ts";
import { acmeWithMembers, type Account } from "../support/fixtures.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const config = { ...testConfig, plans: { free: { ...testConfig.plans.free, servers: 50, gameOAuthClients: 2 } } };

/**
 * Grants and access requests for a server's files (issue 29): files_read and files_write (write
 * implies read) within constraints.file_paths, stored and shown as given (normalized), refused
 * when a path is not a selector, narrowed (never widened) by an approval, and asked for through
 * servers/createFileAccessRequest as any other access request. The access check's own read of
 * the grant (core/access-queries.ts) carries the paths to core/access.ts fileAccessOf.
 */
describe("organizations: file access grants and requests", function () {
  this.timeout(60_000);
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let member: Account;
  let outsider: Account;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const servers = (who: Account) => t.client(ServersService, { session: who.token });
  const newServer = async (name: string) => (await servers(owner).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT })).server!.id;
  const grantFiles = (serverId: string, filePaths: string[], actions = [ServerAction.FILES_WRITE]) =>
    orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId, actions, constraints: { filePaths } });
  const askFiles = (serverId: string, primaryPath: string, secondaryPath?: string, who = member) =>
    servers(who).createFileAccessRequest({ serverId, actions: [ServerAction.FILES_WRITE], primaryPath, secondaryPath, reason: "updating Essentials" });
  const query = () => t.deps.statements.on(t.orm.em.fork());
  /** The problems of a refusal's Violations detail, as "field: message". */
  const violations = (error: ConnectError) =>
    error.findDetails(ViolationsSchema)[0]?.violations.map((v) => `${v.field?.elements.map((e) => e.fieldName).join(".")}: ${v.message}`);

  before(async () => {
    t = await startTestCore(config);
    ({ owner, admin, member, outsider } = await acmeWithMembers(t));
  });
  after(async () => {
    await t?.close();
  });

  it("stores a files_write grant with its paths (files_read added, paths normalized) and shows it the same everywhere", async () => {
    const serverId = await newServer("Files");
    const { accessGrant } = await grantFiles(serverId, ["plugins/Essentials/", "plugins/*.jar", "plugins/Essentials"]);
    assert.deepEqual(accessGrant!.actions, [ServerAction.VIEW, ServerAction.FILES_READ, ServerAction.FILES_WRITE]);
    assert.deepEqual(accessGrant!.constraints?.filePaths, ["plugins/Essentials", "plugins/*.jar"]);

    const listed = await orgs(admin).listAccessGrants({ organizationSlug: "acme", serverId });
    assert.deepEqual(
      listed.accessGrants.map((g) => [g.id, g.actions, g.constraints?.filePaths]),
      [[accessGrant!.id, accessGrant!.actions, ["plugins/Essentials", "plugins/*.jar"]]],
    );
    const mine = (await orgs(member).getCurrentMember({ organizationSlug: "acme" })).accessGrants.find((g) => g.serverId === serverId);
    assert.deepEqual(mine?.constraints?.filePaths, ["plugins/Essentials", "plugins/*.jar"]);

    const { events } = await t.client(ActivityService, { session: owner.token }).listOrganizationActivity({ organizationSlug: "acme", serverId });
    const created = events.find((e) => e.action === "access_grant.created");
    assert.equal(created?.details.filePaths, "plugins/Essentials, plugins/*.jar");
    assert.equal(created?.details.actions, "view,files_read,files_write");
  });

  it("gives the access check the grant's paths: a member reaches them, a manager everything", async () => {
    const serverId = await newServer("Checked");
    const { accessGrant } = await grantFiles(serverId, ["plugins/Essentials/**"], [ServerAction.FILES_READ]);
    const row = await findServerAccess(query(), member.userId, serverId);
    assert.deepEqual(row?.grant?.file_paths, ["plugins/Essentials/**"]);
    const access = fileAccessOf({ row: row!, grant: row!.grant! });
    assert.equal(access.everywhere, false);
    assert.deepEqual(
      ["plugins/Essentials/config.yml", "plugins/EssentialsX/config.yml", "server.properties"].map((p) => access.allows(p)),
      [true, false, false],
    );
    assert.deepEqual(
      ["", "plugins", "world"].map((d) => access.reaches(d)),
      [true, true, false],
    );
    assert.deepEqual((await findGrant(query(), accessGrant!.id))?.file_paths, ["plugins/Essentials/**"]);

    const managed = await findServerAccess(query(), admin.userId, serverId);
    assert.equal(fileAccessOf({ row: managed! }).everywhere, true);
    // A grant without paths reaches every file.
    const open = await newServer("Open");
    await grantFiles(open, []);
    const openRow = await findServerAccess(query(), member.userId, open);
    assert.equal(fileAccessOf({ row: openRow!, grant: openRow!.grant! }).everywhere, true);
  });

  it("refuses paths that are not selectors, naming each on constraints, and writes nothing", async () => {
    const serverId = await newServer("Refused");
    const refused = await rejectsWith(grantFiles(serverId, ["plugins", "/etc/passwd", "../world", "a\\b"]), Code.InvalidArgument, "invalid_argument");
    assert.deepEqual(violations(refused), [
      `constraints: file_paths[1] "/etc/passwd" must be relative to the server's directory, without a leading /`,
      `constraints: file_paths[2] "../world" has a "." or ".." segment`,
      `constraints: file_paths[3] "a\\\\b" holds a backslash; separate folders with /`,
    ]);
    await rejectsWith(
      orgs(member).createAccessRequest({ organizationSlug: "acme", serverId, actions: [ServerAction.FILES_READ], constraints: { filePaths: ["plugins//x"] } }),
      Code.InvalidArgument,
      "invalid_argument",
    );
    const fileRequest = await rejectsWith(askFiles(serverId, "plugins/ok", "./x"), Code.InvalidArgument, "invalid_argument");
    assert.deepEqual(violations(fileRequest), [`secondary_path: "./x" has a "." or ".." segment`]);

    assert.deepEqual((await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId })).accessGrants, []);
    assert.deepEqual((await orgs(owner).listAccessRequests({ organizationSlug: "acme", serverId })).accessRequests, []);
    const { events } = await t.client(ActivityService, { session: owner.token }).listOrganizationActivity({ organizationSlug: "acme", serverId });
    assert.deepEqual(
      events.filter((e) => e.action.startsWith("access_")),
      [],
    );
  });

  it("lets an approval narrow the paths asked for, and refuses one that widens or drops them", async () => {
    const serverId = await newServer("Narrowed");
    const { accessRequest } = await orgs(member).createAccessRequest({
      organizationSlug: "acme",
      serverId,
      actions: [ServerAction.FILES_WRITE],
      constraints: { filePaths: ["plugins/Essentials", "config/*.yml"] },
    });
    assert.deepEqual(accessRequest!.constraints?.filePaths, ["plugins/Essentials", "config/*.yml"]);
    const requestId = accessRequest!.id;
    const widen = async (filePaths: string[], message: RegExp) => {
      const error = await rejectsWith(
        orgs(owner).approveAccessRequest({ organizationSlug: "acme", requestId, constraints: { filePaths } }),
        Code.InvalidArgument,
        "invalid_argument",
      );
      assert.match(error.rawMessage, message);
    };
    await widen(["plugins"], /the file path "plugins" is not within one the request asked for \(plugins\/Essentials, config\/\*\.yml\)/);
    await widen(["plugins/EssentialsX"], /"plugins\/EssentialsX" is not within/);
    await widen(["config/**"], /"config\/\*\*" is not within/);
    await widen([], /asked for files at plugins\/Essentials, config\/\*\.yml only/);
    assert.equal((await orgs(owner).listAccessRequests({ organizationSlug: "acme", serverId })).accessRequests[0].status, AccessRequestStatus.PENDING);

    const { accessGrant } = await orgs(owner).approveAccessRequest({
      organizationSlug: "acme",
      requestId,
      actions: [ServerAction.FILES_READ],
      constraints: { filePaths: ["plugins/Essentials/userdata/**", "config/*.yml"] },
    });
    assert.deepEqual(accessGrant!.actions, [ServerAction.VIEW, ServerAction.FILES_READ]);
    assert.deepEqual(accessGrant!.constraints?.filePaths, ["plugins/Essentials/userdata/**", "config/*.yml"]);

    // Without constraints the approval keeps the paths as asked; a request for everywhere may be narrowed to any.
    const other = await newServer("Kept");
    const kept = (await askFiles(other, "world/datapacks")).accessRequest!;
    const approved = await orgs(admin).approveAccessRequest({ organizationSlug: "acme", requestId: kept.id });
    assert.deepEqual(approved.accessGrant!.constraints?.filePaths, ["world/datapacks"]);
    const anywhere = await newServer("Anywhere");
    const open = (await orgs(member).createAccessRequest({ organizationSlug: "acme", serverId: anywhere, actions: [ServerAction.FILES_READ] })).accessRequest!;
    const narrowed = await orgs(admin).approveAccessRequest({ organizationSlug: "acme", requestId: open.id, constraints: { filePaths: ["logs"] } });
    assert.deepEqual(narrowed.accessGrant!.constraints?.filePaths, ["logs"]);
  });

  it("files a member's servers/createFileAccessRequest as a pending access request, telling the managers", async () => {
    const serverId = await newServer("Asked for files");
    const { accessRequest } = await askFiles(serverId, "plugins/Essentials/", "plugins/EssentialsX.jar");
    assert.equal(accessRequest!.status, AccessRequestStatus.PENDING);
    assert.equal(accessRequest!.userId, member.userId);
    assert.deepEqual(accessRequest!.actions, [ServerAction.VIEW, ServerAction.FILES_READ, ServerAction.FILES_WRITE]);
    assert.deepEqual(accessRequest!.constraints?.filePaths, ["plugins/Essentials", "plugins/EssentialsX.jar"]);
    assert.equal(accessRequest!.reason, "updating Essentials");

    const listed = await orgs(owner).listAccessRequests({ organizationSlug: "acme", serverId });
    assert.deepEqual(
      listed.accessRequests.map((r) => [r.id, r.constraints?.filePaths]),
      [[accessRequest!.id, ["plugins/Essentials", "plugins/EssentialsX.jar"]]],
    );
    const own = await orgs(member).listAccessRequests({ organizationSlug: "acme", serverId });
    assert.deepEqual(
      own.accessRequests.map((r) => r.id),
      [accessRequest!.id],
    );
    const [note] = (await t.client(NotificationsService, { session: admin.token }).listNotifications({})).notifications;
    assert.match(note.title, /member@example\.com asks for access to Asked for files/);
    assert.match(note.body, /Files: plugins\/Essentials, plugins\/EssentialsX\.jar\./);

    // The rules of any access request: one pending per server, members only, the organization's servers only.
    await rejectsWith(askFiles(serverId, "logs"), Code.AlreadyExists, "request_pending");
    await rejectsWith(askFiles(serverId, "logs", undefined, admin), Code.FailedPrecondition, "failed_precondition");
    await rejectsWith(askFiles(serverId, "logs", undefined, outsider), Code.NotFound, "not_found");
    await rejectsWith(
      servers(member).createFileAccessRequest({ serverId, organizationSlug: "elsewhere", actions: [ServerAction.FILES_READ], primaryPath: "logs", reason: "" }),
      Code.NotFound,
      "not_found",
    );
    // Only the file actions may be asked for here.
    await rejectsWith(
      servers(member).createFileAccessRequest({ serverId, actions: [ServerAction.CONSOLE_COMMAND], primaryPath: "logs", reason: "" }),
      Code.InvalidArgument,
    );
  });
});
