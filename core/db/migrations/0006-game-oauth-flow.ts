import { Migration } from "@mikro-orm/migrations";

/**
 * The Game OAuth flow: hosted sign-in sessions (waiting for an in-game `/outpost login`), the
 * game accounts they prove (a stable `sub` per organization, game and account UUID), the
 * authorization codes they issue and the access tokens exchanged for them. Secrets (login codes,
 * authorization codes, access tokens) are stored as SHA-256 hashes. Everything goes with its
 * client or organization.
 */
export class Migration0006GameOAuthFlow extends Migration {
  override name = "0006_game_oauth_flow";

  override async up(): Promise<void> {
    this.addSql(
      `create table "hosted_authorizations" ("id" uuid not null, "game_oauth_client_id" uuid not null, "organization_id" uuid not null, "redirect_uri" varchar(4096) not null, "state" varchar(2048) not null, "nonce" varchar(512) null, "code_challenge" varchar(256) null, "code_challenge_method" varchar(8) null, "browser_binding_check" varchar(64) not null, "login_code_hash" varchar(64) not null, "login_code_sealed" varchar(128) not null, "status" varchar(16) not null, "redirect_url" text null, "expires_at" timestamptz not null, "completed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "hosted_authorizations" add constraint "hosted_authorizations_status_check" check ("status" in ('pending', 'completed', 'expired'));`);
    this.addSql(`create unique index "hosted_authorizations_pending_code_unique" on "hosted_authorizations" ("login_code_hash") where "status" = 'pending';`);
    this.addSql(`create index "hosted_authorizations_expires_at_index" on "hosted_authorizations" ("expires_at");`);
    this.addSql(`create index "hosted_authorizations_game_oauth_client_id_index" on "hosted_authorizations" ("game_oauth_client_id");`);
    this.addSql(
      `alter table "hosted_authorizations" add constraint "hosted_authorizations_game_oauth_client_id_foreign" foreign key ("game_oauth_client_id") references "game_oauth_clients" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "hosted_authorizations" add constraint "hosted_authorizations_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "game_accounts" ("id" uuid not null, "organization_id" uuid not null, "game" varchar(16) not null, "account_uuid" uuid not null, "sub" varchar(64) not null, "name" varchar(64) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "game_accounts" add constraint "game_accounts_account_unique" unique ("organization_id", "game", "account_uuid");`);
    this.addSql(`alter table "game_accounts" add constraint "game_accounts_sub_unique" unique ("sub");`);
    this.addSql(
      `alter table "game_accounts" add constraint "game_accounts_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "authorization_codes" ("id" uuid not null, "code_hash" varchar(64) not null, "game_oauth_client_id" uuid not null, "organization_id" uuid not null, "hosted_authorization_id" uuid not null, "game_account_id" uuid not null, "server_id" uuid not null, "redirect_uri" varchar(4096) not null, "nonce" varchar(512) null, "code_challenge" varchar(256) null, "code_challenge_method" varchar(8) null, "auth_time" timestamptz not null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "reused_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "authorization_codes" add constraint "authorization_codes_code_hash_unique" unique ("code_hash");`);
    this.addSql(`create index "authorization_codes_expires_at_index" on "authorization_codes" ("expires_at");`);
    this.addSql(`create index "authorization_codes_game_oauth_client_id_index" on "authorization_codes" ("game_oauth_client_id");`);
    this.addSql(`create index "authorization_codes_hosted_authorization_id_index" on "authorization_codes" ("hosted_authorization_id");`);
    this.addSql(`create index "authorization_codes_game_account_id_index" on "authorization_codes" ("game_account_id");`);
    this.addSql(
      `alter table "authorization_codes" add constraint "authorization_codes_game_oauth_client_id_foreign" foreign key ("game_oauth_client_id") references "game_oauth_clients" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "authorization_codes" add constraint "authorization_codes_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "authorization_codes" add constraint "authorization_codes_hosted_authorization_id_foreign" foreign key ("hosted_authorization_id") references "hosted_authorizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "authorization_codes" add constraint "authorization_codes_game_account_id_foreign" foreign key ("game_account_id") references "game_accounts" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "access_tokens" ("id" uuid not null, "token_hash" varchar(64) not null, "authorization_code_id" uuid not null, "game_oauth_client_id" uuid not null, "organization_id" uuid not null, "game_account_id" uuid not null, "server_id" uuid not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "access_tokens" add constraint "access_tokens_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "access_tokens_authorization_code_id_index" on "access_tokens" ("authorization_code_id");`);
    this.addSql(`create index "access_tokens_expires_at_index" on "access_tokens" ("expires_at");`);
    this.addSql(`create index "access_tokens_game_oauth_client_id_index" on "access_tokens" ("game_oauth_client_id");`);
    this.addSql(`create index "access_tokens_game_account_id_index" on "access_tokens" ("game_account_id");`);
    this.addSql(
      `alter table "access_tokens" add constraint "access_tokens_authorization_code_id_foreign" foreign key ("authorization_code_id") references "authorization_codes" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "access_tokens" add constraint "access_tokens_game_oauth_client_id_foreign" foreign key ("game_oauth_client_id") references "game_oauth_clients" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "access_tokens" add constraint "access_tokens_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "access_tokens" add constraint "access_tokens_game_account_id_foreign" foreign key ("game_account_id") references "game_accounts" ("id") on delete cascade;`,
    );
  }
}
