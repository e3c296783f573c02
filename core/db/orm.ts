import pg from "pg";
import { MikroORM, type Options } from "@mikro-orm/postgresql";
import { Migrator } from "@mikro-orm/migrations";
import { entities as accountEntities } from "./entities.ts";
import { gameOAuthEntities } from "./game-oauth-entities.ts";
import { gameOAuthFlowEntities } from "./game-oauth-flow-entities.ts";
import { signingKeyEntities } from "./signing-key-entities.ts";
import { accountOAuthEntities } from "./account-oauth-entities.ts";
import { integrationEntities } from "./integration-entities.ts";
import { alertEntities } from "./alert-entities.ts";
import { accessRequestEntities } from "./access-request-entities.ts";
import { invitationEntities } from "./invitation-entities.ts";
import { migrations } from "./migrations/index.ts";

export interface DatabaseOptions {
  /** postgres://… of the server to use. */
  url: string;
  /** A PostgreSQL schema other than public, e.g. one per test suite. */
  schema?: string;
  /** Connections in the pool. */
  poolSize: number;
  /** Where the ORM reports its queries (tracing makes a span of each); MikroORM's own by default. */
  loggerFactory?: Options["loggerFactory"];
}

export type Orm = MikroORM;

/** How long a new connection to PostgreSQL may take before the call that needs it fails. */
export const connectionTimeoutMillis = 5_000;

/** Opens the ORM (connections are made lazily). Run {@link migrate} before serving. */
export async function createOrm(options: DatabaseOptions): Promise<Orm> {
  const schema = options.schema;
  return MikroORM.init({
    clientUrl: options.url,
    entities: [
      ...accountEntities,
      ...gameOAuthEntities,
      ...gameOAuthFlowEntities,
      ...signingKeyEntities,
      ...accountOAuthEntities,
      ...integrationEntities,
      ...alertEntities,
      ...accessRequestEntities,
      ...invitationEntities,
    ],
    schema,
    pool: { min: 0, max: options.poolSize },
    driverOptions: {
      // Unqualified SQL (migrations, raw queries) must land in the same schema as the entities.
      ...(schema && { options: `-c search_path=${schema}` }),
      // A database that does not answer fails a call in seconds (503, retry) instead of holding it.
      connectionTimeoutMillis,
      keepAlive: true,
    },
    debug: false,
    ...(options.loggerFactory && { loggerFactory: options.loggerFactory }),
    allowGlobalContext: false,
    extensions: [Migrator],
    migrations: {
      migrationsList: migrations,
      tableName: "mikro_orm_migrations",
      schema,
      snapshot: false,
      silent: true,
      transactional: true,
      allOrNothing: true,
    },
  });
}

/**
 * Applies pending migrations; returns the names applied. Instances started together (a rolling
 * upgrade, `docker compose up`) take turns under a session advisory lock held on a connection of
 * its own, so the second finds the first one's work done instead of failing halfway through it.
 */
export async function migrate(orm: Orm): Promise<string[]> {
  const lock = new pg.Client({ connectionString: orm.config.get("clientUrl") });
  await lock.connect();
  try {
    await lock.query("select pg_advisory_lock(hashtext('outpost.migrations'))");
    const applied = await orm.migrator.up();
    return applied.map((m) => m.name);
  } finally {
    // Ending the session releases the lock, also when the unlock is never sent.
    await lock.end();
  }
}
