import { Migration } from "@mikro-orm/migrations";

/**
 * Account OAuth (the issuer at ACCOUNT_BASE_URL/api/auth): the apps platform admins register,
 * the consents users give them, the authorization requests waiting for a sign-in or a consent,
 * and the codes and access tokens. Its own tables, so no Game OAuth client, code or token can
 * ever be found here (and the other way round). Secrets are stored as SHA-256 hashes.
 */
export class Migration0007AccountOAuth extends Migration {
  override name = "0007_account_oauth";

  override async up(): Promise<void> {
    this.addSql(
      `create table "oauth_provider_clients" ("id" uuid not null, "client_id" varchar(32) not null, "name" varchar(80) not null, "redirect_uris" jsonb not null, "skip_consent" boolean not null default false, "disabled" boolean not null default false, "secret_hash" varchar(64) not null, "secret_prefix" varchar(16) not null, "created_by_user_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "oauth_provider_clients" add constraint "oauth_provider_clients_client_id_unique" unique ("client_id");`);
    this.addSql(
      `alter table "oauth_provider_clients" add constraint "oauth_provider_clients_created_by_user_id_foreign" foreign key ("created_by_user_id") references "users" ("id") on delete set null;`,
    );

    this.addSql(
      `create table "account_consents" ("id" uuid not null, "user_id" uuid not null, "oauth_provider_client_id" uuid not null, "scopes" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "account_consents" add constraint "account_consents_user_client_unique" unique ("user_id", "oauth_provider_client_id");`);
    this.addSql(`create index "account_consents_oauth_provider_client_id_index" on "account_consents" ("oauth_provider_client_id");`);
    this.addSql(`alter table "account_consents" add constraint "account_consents_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(
      `alter table "account_consents" add constraint "account_consents_oauth_provider_client_id_foreign" foreign key ("oauth_provider_client_id") references "oauth_provider_clients" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "account_authorization_requests" ("id" uuid not null, "request_hash" varchar(64) not null, "oauth_provider_client_id" uuid not null, "redirect_uri" varchar(4096) not null, "state" varchar(2048) not null, "scopes" jsonb not null, "nonce" varchar(512) null, "code_challenge" varchar(256) null, "code_challenge_method" varchar(8) null, "prompt_none" boolean not null default false, "prompt_login" boolean not null default false, "prompt_consent" boolean not null default false, "max_age" integer null, "user_id" uuid null, "status" varchar(16) not null, "expires_at" timestamptz not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "account_authorization_requests" add constraint "account_authorization_requests_status_check" check ("status" in ('pending', 'completed'));`,
    );
    this.addSql(`alter table "account_authorization_requests" add constraint "account_authorization_requests_request_hash_unique" unique ("request_hash");`);
    this.addSql(`create index "account_authorization_requests_expires_at_index" on "account_authorization_requests" ("expires_at");`);
    this.addSql(`create index "account_authorization_requests_oauth_provider_client_id_index" on "account_authorization_requests" ("oauth_provider_client_id");`);
    this.addSql(
      `alter table "account_authorization_requests" add constraint "account_authorization_requests_oauth_provider_client_id_foreign" foreign key ("oauth_provider_client_id") references "oauth_provider_clients" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "account_authorization_requests" add constraint "account_authorization_requests_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "account_authorization_codes" ("id" uuid not null, "code_hash" varchar(64) not null, "oauth_provider_client_id" uuid not null, "user_id" uuid not null, "redirect_uri" varchar(4096) not null, "scopes" jsonb not null, "nonce" varchar(512) null, "code_challenge" varchar(256) null, "code_challenge_method" varchar(8) null, "auth_time" timestamptz not null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "reused_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "account_authorization_codes" add constraint "account_authorization_codes_code_hash_unique" unique ("code_hash");`);
    this.addSql(`create index "account_authorization_codes_expires_at_index" on "account_authorization_codes" ("expires_at");`);
    this.addSql(`create index "account_authorization_codes_oauth_provider_client_id_index" on "account_authorization_codes" ("oauth_provider_client_id");`);
    this.addSql(`create index "account_authorization_codes_user_id_index" on "account_authorization_codes" ("user_id");`);
    this.addSql(
      `alter table "account_authorization_codes" add constraint "account_authorization_codes_oauth_provider_client_id_foreign" foreign key ("oauth_provider_client_id") references "oauth_provider_clients" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "account_authorization_codes" add constraint "account_authorization_codes_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "account_access_tokens" ("id" uuid not null, "token_hash" varchar(64) not null, "authorization_code_id" uuid not null, "oauth_provider_client_id" uuid not null, "user_id" uuid not null, "scopes" jsonb not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "account_access_tokens" add constraint "account_access_tokens_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "account_access_tokens_authorization_code_id_index" on "account_access_tokens" ("authorization_code_id");`);
    this.addSql(`create index "account_access_tokens_expires_at_index" on "account_access_tokens" ("expires_at");`);
    this.addSql(`create index "account_access_tokens_oauth_provider_client_id_index" on "account_access_tokens" ("oauth_provider_client_id");`);
    this.addSql(`create index "account_access_tokens_user_id_index" on "account_access_tokens" ("user_id");`);
    this.addSql(
      `alter table "account_access_tokens" add constraint "account_access_tokens_authorization_code_id_foreign" foreign key ("authorization_code_id") references "account_authorization_codes" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "account_access_tokens" add constraint "account_access_tokens_oauth_provider_client_id_foreign" foreign key ("oauth_provider_client_id") references "oauth_provider_clients" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "account_access_tokens" add constraint "account_access_tokens_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
  }
}
