import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { scriptInOrganization, type HttpApi } from "../support/http-api.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The knowledge router through /api/http: plain JSON in and out, statuses from the error table. */
describe("http api: knowledge", () => {
  let t: TestOutpost;
  let api: HttpApi;

  before(async () => {
    t = await startTestOutpost();
    ({ api } = await scriptInOrganization(t, "Olive Owner"));
  });
  after(async () => {
    await t?.close();
  });

  it("creates, searches, updates with a version (a stale one is 409) and deletes a note", async () => {
    const made = await api("POST", "knowledge/createNote", {
      organizationSlug: "acme",
      spec: { title: "Whitelist backup", content: "Copy **whitelist.json**.", tags: ["Ops"] },
    });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const note = made.body.note;
    assert.deepEqual(note.spec.tags, ["ops"]);
    assert.equal(note.version, 1);
    assert.equal(note.author.name, "Olive Owner");

    const found = await api("GET", "knowledge/listNotes?organizationSlug=acme&search=backups&tag=ops&limit=5");
    assert.equal(found.status, 200, JSON.stringify(found.body));
    assert.equal(found.body.notes.length, 1);
    assert.equal(found.body.notes[0].note.id, note.id);
    assert.ok(found.body.notes[0].rank > 0);
    assert.ok(Array.isArray(found.body.notes[0].snippet));
    assert.equal(found.body.nextCursor, "");

    const got = await api("GET", `knowledge/getNote?organizationSlug=acme&noteId=${note.id}`);
    assert.equal(got.body.note.spec.content, "Copy **whitelist.json**.");

    const spec = { title: "Whitelist backups", content: "Copy it.", tags: [] };
    const updated = await api("POST", "knowledge/updateNote", { organizationSlug: "acme", noteId: note.id, version: 1, spec });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.note.version, 2);
    const stale = await api("POST", "knowledge/updateNote", { organizationSlug: "acme", noteId: note.id, version: 1, spec });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, "aborted");
    assert.match(stale.body.message, /version 1 was read/);

    const bad = await api("POST", "knowledge/createNote", { organizationSlug: "acme", spec: { title: "", content: "", tags: ["no spaces allowed"] } });
    assert.equal(bad.status, 400);
    const badTag = await api("POST", "knowledge/createNote", { organizationSlug: "acme", spec: { title: "T", content: "", tags: ["no spaces allowed"] } });
    assert.equal(badTag.status, 400);
    assert.match(badTag.body.message, /spec\.tags\[0\]/);
    assert.equal((await api("GET", "knowledge/listNotes?organizationSlug=acme&cursor=nonsense")).status, 400);
    // A search cursor of the right shape whose rank PostgreSQL's real cannot hold is still the caller's mistake.
    for (const rank of ["1e39", "-1e39", "1e-50", "1e308"]) {
      const cursor = Buffer.from(`s${rank}.00000000-0000-4000-8000-000000000000`).toString("base64url");
      const tampered = await api("GET", `knowledge/listNotes?organizationSlug=acme&search=runbook&cursor=${cursor}`);
      assert.equal(tampered.status, 400, `${rank}: ${JSON.stringify(tampered.body)}`);
      assert.match(tampered.body.message, /cursor/);
    }

    assert.equal((await api("POST", "knowledge/deleteNote", { organizationSlug: "acme", noteId: note.id })).status, 200);
    assert.equal((await api("GET", `knowledge/getNote?organizationSlug=acme&noteId=${note.id}`)).status, 404);
  });

  it("takes a note of 100,000 characters (larger than other bodies), and refuses one more", async () => {
    const content = "🙂".repeat(100_000);
    const made = await api("POST", "knowledge/createNote", { organizationSlug: "acme", spec: { title: "Long", content, tags: [] } });
    assert.equal(made.status, 200, JSON.stringify(made.body).slice(0, 300));
    const got = await api("GET", `knowledge/getNote?organizationSlug=acme&noteId=${made.body.note.id}`);
    assert.equal(got.body.note.spec.content, content);
    const over = await api("POST", "knowledge/createNote", { organizationSlug: "acme", spec: { title: "Long", content: `${content}x`, tags: [] } });
    assert.equal(over.status, 400);
    const elsewhere = await api("POST", "organizations/createOrganization", { name: "x".repeat(70 * 1024), slug: "big" });
    assert.equal(elsewhere.status, 413, "other routes keep the 64 KiB limit");
    await api("POST", "knowledge/deleteNote", { organizationSlug: "acme", noteId: made.body.note.id });
  });

  it("describes the procedures in the OpenAPI document", async () => {
    const doc = (await (await fetch(`${t.baseUrl}/api/http/openapi.json`)).json()) as Json;
    assert.ok(doc.paths["/api/http/knowledge/listNotes"].get);
    assert.ok(doc.paths["/api/http/knowledge/getNote"].get);
    for (const name of ["createNote", "updateNote", "deleteNote"]) assert.ok(doc.paths[`/api/http/knowledge/${name}`].post, name);
    const params = doc.paths["/api/http/knowledge/listNotes"].get.parameters.map((p: Json) => p.name);
    for (const name of ["organizationSlug", "search", "tag", "serverId", "limit", "cursor"]) assert.ok(params.includes(name), name);
  });
});
