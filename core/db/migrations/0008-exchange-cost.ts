import { Migration } from "@mikro-orm/migrations";

/**
 * What a token exchange (one statement: consume the code, store the token) costs PostgreSQL.
 *
 * Access tokens keep one foreign key, to their authorization code, and lose those to the client,
 * organization, game account and user (and the indexes that served them). Every token has a code,
 * and the code holds those same keys with `on delete cascade`, so deleting a client, organization,
 * game account or user still deletes its tokens, through their codes. What the dropped keys cost:
 * each token insert (one per exchange) checked and share-locked the client's, organization's and
 * account's rows, which every concurrent exchange of an app shares — measured with
 * `npm run bench:oauth`, about 15 % of PostgreSQL's time per exchange.
 *
 * Authorization codes are written once and updated once or twice (consumed, perhaps reused), so
 * their pages keep 30 % free: the update then stays on its page and touches none of the table's six
 * indexes (a HOT update). At full pages about 30 % of consumptions rewrote every index; this took
 * about 8 % off PostgreSQL's time per exchange.
 */
export class Migration0008ExchangeCost extends Migration {
  override name = "0008_exchange_cost";

  override async up(): Promise<void> {
    this.addSql(`alter table "access_tokens" drop constraint "access_tokens_game_oauth_client_id_foreign";`);
    this.addSql(`alter table "access_tokens" drop constraint "access_tokens_organization_id_foreign";`);
    this.addSql(`alter table "access_tokens" drop constraint "access_tokens_game_account_id_foreign";`);
    this.addSql(`drop index "access_tokens_game_oauth_client_id_index";`);
    this.addSql(`drop index "access_tokens_game_account_id_index";`);
    this.addSql(`alter table "account_access_tokens" drop constraint "account_access_tokens_oauth_provider_client_id_foreign";`);
    this.addSql(`alter table "account_access_tokens" drop constraint "account_access_tokens_user_id_foreign";`);
    this.addSql(`drop index "account_access_tokens_oauth_provider_client_id_index";`);
    this.addSql(`alter table "authorization_codes" set (fillfactor = 70);`);
    this.addSql(`alter table "account_authorization_codes" set (fillfactor = 70);`);
  }
}
