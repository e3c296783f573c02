import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 30 (lifecycle, first steps): the game server's own state as an agent that runs it reports
 * it (`starting`, `running`, `stopping`, `stopped`, `crashed`), how it came to it, when, and on
 * which stream: shown only while that stream holds the server (an agent that does not run the
 * server reports none), and kept across a reconnect so that the state the agent sends again is no
 * change.
 */
export class Migration0032GameState extends Migration {
  override name = "0032_game_state";

  override async up(): Promise<void> {
    this.addSql(
      `alter table "servers" add column "game_state" varchar(16) null, add column "game_state_detail" varchar(200) null, add column "game_state_at" timestamptz null, add column "game_state_connection_id" uuid null;`,
    );
  }
}
