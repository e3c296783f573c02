import assert from "node:assert/strict";
import { KnowledgeService, type NoteSummary } from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";
import { searchNotes } from "../../core/knowledge/search.ts";

/**
 * Full-text search, ranking, snippets, filters and both cursors. Run on a PostgreSQL server
 * (DATABASE_URL) and on the embedded database (without it): the same SQL must answer the same.
 */
describe("knowledge: search", () => {
  let t: TestCore;
  let cast: AcmeCast;
  let survival: string;
  const acme = { organizationSlug: "acme" };
  const api = () => t.client(KnowledgeService, { session: cast.owner.token });
  const create = async (title: string, content: string, extra: object = {}) => (await api().createNote({ ...acme, spec: { title, content, tags: [], ...extra } })).note!;
  const titles = (notes: NoteSummary[]) => notes.map((n) => n.note!.spec!.title);

  before(async () => {
    t = await startTestCore({ ...testConfig, plans: { ...testConfig.plans, free: { ...testConfig.plans.free, notes: 200 } } });
    cast = await acmeWithMembers(t);
    survival = (await t.client(ServersService, { session: cast.owner.token }).createServer({ ...acme, name: "Survival", game: Game.MINECRAFT })).server!.id;
  });
  after(async () => {
    await t?.close();
  });

  it("ranks a note with the words in its title above one that mentions them once in its content, with marked snippets", async () => {
    const body = await create("Weekly chores", "Check the disks. Then rotate the whitelist backup, and write down what changed.");
    const title = await create("Whitelist backup", "Copy the file somewhere safe.");
    await create("Unrelated", "Nothing to see here.");
    const { notes } = await api().listNotes({ ...acme, search: "whitelist backups" });
    assert.deepEqual(titles(notes), ["Whitelist backup", "Weekly chores"], "stemmed: backups finds backup");
    assert.ok(notes[0].rank > notes[1].rank, `${notes[0].rank} > ${notes[1].rank}`);
    const marked = notes[1].snippet.filter((p) => p.match).map((p) => p.text.toLowerCase());
    assert.deepEqual(marked, ["whitelist", "backup"]);
    assert.match(notes[1].snippet.map((p) => p.text).join(""), /rotate the whitelist backup/);
    assert.ok(notes[0].snippet.length > 0, "a title match still shows the start of the content");
    assert.equal(notes[0].note!.spec!.content, "", "lists leave the content out");
    for (const n of [body, title]) assert.ok(notes.some((s) => s.note!.id === n.id));
  });

  it("reads websearch syntax: phrases, exclusions, and text that is no query at all", async () => {
    await create("Map reset", "Reset the nether map monthly.");
    await create("Player reset", "Reset a player's inventory on request.");
    assert.deepEqual(titles((await api().listNotes({ ...acme, search: '"nether map"' })).notes), ["Map reset"]);
    assert.deepEqual(titles((await api().listNotes({ ...acme, search: "reset -nether" })).notes), ["Player reset"]);
    assert.deepEqual((await api().listNotes({ ...acme, search: "the" })).notes, [], "stop words alone find nothing");
    assert.deepEqual((await api().listNotes({ ...acme, search: '"unbalanced & | ! ( :*' })).notes, []);
    assert.ok((await api().listNotes({ ...acme, search: "   " })).notes.length > 0, "blank is no search");
  });

  it("filters by tag (as typed, normalized) and by server, with and without search", async () => {
    const tagged = await create("Tagged restart", "restart steps", { tags: ["Ops"], serverId: survival });
    await create("Untagged restart", "restart steps");
    const ids = (notes: NoteSummary[]) => notes.map((n) => n.note!.id);
    assert.deepEqual(ids((await api().listNotes({ ...acme, tag: " OPS " })).notes), [tagged.id]);
    assert.deepEqual(ids((await api().listNotes({ ...acme, tag: "ops", search: "restart" })).notes), [tagged.id]);
    assert.deepEqual(ids((await api().listNotes({ ...acme, serverId: survival, search: "restart" })).notes), [tagged.id]);
    assert.deepEqual(ids((await api().listNotes({ ...acme, serverId: survival })).notes), [tagged.id]);
    assert.deepEqual((await api().listNotes({ ...acme, tag: "nothing" })).notes, []);
    assert.deepEqual(titles((await api().listNotes({ ...acme, search: "ops" })).notes), ["Tagged restart"], "tags are searched too");
  });

  it("pages both orders with cursors, without duplicates or gaps, while notes are added", async () => {
    for (let i = 0; i < 23; i++) {
      // Mentions vary, so ranks vary and some tie: the cursor must hold both rank and id.
      await create(`Paging ${i}`, `lantern ${"lantern ".repeat(i % 4)}end`);
    }
    for (const search of [undefined, "lantern"]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await api().listNotes({ ...acme, search, limit: 5, cursor });
        seen.push(...page.notes.map((n) => n.note!.id));
        cursor = page.nextCursor || undefined;
        if (pages++ === 1) await create("Paging late", "lantern lantern lantern lantern lantern");
      } while (cursor);
      assert.equal(new Set(seen).size, seen.length, `no duplicates (${search ?? "newest first"})`);
      const all = (await api().listNotes({ ...acme, search, limit: 100 })).notes.map((n) => n.note!.id);
      const missing = all.filter((id) => !seen.includes(id));
      assert.ok(missing.length <= 1, `no gaps apart from the note added meanwhile (${search ?? "newest first"}): ${missing.length}`);
      if (search) {
        const ranks = (await api().listNotes({ ...acme, search, limit: 100 })).notes.map((n) => n.rank);
        assert.deepEqual(
          ranks,
          [...ranks].sort((a, b) => b - a),
          "best first",
        );
      }
    }
  });

  it("searchNotes, for core's other callers, sees only the servers it is given", async () => {
    const organizationId = (await api().listNotes({ ...acme, limit: 1 })).notes[0].note!.organizationId;
    const query = t.deps.statements.on(t.orm.em.fork());
    const all = await searchNotes(query, { organizationId, visible: null, text: "restart", limit: 10 });
    const none = await searchNotes(query, { organizationId, visible: [], text: "restart", limit: 10 });
    assert.deepEqual(all.map((h) => h.title).sort(), ["Tagged restart", "Untagged restart"]);
    assert.deepEqual(
      none.map((h) => h.title),
      ["Untagged restart"],
    );
  });
});
