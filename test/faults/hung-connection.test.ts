/**
 * A database connection that hangs (a network that drops packets without a reset, so nothing
 * ends the connection for hours): the gathered credential lookups, which many calls share, fail
 * as unavailable once their statement has had no answer for its timeout, never hang, and the hung
 * connection leaves the pool, so lookups work again as soon as the database answers.
 */
import assert from "node:assert/strict";
import { hashSecret } from "../../contract/secrets.ts";
import { createCredentialReads } from "../../core/auth/credential-reads.ts";
import { createStatements } from "../../core/db/statements.ts";
import { createOrm, migrate, type Orm } from "../../core/db/orm.ts";
import { isDatabaseUnavailable } from "../../core/db/unavailable.ts";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";

onPostgresServer(() =>
  describe("faults: a database connection hangs under the credential lookups", function () {
    this.timeout(60_000);
    let db: TestDatabase;
    let proxy: TcpProxy;
    let orm: Orm;
    before(async () => {
      db = await createTestDatabase();
      const direct = await createOrm({ url: db.url, poolSize: 1 });
      await migrate(direct);
      await direct.close();
      proxy = await startTcpProxy(db.url);
      orm = await createOrm({ url: proxy.url, poolSize: 4 });
    });
    after(async () => {
      await orm?.close();
      await proxy?.close();
      await db?.drop();
    });

    it("fails the lookups of a statement with no answer as unavailable, drops its connection, and looks up again once the database answers", async () => {
      const reads = createCredentialReads(createStatements(true), orm.em.fork(), { stallMs: 50, timeoutMs: 300 });
      const lookup = { hash: hashSecret("ops_not-a-session") };
      assert.equal(await reads.session(lookup), undefined, "answered while the connection works");
      const connections = proxy.accepted;

      proxy.stall();
      // One statement goes on the open connection, which hangs; the others on new ones, which
      // cannot even connect while the network is down (the pool gives up on that after 5 s).
      const hung = [reads.session(lookup), reads.apiKey(lookup), reads.session({ hash: hashSecret("ops_another") })];
      const answers = await Promise.allSettled(hung);
      for (const answer of answers) {
        assert.equal(answer.status, "rejected");
        assert.ok(isDatabaseUnavailable(answer.reason), `answered unavailable (503 with Retry-After), not internal: ${String(answer.reason)}`);
      }
      const reasons = answers.map((answer) => String((answer as PromiseRejectedResult).reason));
      assert.ok(reasons.some((reason) => /Query read timeout/.test(reason)), `the statement on the hung connection timed out: ${reasons.join("; ")}`);
      proxy.resume();

      assert.equal(await reads.session(lookup), undefined, "answered again");
      assert.ok(proxy.accepted > connections, "on a new connection: the hung ones left the pool");
    });
  }),
);
