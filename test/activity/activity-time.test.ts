/** When an activity event happened: the database's clock, to the millisecond (see activity.test.ts for the log itself). */
import assert from "node:assert/strict";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { appendActivity } from "../../core/activity/record.ts";
import { startTestCore, type TestCore } from "../support/core.ts";

describe("activity: the time of an event", () => {
  let t: TestCore;
  let owner: { token: string; userId: string; email: string };
  let organizationId: string;
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);
  before(async () => {
    t = await startTestCore();
    owner = await t.signUp("owner@example.com");
    organizationId = (await t.client(OrganizationsService, { session: owner.token }).createOrganization({ name: "Acme", slug: "acme" })).organization!.id;
  });
  after(() => t?.close());

  it("is the database's clock, not this process's: an event written while the local clock is an hour ahead is stamped now", async () => {
    const RealDate = Date;
    // The embedded database runs inside this process and reads this same clock: there the two cannot differ.
    const skew = t.database.kind === "postgres" ? 3_600_000 : 0;
    // This process's clock, an hour fast: every `new Date()` and `Date.now()` in it.
    class FastDate extends RealDate {
      constructor(...args: ConstructorParameters<typeof Date> | []) {
        if (args.length === 0) super(RealDate.now() + skew);
        else super(...(args as ConstructorParameters<typeof Date>));
      }
      static override now() {
        return RealDate.now() + skew;
      }
    }
    globalThis.Date = FastDate as DateConstructor;
    let serverId: string;
    let keyId: string;
    try {
      // Events through the unit of work (recordActivity), and one in a statement of its own (appendActivity).
      serverId = (await t.client(ServersService, { session: owner.token }).createServer({ organizationSlug: "acme", name: "Clockwork", game: Game.MINECRAFT })).server!
        .id;
      keyId = (await t.client(AuthService, { session: owner.token }).createApiKey({ name: "clock" })).apiKey!.id;
      await appendActivity(t.deps.statements.on(t.orm.em.fork()), "system", {
        action: "server.console_command",
        targetType: "server",
        targetId: serverId,
        organizationId,
      });
    } finally {
      globalThis.Date = RealDate;
    }
    const rows = await sql(
      `select action, extract(epoch from (now() - created_at)) as behind, extract(epoch from created_at - date_trunc('milliseconds', created_at)) as sub_ms
         from activity_events where target_id in (?, ?)`,
      [serverId, keyId],
    );
    assert.equal(rows.length, 3);
    for (const row of rows) {
      assert.ok(Math.abs(Number(row.behind)) < 60, `${row.action} is stamped ${row.behind} s from the database's now`);
      assert.equal(Number(row.sub_ms), 0, "to the millisecond, as page cursors carry it");
    }
  });
});
