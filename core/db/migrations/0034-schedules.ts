import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 30 (schedules): a server's schedules — a cron expression in a time zone, an action, the
 * warnings before a restart or stop — with the time each runs next (`next_run_at`, null while
 * disabled) and the smallest warning already sent for that time (`warned_minutes`). Moving
 * `next_run_at` on from the time that was due is how one instance, and only one, takes a run; the
 * run's row is written in the same transaction (`schedule_runs`, at most one per schedule and due
 * time besides those started by hand).
 */
export class Migration0034Schedules extends Migration {
  override name = "0034_schedules";

  override async up(): Promise<void> {
    this.addSql(
      `create table "server_schedules" ("id" uuid not null, "organization_id" uuid not null, "server_id" uuid not null, "name" varchar(100) not null, "cron" varchar(100) not null, "time_zone" varchar(64) not null, "action" varchar(16) not null, "text" varchar(1000) not null default '', "warning_minutes" int[] not null default '{}', "enabled" boolean not null, "next_run_at" timestamptz null, "warned_minutes" int null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "server_schedules" add constraint "server_schedules_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "server_schedules" add constraint "server_schedules_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`,
    );
    this.addSql(`create index "server_schedules_server_index" on "server_schedules" ("server_id", "created_at");`);
    this.addSql(`create index "server_schedules_due_index" on "server_schedules" ("next_run_at") where "enabled";`);
    this.addSql(
      `create table "schedule_runs" ("id" uuid not null, "schedule_id" uuid not null, "server_id" uuid not null, "scheduled_for" timestamptz not null, "manual" boolean not null default false, "started_at" timestamptz not null, "finished_at" timestamptz null, "outcome" varchar(16) not null, "detail" varchar(1000) not null default '', primary key ("id"));`,
    );
    this.addSql(
      `alter table "schedule_runs" add constraint "schedule_runs_schedule_id_foreign" foreign key ("schedule_id") references "server_schedules" ("id") on delete cascade;`,
    );
    this.addSql(`create unique index "schedule_runs_once_index" on "schedule_runs" ("schedule_id", "scheduled_for") where not "manual";`);
    this.addSql(`create index "schedule_runs_newest_index" on "schedule_runs" ("schedule_id", "scheduled_for" desc, "id" desc);`);
  }
}
