/**
 * A database connection that hangs (a network that drops packets without a reset, so nothing
 * ends the connection for hours): the gathered credential lookups, which many calls share, fail
 * as unavailable once their statement has had no answer for its timeout, never hang, and the hung
 * connection leaves the pool, so lookups work again as soon as the database answers.
 */
import assert from "node:assert/strict";
import { issueSecret } from "../../contract/secrets.ts";
import { TestClock } from "../support/core.ts";
import { createCredentialStore } from "../../core/auth/credential-store.ts";
import { createStatements } from "../../core/db/sql.ts";
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
      const store = createCredentialStore(
        { statements: createStatements(true), em: orm.em.fork(), clock: new TestClock(), sessionIdleSeconds: 3600 },
        { stallMs: 50, timeoutMs: 300 },
      );
      // Well-formed credentials that no one holds: each is looked up, and found to be no one's.
      const [token, another, key] = [issueSecret("session").value, issueSecret("session").value, issueSecret("apiKey").value];
      const lookup = (session: string) => store.user({ session, apiKey: null });
      assert.equal(await lookup(token), null, "answered while the connection works");
      const connections = proxy.accepted;

      proxy.stall();
      // One statement goes on the open connection, which hangs; the others on new ones, which
      // cannot even connect while the network is down (the pool gives up on that after 5 s).
      const hung = [lookup(token), store.user({ session: null, apiKey: key }), lookup(another)];
      const answers = await Promise.allSettled(hung);
      for (const answer of answers) {
        assert.equal(answer.status, "rejected");
        assert.ok(isDatabaseUnavailable(answer.reason), `answered unavailable (503 with Retry-After), not internal: ${String(answer.reason)}`);
      }
      const reasons = answers.map((answer) => String((answer as PromiseRejectedResult).reason));
      assert.ok(
        reasons.some((reason) => /Query read timeout/.test(reason)),
        `the statement on the hung connection timed out: ${reasons.join("; ")}`,
      );
      proxy.resume();

      assert.equal(await lookup(token), null, "answered again");
      assert.ok(proxy.accepted > connections, "on a new connection: the hung ones left the pool");
    });
  }),
);
