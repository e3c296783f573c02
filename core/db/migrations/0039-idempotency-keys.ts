import { Migration } from "@mikro-orm/migrations";

/**
 * Issue 32 (idempotency keys): a mutation sent with an `Idempotency-Key` header is claimed here
 * before it runs, keyed by its caller — the credential it came with (a session, an API key), whose
 * user it also names — and the key, and its answer is kept beside the claim: a retry with the same key gets that answer instead of running again, on any instance.
 * `request_hash` (SHA-256 of the procedure and its request) tells a retry from another request
 * reusing the key; `completed_at` null is a request still running. `response` is sealed under the
 * key-encryption key (an answer may hold a secret shown once: a new API key, an agent key).
 * Rows go after 24 hours.
 */
export class Migration0039IdempotencyKeys extends Migration {
  override name = "0039_idempotency_keys";

  override async up(): Promise<void> {
    this.addSql(`create table "idempotency_keys" (
      "user_id" uuid not null references "users" ("id") on delete cascade,
      "credential_id" uuid not null,
      "key" varchar(255) not null,
      "procedure" text not null,
      "request_hash" bytea not null,
      "response" bytea null,
      "error" jsonb null,
      "created_at" timestamptz not null,
      "completed_at" timestamptz null,
      constraint "idempotency_keys_pkey" primary key ("user_id", "credential_id", "key"),
      constraint "idempotency_keys_answer_check" check ("completed_at" is null or ("response" is null) <> ("error" is null))
    );`);
    this.addSql(`create index "idempotency_keys_created_at_index" on "idempotency_keys" ("created_at");`);
  }
}
