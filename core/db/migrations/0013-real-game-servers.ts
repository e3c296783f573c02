import { Migration } from "@mikro-orm/migrations";

/**
 * Real game servers (issue 12):
 * - `player_auth` may be 'proxy': an offline-mode server behind a proxy that authenticates its
 *   players and forwards them with a secret, which signs players in as an online one does.
 * - `agent_console`: whether the agent that last said Hello can run console commands, so that
 *   every instance can refuse a command for an agent without a console without asking it.
 * - `server_players`: the players online as the stream holding the server last reported them,
 *   with when each was first reported, so any instance can list them. The server's own row is the
 *   lock: a list is replaced in one transaction that holds it, and goes with the server.
 */
export class Migration0013RealGameServers extends Migration {
  override name = "0013_real_game_servers";

  override async up(): Promise<void> {
    this.addSql(`alter table "servers" drop constraint "servers_player_auth_check";`);
    this.addSql(`alter table "servers" add constraint "servers_player_auth_check" check ("player_auth" in ('online', 'offline', 'insecure', 'proxy'));`);
    this.addSql(`alter table "servers" add column "agent_console" boolean not null default false;`);
    this.addSql(
      `create table "server_players" ("server_id" uuid not null, "uuid" uuid not null, "name" varchar(32) not null, "since" timestamptz not null, primary key ("server_id", "uuid"));`,
    );
    this.addSql(
      `alter table "server_players" add constraint "server_players_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`,
    );
  }
}
