import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 30 (statistics): a Game OAuth client's sign-ins per UTC day, for
 * organizations/getGameOAuthClientStats. The hosted sessions themselves are deleted an hour after
 * they expire (core/oauth/cleanup.ts); the statement that deletes them adds them here first, by
 * the day each started, so nothing is counted twice and the sign-in path writes nothing more.
 */
export class Migration0036ClientSignInDays extends Migration {
  override name = "0036_client_sign_in_days";

  override async up(): Promise<void> {
    this.addSql(
      `create table "game_oauth_client_days" ("game_oauth_client_id" uuid not null, "day" date not null, "started" int not null, "signed_in" int not null, "exchanged" int not null, primary key ("game_oauth_client_id", "day"));`,
    );
    this.addSql(
      `alter table "game_oauth_client_days" add constraint "game_oauth_client_days_game_oauth_client_id_foreign" foreign key ("game_oauth_client_id") references "game_oauth_clients" ("id") on delete cascade;`,
    );
  }
}
