import { Migration } from "@mikro-orm/migrations";

/**
 * Two changes to the in-game proof of Game OAuth:
 * - Login codes were stored as plain SHA-256, which a brute force of their ~40 bits undoes from a
 *   database dump; they are now an HMAC under a key derived from KEY_ENCRYPTION_KEY
 *   (core/game-oauth/login-codes.ts). The stored values of sessions still pending cannot be
 *   recomputed, so those sessions end: their browsers start again.
 * - A valid code no longer completes a sign-in: it claims it for one player on one server, who
 *   must confirm within a minute (core/game-oauth/login-claims.ts). The claim lives in the
 *   session's row, so the claim and the confirmation may reach different instances.
 */
export class Migration0010LoginCodeConfirmation extends Migration {
  override name = "0010_login_code_confirmation";

  override async up(): Promise<void> {
    this.addSql(`update "hosted_authorizations" set "status" = 'expired' where "status" = 'pending';`);
    this.addSql(
      `alter table "hosted_authorizations" add column "claimed_server_id" uuid null, add column "claimed_player_uuid" uuid null, add column "claimed_player_name" varchar(64) null, add column "claimed_at" timestamptz null, add column "claimed_until" timestamptz null;`,
    );
    this.addSql(
      `alter table "hosted_authorizations" add constraint "hosted_authorizations_claimed_server_id_foreign" foreign key ("claimed_server_id") references "servers" ("id") on delete set null;`,
    );
    // A confirmation finds the player's claim on its server among the pending sessions.
    this.addSql(`create index "hosted_authorizations_claim_index" on "hosted_authorizations" ("claimed_server_id", "claimed_player_uuid") where "status" = 'pending';`);
  }
}
