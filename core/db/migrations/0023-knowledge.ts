import { Migration } from "@mikro-orm/migrations";

/**
 * Knowledge (issue 17): an organization's notes.
 * - `notes`: title, Markdown content, sorted lower-case tags, an optional server (a deleted
 *   server leaves its notes about no server, rather than losing runbooks), who wrote and who last
 *   changed it (kept when the account goes, as null), and `version`, the optimistic-concurrency
 *   counter an update must name.
 * - `search_vector`: a stored generated column, the title weighted A, the tags B and the content
 *   C, with the `english` configuration, under a GIN index; `note_search_vector()` builds it (an
 *   immutable SQL function, since array_to_string alone is not immutable) and queries rank on it.
 */
export class Migration0023Knowledge extends Migration {
  override name = "0023_knowledge";

  override async up(): Promise<void> {
    this.addSql(`create function "note_search_vector"("title" text, "tags" text[], "content" text) returns tsvector
      language sql immutable parallel safe as $$
        select setweight(to_tsvector('english'::regconfig, coalesce("title", '')), 'A')
            || setweight(to_tsvector('english'::regconfig, coalesce(array_to_string("tags", ' '), '')), 'B')
            || setweight(to_tsvector('english'::regconfig, coalesce("content", '')), 'C')
      $$;`);
    this.addSql(
      `create table "notes" ("id" uuid not null, "organization_id" uuid not null, "server_id" uuid null, "title" varchar(200) not null, "content" text not null, "tags" text[] not null default '{}', "author_user_id" uuid null, "updated_by_user_id" uuid null, "version" int not null default 1, "created_at" timestamptz not null, "updated_at" timestamptz not null, "search_vector" tsvector generated always as (note_search_vector("title", "tags", "content")) stored, primary key ("id"));`,
    );
    this.addSql(
      `alter table "notes" add constraint "notes_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "notes" add constraint "notes_server_id_foreign" foreign key ("server_id") references "servers" ("id") on delete set null;`);
    this.addSql(`alter table "notes" add constraint "notes_author_user_id_foreign" foreign key ("author_user_id") references "users" ("id") on delete set null;`);
    this.addSql(`alter table "notes" add constraint "notes_updated_by_user_id_foreign" foreign key ("updated_by_user_id") references "users" ("id") on delete set null;`);
    this.addSql(`create index "notes_organization_created_index" on "notes" ("organization_id", "created_at" desc, "id" desc);`);
    this.addSql(`create index "notes_server_id_index" on "notes" ("server_id");`);
    this.addSql(`create index "notes_tags_index" on "notes" using gin ("tags");`);
    this.addSql(`create index "notes_search_vector_index" on "notes" using gin ("search_vector");`);
    this.addSql(`create index "notes_author_user_id_index" on "notes" ("author_user_id");`);
    this.addSql(`create index "notes_updated_by_user_id_index" on "notes" ("updated_by_user_id");`);
  }
}
