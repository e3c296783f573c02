import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 33 (console commands say what really happened): `console_commands` holds each command
 * sent to a server's agent, written as pending before it is sent and settled by its answer
 * (`ran`, `failed`) or as `not_sent` when it never reached the agent; one nobody heard the answer
 * of stays pending. servers/getConsoleCommand reads it. Rows are kept for 30 days. Each names the
 * stream it was sent on and the agent's run (`servers.agent_boot_id`, from Hello), so that what an
 * agent reports on its next connection settles the rest (ran, or never received).
 */
export class Migration0031ConsoleCommands extends Migration {
  override name = "0031_console_commands";

  override async up(): Promise<void> {
    this.addSql(
      `create table "console_commands" ("request_id" uuid not null, "server_id" uuid not null references "servers" ("id") on delete cascade, "user_id" uuid not null, "command" text not null, "status" varchar(16) not null default 'pending' check ("status" in ('pending', 'ran', 'failed', 'not_sent')), "output" jsonb null, "error" text null, "connection_id" uuid not null, "agent_boot_id" uuid null, "sent_at" timestamptz not null, "settled_at" timestamptz null, primary key ("request_id"));`,
    );
    this.addSql(`alter table "servers" add column "agent_boot_id" uuid null;`);
    this.addSql(`create index "console_commands_sent_at_index" on "console_commands" ("sent_at");`);
    this.addSql(`create index "console_commands_server_id_status_index" on "console_commands" ("server_id", "status");`);
  }
}
