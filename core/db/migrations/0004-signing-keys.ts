import { Migration } from "@mikro-orm/migrations";

/**
 * The issuers' signing keys: at most one per issuer and stage (retired keys are deleted), private
 * keys stored only encrypted (AES-256-GCM ciphertext, IV, tag and the id of the KEK).
 */
export class Migration0004SigningKeys extends Migration {
  override name = "0004_signing_keys";

  override async up(): Promise<void> {
    this.addSql(
      `create table "signing_keys" ("id" uuid not null, "issuer" varchar(16) not null, "kid" varchar(64) not null, "stage" varchar(16) not null, "public_jwk" jsonb not null, "private_key_ciphertext" bytea not null, "private_key_iv" bytea not null, "private_key_tag" bytea not null, "kek_id" varchar(32) not null, "created_at" timestamptz not null, "activated_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "signing_keys" add constraint "signing_keys_kid_unique" unique ("kid");`);
    this.addSql(`alter table "signing_keys" add constraint "signing_keys_issuer_stage_unique" unique ("issuer", "stage");`);
    this.addSql(`alter table "signing_keys" add constraint "signing_keys_issuer_check" check ("issuer" in ('game', 'account'));`);
    this.addSql(`alter table "signing_keys" add constraint "signing_keys_stage_check" check ("stage" in ('next', 'current', 'previous'));`);
    this.addSql(`alter table "signing_keys" add constraint "signing_keys_activated_check" check (("stage" = 'next') = ("activated_at" is null));`);
  }
}
