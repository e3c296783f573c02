import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 30 (statistics): what agents sample every 10 s (CPU, memory, players, TPS, MSPT, disk),
 * kept in tables partitioned by time (PostgreSQL's declarative partitioning), so that old data
 * goes by dropping a partition, never by deleting rows: the samples (`server_samples`, daily
 * partitions, 48 hours), their 1-minute rollups (`server_stats_1m`, daily, 14 days) and 15-minute
 * rollups (`server_stats_15m`, monthly, a year). core/stats/partitions.ts makes and drops the
 * partitions; `stats_rollups` says up to when each rollup has been made. No foreign key to
 * `servers`: a deleted server's figures go with their partitions.
 */
export class Migration0035ServerStats extends Migration {
  override name = "0035_server_stats";

  override async up(): Promise<void> {
    this.addSql(
      `create table "server_samples" ("server_id" uuid not null, "at" timestamptz not null, "cpu" real null, "memory" bigint null, "players" int null, "tps" real null, "mspt" real null, "disk" bigint null) partition by range ("at");`,
    );
    this.addSql(`create index "server_samples_server_at_index" on "server_samples" ("server_id", "at");`);
    for (const table of ["server_stats_1m", "server_stats_15m"]) {
      this.addSql(
        `create table "${table}" ("server_id" uuid not null, "bucket" timestamptz not null, "samples" int not null, "cpu_avg" real null, "cpu_max" real null, "memory_avg" double precision null, "memory_max" bigint null, "players_avg" real null, "players_max" int null, "tps_avg" real null, "tps_min" real null, "mspt_avg" real null, "mspt_max" real null, "disk_max" bigint null, primary key ("server_id", "bucket")) partition by range ("bucket");`,
      );
    }
    this.addSql(`create table "stats_rollups" ("name" varchar(16) not null, "rolled_until" timestamptz not null, primary key ("name"));`);
  }
}
