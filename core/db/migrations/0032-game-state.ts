import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 30 (lifecycle, first steps): the game server's own state as an agent that runs it reports
 * it (`starting`, `running`, `stopping`, `stopped`, `crashed`), how it came to it, and when;
 * cleared when an agent says Hello (one that does not run the server reports none).
 */
export class Migration0032GameState extends Migration {
  override name = "0032_game_state";

  override async up(): Promise<void> {
    this.addSql(
      `alter table "servers" add column "game_state" varchar(16) null, add column "game_state_detail" varchar(200) null, add column "game_state_at" timestamptz null;`,
    );
  }
}
