import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { KnowledgeService } from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { ActivityKind, ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { acmeWithMembers, type AcmeCast, type Account } from "../support/fixtures.ts";
import { allActions } from "../support/grants.ts";

/** Notes: who reads and writes them, optimistic updates, validation, the plan limit and server visibility. */
describe("knowledge: notes", () => {
  let t: TestCore;
  let cast: AcmeCast;
  let survival: string;
  let creative: string;
  const api = (who: Account) => t.client(KnowledgeService, { session: who.token });
  const acme = { organizationSlug: "acme" };
  const spec = (extra: object = {}) => ({ title: "Restarting", content: "Stop, then start.", tags: [], ...extra });

  before(async () => {
    t = await startTestCore(testConfig);
    cast = await acmeWithMembers(t);
    const servers = t.client(ServersService, { session: cast.owner.token });
    survival = (await servers.createServer({ ...acme, name: "Survival", game: Game.MINECRAFT })).server!.id;
    creative = (await servers.createServer({ ...acme, name: "Creative", game: Game.MINECRAFT })).server!.id;
    await t
      .client(OrganizationsService, { session: cast.owner.token })
      .createAccessGrant({ ...acme, userId: cast.member.userId, serverId: survival, actions: allActions });
  });
  after(async () => {
    await t?.close();
  });

  it("lets owners and admins create, update and delete notes that members read, each change an activity event", async () => {
    const { note } = await api(cast.admin).createNote({ ...acme, spec: spec({ tags: [" Ops ", "ops", "backups"], serverId: survival }) });
    assert.ok(note);
    assert.equal(note.version, 1);
    assert.deepEqual(note.spec!.tags, ["backups", "ops"], "trimmed, lower-cased, deduplicated and sorted");
    assert.equal(note.spec!.serverId, survival);
    assert.equal(note.author!.userId, cast.admin.userId);
    assert.ok(note.author!.name, "the author's display name");

    const read = await api(cast.member).getNote({ ...acme, noteId: note.id });
    assert.equal(read.note!.spec!.content, "Stop, then start.");
    const listed = await api(cast.member).listNotes(acme);
    assert.deepEqual(
      listed.notes.map((n) => n.note!.id),
      [note.id],
    );
    assert.equal(listed.notes[0].note!.spec!.content, "", "lists leave the content out");

    const updated = await api(cast.owner).updateNote({ ...acme, noteId: note.id, version: 1, spec: spec({ title: "Restarting safely" }) });
    assert.equal(updated.note!.version, 2);
    assert.equal(updated.note!.spec!.serverId, undefined, "every field is replaced");
    assert.equal(updated.note!.author!.userId, cast.admin.userId);
    assert.equal(updated.note!.updatedBy!.userId, cast.owner.userId);

    await api(cast.owner).deleteNote({ ...acme, noteId: note.id });
    await rejectsWith(api(cast.owner).getNote({ ...acme, noteId: note.id }), Code.NotFound, "not_found");
    await rejectsWith(api(cast.owner).deleteNote({ ...acme, noteId: note.id }), Code.NotFound, "not_found");
    const { events } = await t.client(ActivityService, { session: cast.owner.token }).listOrganizationActivity({ ...acme, action: "knowledge" });
    assert.deepEqual(
      events.map((e) => e.action),
      ["knowledge.note_deleted", "knowledge.note_updated", "knowledge.note_created"],
    );
    assert.ok(events.every((e) => e.kind === ActivityKind.CONFIGURATION));
    assert.equal(events[2].details.title, "Restarting");
  });

  it("refuses members' writes (403) and outsiders' reads (404)", async () => {
    const { note } = await api(cast.owner).createNote({ ...acme, spec: spec() });
    await rejectsWith(api(cast.member).createNote({ ...acme, spec: spec() }), Code.PermissionDenied, "permission_denied");
    await rejectsWith(api(cast.member).updateNote({ ...acme, noteId: note!.id, version: 1, spec: spec() }), Code.PermissionDenied);
    await rejectsWith(api(cast.member).deleteNote({ ...acme, noteId: note!.id }), Code.PermissionDenied);
    await rejectsWith(api(cast.outsider).getNote({ ...acme, noteId: note!.id }), Code.NotFound);
    await rejectsWith(api(cast.outsider).getNote({ organizationSlug: "elsewhere", noteId: note!.id }), Code.NotFound, "not_found");
    await api(cast.owner).deleteNote({ ...acme, noteId: note!.id });
  });

  it("lets one of two updates from the same version win; the other is version_conflict (409) and changes nothing", async () => {
    const { note } = await api(cast.owner).createNote({ ...acme, spec: spec() });
    const id = note!.id;
    const results = await Promise.allSettled([
      api(cast.owner).updateNote({ ...acme, noteId: id, version: 1, spec: spec({ title: "From the owner" }) }),
      api(cast.admin).updateNote({ ...acme, noteId: id, version: 1, spec: spec({ title: "From the admin" }) }),
    ]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r) => r.status === "rejected");
    assert.equal(won.length, 1);
    assert.equal(lost.length, 1);
    const conflict = await rejectsWith(Promise.reject((lost[0] as PromiseRejectedResult).reason), Code.Aborted, "version_conflict");
    assert.match(conflict.message, /version 1 was read \(it is at version 2\)/);
    const current = (await api(cast.owner).getNote({ ...acme, noteId: id })).note!;
    assert.equal(current.version, 2);
    assert.equal(current.spec!.title, (won[0] as PromiseFulfilledResult<{ note?: { spec?: { title: string } } }>).value.note!.spec!.title);
    await rejectsWith(api(cast.owner).updateNote({ ...acme, noteId: id, version: 1, spec: spec() }), Code.Aborted, "version_conflict");
    await rejectsWith(api(cast.owner).updateNote({ ...acme, noteId: "00000000-0000-4000-8000-000000000000", version: 1, spec: spec() }), Code.NotFound);
    const { events } = await t.client(ActivityService, { session: cast.owner.token }).listOrganizationActivity({ ...acme, action: "knowledge.note_updated" });
    assert.equal(events.filter((e) => e.targetId === id).length, 1, "the refused update left no event");
    await api(cast.owner).deleteNote({ ...acme, noteId: id });
  });

  it("refuses bad input with invalid_argument naming the field, writing nothing", async () => {
    const bad = async (s: object, field: string) => {
      const error = await rejectsWith(api(cast.owner).createNote({ ...acme, spec: spec(s) }), Code.InvalidArgument);
      const [violations] = error.findDetails(ViolationsSchema);
      const names = violations.violations.map((v) => v.field?.elements.map((e) => e.fieldName).join("."));
      assert.ok(names.includes(field), `${field} in ${names.join(", ")}`);
    };
    await bad({ title: "" }, "spec.title");
    await bad({ title: "x".repeat(201) }, "spec.title");
    await bad({ title: "bell\u0007" }, "spec.title");
    await bad({ content: "x".repeat(100_001) }, "spec.content");
    await bad({ content: "marker \u0002 inside" }, "spec.content");
    await bad({ tags: ["has space"] }, "spec.tags");
    await bad({ tags: ["x".repeat(33)] }, "spec.tags");
    await bad({ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, "spec.tags");
    await bad({ serverId: "not-a-uuid" }, "spec.server_id");
    await bad({ serverId: "00000000-0000-4000-8000-000000000000" }, "spec.server_id");
    await rejectsWith(api(cast.owner).listNotes({ ...acme, search: "x".repeat(201) }), Code.InvalidArgument);
    await rejectsWith(api(cast.owner).listNotes({ ...acme, limit: 101 }), Code.InvalidArgument);
    await rejectsWith(api(cast.owner).listNotes({ ...acme, cursor: "garbage" }), Code.InvalidArgument);
    await rejectsWith(api(cast.owner).listNotes({ ...acme, search: "x", cursor: "garbage" }), Code.InvalidArgument);
    await rejectsWith(api(cast.owner).updateNote({ ...acme, noteId: "00000000-0000-4000-8000-000000000000", version: 0, spec: spec() }), Code.InvalidArgument);
    assert.equal((await api(cast.owner).listNotes(acme)).notes.length, 0, "nothing was written");
    const accepted = await api(cast.owner).createNote({ ...acme, spec: spec({ content: "tabs\tand\r\nline breaks", tags: ["a-1"] }) });
    await api(cast.owner).deleteNote({ ...acme, noteId: accepted.note!.id });
  });

  it("shows a member only the notes about no server and about servers granted to them", async () => {
    const general = (await api(cast.owner).createNote({ ...acme, spec: spec({ title: "General restarts" }) })).note!;
    const mine = (await api(cast.owner).createNote({ ...acme, spec: spec({ title: "Survival restarts", serverId: survival }) })).note!;
    const hidden = (await api(cast.owner).createNote({ ...acme, spec: spec({ title: "Creative restarts", serverId: creative }) })).note!;
    const ids = async (who: Account, extra: object = {}) => (await api(who).listNotes({ ...acme, ...extra })).notes.map((n) => n.note!.id).sort();
    assert.deepEqual(await ids(cast.member), [general.id, mine.id].sort());
    assert.deepEqual(await ids(cast.member, { search: "restarts" }), [general.id, mine.id].sort());
    assert.deepEqual(await ids(cast.member, { serverId: creative }), []);
    assert.deepEqual(await ids(cast.admin), [general.id, mine.id, hidden.id].sort());
    await rejectsWith(api(cast.member).getNote({ ...acme, noteId: hidden.id }), Code.NotFound, "not_found");
    // A deleted server leaves its notes about no server, for owners and admins only: what members
    // read never widens. Saved about a server again, a note is that server's again.
    await t.client(ServersService, { session: cast.owner.token }).deleteServer({ serverId: creative });
    await rejectsWith(api(cast.member).getNote({ ...acme, noteId: hidden.id }), Code.NotFound, "not_found");
    assert.deepEqual(await ids(cast.member, { search: "restarts" }), [general.id, mine.id].sort());
    const kept = (await api(cast.admin).getNote({ ...acme, noteId: hidden.id })).note!;
    assert.deepEqual([kept.spec!.serverId, kept.managersOnly], [undefined, true]);
    const edited = await api(cast.admin).updateNote({ ...acme, noteId: hidden.id, version: kept.version, spec: { ...kept.spec!, title: "Creative restarts (old)" } });
    assert.equal(edited.note!.managersOnly, true, "an edit that names no server keeps it to managers");
    const moved = await api(cast.admin).updateNote({ ...acme, noteId: hidden.id, version: edited.note!.version, spec: { ...edited.note!.spec!, serverId: survival } });
    assert.equal(moved.note!.managersOnly, false);
    assert.equal((await api(cast.member).getNote({ ...acme, noteId: hidden.id })).note!.spec!.serverId, survival);
    for (const n of [general, mine, hidden]) await api(cast.owner).deleteNote({ ...acme, noteId: n.id });
  });

  it("refuses a note past the plan's limit with plan_limit_reached (409), counted one creation at a time", async () => {
    const elsewhere = { organizationSlug: "elsewhere" };
    const limit = testConfig.plans.free.notes;
    const results = await Promise.allSettled(
      Array.from({ length: limit + 3 }, (_, i) => api(cast.outsider).createNote({ ...elsewhere, spec: spec({ title: `Note ${i}` }) })),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, limit);
    const refused = await rejectsWith(api(cast.outsider).createNote({ ...elsewhere, spec: spec() }), Code.FailedPrecondition, "plan_limit_reached");
    assert.match(refused.message, new RegExp(`allows ${limit} notes`));
    const { notes } = await api(cast.outsider).listNotes({ ...elsewhere, limit: 100 });
    assert.equal(notes.length, limit);
    const { usage } = await t.client(OrganizationsService, { session: cast.outsider.token }).getOrganization(elsewhere);
    assert.deepEqual([usage?.notes, usage?.noteLimit], [limit, limit], "the organization's overview counts them against the plan");
    await api(cast.outsider).deleteNote({ ...elsewhere, noteId: notes[0].note!.id });
    await api(cast.outsider).createNote({ ...elsewhere, spec: spec() });
  });
});
