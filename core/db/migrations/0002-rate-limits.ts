import { Migration } from "@mikro-orm/migrations";

/**
 * The counts of core/ratelimit on a PostgreSQL server, shared by every instance: the columns and
 * column order rate-limiter-flexible's PostgreSQL store expects (it inserts positionally and is
 * told not to create the table itself). `expire` is in epoch milliseconds; its index serves the
 * sweep of expired rows.
 */
export class Migration0002RateLimits extends Migration {
  override name = "0002_rate_limits";

  override async up(): Promise<void> {
    this.addSql(`create table "rate_limits" ("key" varchar(255) not null, "points" integer not null default 0, "expire" bigint null, primary key ("key"));`);
    this.addSql(`create index "rate_limits_expire_index" on "rate_limits" ("expire");`);
  }
}
