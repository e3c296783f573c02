import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 30 (lifecycle): whether the agent that last said Hello runs the server's process and takes
 * start, stop, restart and kill from Outpost (`outpost-agent wrap`), as `agent_console` says
 * whether it has a console.
 */
export class Migration0033Lifecycle extends Migration {
  override name = "0033_lifecycle";

  override async up(): Promise<void> {
    this.addSql(`alter table "servers" add column "agent_lifecycle" boolean not null default false;`);
  }
}
