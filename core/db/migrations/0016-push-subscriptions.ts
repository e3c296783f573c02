import { Migration } from "@mikro-orm/migrations";

/**
 * Web Push (issue 15): the deployment's one VAPID key pair (the private key only sealed under the
 * KEK, as the signing keys are; a single row, so concurrent first uses agree on one key), and the
 * users' browsers' push subscriptions. An endpoint belongs to one browser, so to one row: a browser
 * that subscribes for another account moves it there. A subscription made in a dashboard session
 * ends with that session (signed out, revoked, ended by a password change): the next person at a
 * shared browser does not get the last one's notifications.
 */
export class Migration0016PushSubscriptions extends Migration {
  override name = "0016_push_subscriptions";

  override async up(): Promise<void> {
    this.addSql(
      `create table "vapid_keys" ("id" smallint not null default 1, "public_key" varchar(100) not null, "private_key_ciphertext" bytea not null, "private_key_iv" bytea not null, "private_key_tag" bytea not null, "kek_id" varchar(32) not null, "created_at" timestamptz not null, primary key ("id"), constraint "vapid_keys_single_check" check ("id" = 1));`,
    );
    this.addSql(
      `create table "push_subscriptions" ("id" uuid not null, "user_id" uuid not null references "users" ("id") on delete cascade, "endpoint" varchar(1024) not null, "p256dh" varchar(100) not null, "auth" varchar(30) not null, "session_id" uuid null references "sessions" ("id") on delete cascade, "user_agent" varchar(200) not null default '', "created_at" timestamptz not null, "last_success_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "push_subscriptions" add constraint "push_subscriptions_endpoint_unique" unique ("endpoint");`);
    this.addSql(`create index "push_subscriptions_user_id_index" on "push_subscriptions" ("user_id", "created_at");`);
    this.addSql(`create index "push_subscriptions_session_id_index" on "push_subscriptions" ("session_id");`);
  }
}
