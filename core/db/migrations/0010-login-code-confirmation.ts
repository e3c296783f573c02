import { Migration } from "@mikro-orm/migrations";

/**
 * Login codes were stored as plain SHA-256, which a brute force of their ~40 bits undoes from a
 * database dump; they are now an HMAC under a key derived from KEY_ENCRYPTION_KEY
 * (core/game-oauth/login-codes.ts). The stored values of sessions still pending cannot be
 * recomputed, so those sessions end: their browsers start again.
 */
export class Migration0010LoginCodeConfirmation extends Migration {
  override name = "0010_login_code_confirmation";

  override async up(): Promise<void> {
    this.addSql(`update "hosted_authorizations" set "status" = 'expired' where "status" = 'pending';`);
  }
}
