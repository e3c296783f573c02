import { Migration } from "@mikro-orm/migrations";

/**
 * Account OAuth clients with the options apps expect (issue 16), and refresh tokens:
 * - `allowed_scopes`: what the client may ask for; existing clients keep what every client had
 *   (openid, profile, email), so none is given offline_access (refresh tokens) unasked.
 * - `token_endpoint_auth_method`: 'client_secret_basic', 'client_secret_post', 'none' (a public
 *   client, which must use PKCE S256) or 'client_secret_basic_or_post', what every existing client
 *   accepted until now and keeps.
 * - `require_pkce` (S256 only), `uri` (the app's home page), `post_logout_redirect_uris` (where
 *   RP-initiated logout may send the browser back to, matched exactly).
 * - `account_authorization_codes.revoked_at`: the grant that began with the code was revoked (a
 *   refresh token reused, a refresh token revoked, the consent revoked). Every access and refresh
 *   token issued from the code dies with it, including one issued concurrently.
 * - `account_refresh_tokens`: one row per refresh token (SHA-256 of it), its family being the
 *   authorization code it began with; `used_at` is set once when it is rotated.
 */
export class Migration0017AccountOAuthClientOptions extends Migration {
  override name = "0017_account_oauth_client_options";

  override async up(): Promise<void> {
    this.addSql(`alter table "oauth_provider_clients" add column "allowed_scopes" jsonb not null default '["openid", "profile", "email"]';`);
    this.addSql(`alter table "oauth_provider_clients" add column "token_endpoint_auth_method" varchar(32) not null default 'client_secret_basic_or_post';`);
    this.addSql(
      `alter table "oauth_provider_clients" add constraint "oauth_provider_clients_token_endpoint_auth_method_check" check ("token_endpoint_auth_method" in ('client_secret_basic', 'client_secret_post', 'client_secret_basic_or_post', 'none'));`,
    );
    this.addSql(`alter table "oauth_provider_clients" add column "require_pkce" boolean not null default false;`);
    this.addSql(`alter table "oauth_provider_clients" add column "uri" varchar(2048) null;`);
    this.addSql(`alter table "oauth_provider_clients" add column "post_logout_redirect_uris" jsonb not null default '[]';`);
    this.addSql(`alter table "account_authorization_codes" add column "revoked_at" timestamptz null;`);

    this.addSql(
      `create table "account_refresh_tokens" ("id" uuid not null, "token_hash" varchar(64) not null, "authorization_code_id" uuid not null, "oauth_provider_client_id" uuid not null, "user_id" uuid not null, "scopes" jsonb not null, "auth_time" timestamptz not null, "expires_at" timestamptz not null, "used_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "account_refresh_tokens" add constraint "account_refresh_tokens_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "account_refresh_tokens_authorization_code_id_index" on "account_refresh_tokens" ("authorization_code_id");`);
    this.addSql(`create index "account_refresh_tokens_oauth_provider_client_id_index" on "account_refresh_tokens" ("oauth_provider_client_id");`);
    this.addSql(`create index "account_refresh_tokens_user_id_index" on "account_refresh_tokens" ("user_id");`);
    this.addSql(`create index "account_refresh_tokens_expires_at_index" on "account_refresh_tokens" ("expires_at");`);
    this.addSql(
      `alter table "account_refresh_tokens" add constraint "account_refresh_tokens_authorization_code_id_foreign" foreign key ("authorization_code_id") references "account_authorization_codes" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "account_refresh_tokens" add constraint "account_refresh_tokens_oauth_provider_client_id_foreign" foreign key ("oauth_provider_client_id") references "oauth_provider_clients" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "account_refresh_tokens" add constraint "account_refresh_tokens_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
  }
}
