import { Migration } from "@mikro-orm/migrations";

/**
 * Game OAuth clients and the servers each may be verified on. Both go with their organization;
 * a server's rows go with the server, so it drops out of every client's allowed list.
 */
export class Migration0003GameOAuthClients extends Migration {
  override name = "0003_game_oauth_clients";

  override async up(): Promise<void> {
    this.addSql(
      `create table "game_oauth_clients" ("id" uuid not null, "organization_id" uuid not null, "client_id" varchar(32) not null, "name" varchar(80) not null, "redirect_uris" jsonb not null, "verifier_policy" varchar(32) not null, "secret_hash" varchar(64) not null, "secret_prefix" varchar(16) not null, "disabled" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "game_oauth_clients_organization_id_index" on "game_oauth_clients" ("organization_id");`);
    this.addSql(`alter table "game_oauth_clients" add constraint "game_oauth_clients_client_id_unique" unique ("client_id");`);

    this.addSql(
      `create table "game_oauth_client_servers" ("game_oauth_client_id" uuid not null, "server_id" uuid not null, primary key ("game_oauth_client_id", "server_id"));`,
    );
    this.addSql(`create index "game_oauth_client_servers_server_id_index" on "game_oauth_client_servers" ("server_id");`);

    this.addSql(
      `alter table "game_oauth_clients" add constraint "game_oauth_clients_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "game_oauth_client_servers" add constraint "game_oauth_client_servers_game_oauth_client_id_foreign" foreign key ("game_oauth_client_id") references "game_oauth_clients" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "game_oauth_client_servers" add constraint "game_oauth_client_servers_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`,
    );
  }
}
