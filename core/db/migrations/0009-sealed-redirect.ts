import { Migration } from "@mikro-orm/migrations";

/**
 * A completed hosted sign-in kept its redirect URL — authorization code included — in clear until
 * the session was swept. It is now sealed to a public key derived from the browser binding
 * (core/game-oauth/sealed-redirect.ts), stored with each new session as `completion_key`. URLs
 * stored before are dropped (their codes lived 90 s), and sessions still pending, which have no
 * key to seal to, end: their browsers start again.
 */
export class Migration0009SealedRedirect extends Migration {
  override name = "0009_sealed_redirect";

  override async up(): Promise<void> {
    this.addSql(`alter table "hosted_authorizations" add column "completion_key" varchar(64) null;`);
    this.addSql(`alter table "hosted_authorizations" rename column "redirect_url" to "redirect_url_sealed";`);
    this.addSql(`update "hosted_authorizations" set "redirect_url_sealed" = null;`);
    this.addSql(`update "hosted_authorizations" set "status" = 'expired' where "status" = 'pending';`);
  }
}
