import { Migration } from "@mikro-orm/migrations";

/**
 * Access tokens keep one foreign key, to their authorization code, and lose those to the client,
 * organization, game account and user (and the indexes that served them). Every token has a code,
 * and the code holds those same keys with `on delete cascade`, so deleting a client, organization,
 * game account or user still deletes its tokens, through their codes. What the dropped keys cost:
 * each token insert (one per exchange) checked and share-locked the client's, organization's and
 * account's rows, which every concurrent exchange of an app shares — measured with
 * `npm run bench:oauth`, about 15 % of PostgreSQL's time per exchange.
 */
export class Migration0008TokenInsertCost extends Migration {
  override name = "0008_token_insert_cost";

  override async up(): Promise<void> {
    this.addSql(`alter table "access_tokens" drop constraint "access_tokens_game_oauth_client_id_foreign";`);
    this.addSql(`alter table "access_tokens" drop constraint "access_tokens_organization_id_foreign";`);
    this.addSql(`alter table "access_tokens" drop constraint "access_tokens_game_account_id_foreign";`);
    this.addSql(`drop index "access_tokens_game_oauth_client_id_index";`);
    this.addSql(`drop index "access_tokens_game_account_id_index";`);
    this.addSql(`alter table "account_access_tokens" drop constraint "account_access_tokens_oauth_provider_client_id_foreign";`);
    this.addSql(`alter table "account_access_tokens" drop constraint "account_access_tokens_user_id_foreign";`);
    this.addSql(`drop index "account_access_tokens_oauth_provider_client_id_index";`);
  }
}
