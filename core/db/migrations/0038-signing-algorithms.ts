import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 31 (ID token algorithms): each issuer keeps a key set per algorithm — RS256, ES256 and
 * EdDSA (Ed25519) — each staged next → current → previous as RS256's always was, so the unique
 * index becomes (issuer, alg, stage). Keys stored before are RS256. A client picks the algorithm
 * of its ID tokens (`id_token_signed_response_alg`, OpenID Connect Dynamic Registration's name);
 * every client had RS256 until now.
 */
export class Migration0038SigningAlgorithms extends Migration {
  override name = "0038_signing_algorithms";

  override async up(): Promise<void> {
    this.addSql(`alter table "signing_keys" add column "alg" varchar(8) not null default 'RS256';`);
    this.addSql(`alter table "signing_keys" add constraint "signing_keys_alg_check" check ("alg" in ('RS256', 'ES256', 'EdDSA'));`);
    this.addSql(`alter table "signing_keys" drop constraint "signing_keys_issuer_stage_unique";`);
    this.addSql(`alter table "signing_keys" add constraint "signing_keys_issuer_alg_stage_unique" unique ("issuer", "alg", "stage");`);
    for (const table of ["game_oauth_clients", "oauth_provider_clients"]) {
      this.addSql(`alter table "${table}" add column "id_token_signed_response_alg" varchar(8) not null default 'RS256';`);
      this.addSql(`alter table "${table}" add constraint "${table}_id_token_alg_check" check ("id_token_signed_response_alg" in ('RS256', 'ES256', 'EdDSA'));`);
    }
  }
}
