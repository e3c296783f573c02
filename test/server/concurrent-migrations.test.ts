/**
 * Instances that start together on a new database (a rolling upgrade, `docker compose up`) take
 * turns migrating it: one applies the migrations, the others find nothing left to do. Only a
 * PostgreSQL server has several instances (one process serves an embedded database).
 */
import assert from "node:assert/strict";
import { createOrm, migrate, type Orm } from "../../core/db/orm.ts";
import { migrations } from "../../core/db/migrations/index.ts";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";

onPostgresServer(() =>
  describe("migrations from instances starting together", function () {
    let database: TestDatabase;
    let orms: Orm[] = [];

    beforeEach(async () => {
      database = await createTestDatabase();
      orms = [];
    });
    afterEach(async () => {
      await Promise.all(orms.map((orm) => orm.close()));
      await database.drop();
    });

    it("applies each migration once, and no instance fails", async () => {
      orms = await Promise.all([1, 2, 3].map(() => createOrm({ url: database.url, poolSize: 2 })));
      const applied = await Promise.all(orms.map((orm) => migrate(orm)));
      assert.deepEqual(
        applied.map((names) => names.length).sort((a, b) => a - b),
        [0, 0, migrations.length],
      );
      assert.deepEqual(
        applied.flat(),
        migrations.map((m) => m.name),
      );
    });
  }),
);
