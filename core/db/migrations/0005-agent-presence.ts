import { Migration } from "@mikro-orm/migrations";

/**
 * What a server's agent reports and which of its streams holds the server's presence:
 * `player_auth` and `agent_version` from the agent's Hello; `agent_connection_id` names the
 * stream that last said Hello, so a stream that ends only takes the server offline if no newer
 * one has taken over (a reconnect can reach another instance before the old stream is noticed);
 * `presence_event` is the last presence event written to the activity log ("connected" or
 * "disconnected"), so flapping agents do not flood it. The partial index serves the sweep of
 * servers whose agent went silent.
 */
export class Migration0005AgentPresence extends Migration {
  override name = "0005_agent_presence";

  override async up(): Promise<void> {
    this.addSql(
      `alter table "servers" add column "player_auth" varchar(16) null, add column "agent_version" varchar(64) null, add column "agent_connection_id" uuid null, add column "presence_event" varchar(16) null;`,
    );
    this.addSql(`alter table "servers" add constraint "servers_player_auth_check" check ("player_auth" in ('online', 'offline', 'insecure'));`);
    this.addSql(`alter table "servers" add constraint "servers_presence_event_check" check ("presence_event" in ('connected', 'disconnected'));`);
    this.addSql(`create index "servers_presence_idx" on "servers" ("last_seen_at") where "online" or "presence_event" = 'connected';`);
  }
}
