import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 27 (account enumeration and squatting; email alerts aimed at strangers):
 * - `users.email_verified_at`: when the account proved it receives mail at its address (a mailed
 *   link, or the operator's `outpost user verify-email`). Existing accounts stay unverified: none
 *   was ever checked. Invitations and email alert recipients match verified addresses only.
 * - `email_verifications`: the links' secrets, stored hashed, each for one account and the address
 *   it was sent to, expiring, used once by a conditional update.
 * - `organization_emails`: the email an organization's integrations sent (one row a message, with
 *   its number of recipients), what the hourly cap of its plan counts across instances; rows older
 *   than the hour are deleted as new ones are counted.
 */
export class Migration0029EmailVerification extends Migration {
  override name = "0029_email_verification";

  override async up(): Promise<void> {
    this.addSql(`alter table "users" add column "email_verified_at" timestamptz null;`);
    this.addSql(
      `create table "email_verifications" ("id" uuid not null, "user_id" uuid not null references "users" ("id") on delete cascade, "email" varchar(254) not null, "token_hash" varchar(64) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "email_verifications" add constraint "email_verifications_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "email_verifications_user_id_index" on "email_verifications" ("user_id", "created_at");`);
    this.addSql(
      `create table "organization_emails" ("id" bigint generated always as identity, "organization_id" uuid not null references "organizations" ("id") on delete cascade, "sent_at" timestamptz not null, "recipients" int not null, primary key ("id"));`,
    );
    this.addSql(`create index "organization_emails_organization_sent_index" on "organization_emails" ("organization_id", "sent_at");`);
  }
}
