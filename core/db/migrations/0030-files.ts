import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 29 (the files panel):
 * - `servers.agent_files`: what the agent that last said Hello lets Outpost do with the server's
 *   files (`off`, `read-only`, `on`), as `agent_console` says whether it has a console.
 * - `access_grants.file_paths`, `access_requests.file_paths`: where a grant's file actions reach
 *   (paths and globs under the server's directory); empty: everywhere.
 * - `agent_file_calls`: a file operation on its way to the instance that holds the server's agent
 *   stream, and its result on the way back. The bus carries only the row's id (a NOTIFY payload
 *   is under 8,000 bytes; a file is up to 5 MiB). A row lives for one call; the caller deletes it,
 *   and rows older than a minute are swept.
 */
export class Migration0030Files extends Migration {
  override name = "0030_files";

  override async up(): Promise<void> {
    this.addSql(`alter table "servers" add column "agent_files" varchar(16) not null default 'off';`);
    this.addSql(`alter table "access_grants" add column "file_paths" text[] not null default '{}';`);
    this.addSql(`alter table "access_requests" add column "file_paths" text[] not null default '{}';`);
    this.addSql(
      `create table "agent_file_calls" ("id" uuid not null, "connection_id" uuid not null, "request" bytea not null, "result" bytea null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "agent_file_calls_created_at_index" on "agent_file_calls" ("created_at");`);
  }
}
