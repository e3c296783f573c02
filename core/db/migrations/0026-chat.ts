import { Migration } from "@mikro-orm/migrations";

/**
 * The assistant's conversations (issue 17, the `chat` router):
 * - `chat_conversations`: one per conversation, owned by the member who started it, about the
 *   organization or one of its servers; gone with the organization, the server or the owner.
 * - `chat_messages`: the conversation's messages in `seq` order (unique per conversation, so two
 *   writers never take the same place). An assistant message keeps the model's `tool_calls`
 *   (JSON); a tool message the call it answers, the tool and its `tool_status`. A tool call that
 *   waits for confirmation keeps its single-use execution token in `execution_token` until it is
 *   settled (5 minutes at most; bound to the caller and the tool; docs/chat.md).
 */
export class Migration0026Chat extends Migration {
  override name = "0026_chat";

  override async up(): Promise<void> {
    this.addSql(
      `create table "chat_conversations" ("id" uuid not null, "organization_id" uuid not null, "server_id" uuid null, "user_id" uuid not null, "title" varchar(80) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "chat_conversations" add constraint "chat_conversations_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "chat_conversations" add constraint "chat_conversations_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "chat_conversations" add constraint "chat_conversations_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(`create index "chat_conversations_owner_index" on "chat_conversations" ("organization_id", "user_id", "created_at", "id");`);
    this.addSql(`create index "chat_conversations_server_id_index" on "chat_conversations" ("server_id");`);
    this.addSql(`create index "chat_conversations_user_id_index" on "chat_conversations" ("user_id");`);
    this.addSql(
      `create table "chat_messages" ("id" uuid not null, "conversation_id" uuid not null, "seq" int not null, "role" varchar(16) not null, "content" text not null, "tool_calls" jsonb null, "tool_call_id" varchar(200) null, "tool_name" varchar(64) null, "tool_status" varchar(16) null, "execution_token" varchar(100) null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "chat_messages" add constraint "chat_messages_conversation_id_foreign" foreign key ("conversation_id") references "chat_conversations" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "chat_messages" add constraint "chat_messages_seq_unique" unique ("conversation_id", "seq");`);
  }
}
