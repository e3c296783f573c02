import { Migration } from "@mikro-orm/migrations";

/**
 * In-app notifications (issue 15):
 * - `notifications`: what is addressed to one user (added to an organization, a role changed, an
 *   API key about to expire, later alert rules), unread until `read_at`. `dedupe_key` makes a
 *   notification that a periodic job may find again (a key's expiry) arrive once per user.
 * - `notification_preferences`: per user, by kind, whether it shows in the dashboard and whether it
 *   is also pushed to the user's browsers; no row means the defaults (shown, not pushed).
 */
export class Migration0018Notifications extends Migration {
  override name = "0018_notifications";

  override async up(): Promise<void> {
    this.addSql(
      `create table "notifications" ("id" uuid not null, "user_id" uuid not null, "kind" varchar(32) not null, "title" varchar(200) not null, "body" varchar(1000) not null default '', "link" varchar(300) null, "organization_id" uuid null, "dedupe_key" varchar(200) null, "created_at" timestamptz not null, "read_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "notifications" add constraint "notifications_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(
      `alter table "notifications" add constraint "notifications_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(`create index "notifications_user_newest_index" on "notifications" ("user_id", "created_at" desc, "id" desc);`);
    this.addSql(`create index "notifications_user_unread_index" on "notifications" ("user_id") where "read_at" is null;`);
    this.addSql(`create unique index "notifications_user_dedupe_unique" on "notifications" ("user_id", "dedupe_key") where "dedupe_key" is not null;`);
    this.addSql(`create table "notification_preferences" ("user_id" uuid not null, "kinds" jsonb not null, "updated_at" timestamptz not null, primary key ("user_id"));`);
    this.addSql(
      `alter table "notification_preferences" add constraint "notification_preferences_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
  }
}
