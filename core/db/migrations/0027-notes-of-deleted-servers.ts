import { Migration } from "@mikro-orm/migrations";

/**
 * Notes about a server that is deleted no longer widen to every member (before this, they became
 * notes about no server, which every member reads). `notes.managers_only` marks them: owners and
 * admins still read them, members no longer do, until a manager saves the note about a server
 * again. A trigger sets it before any deletion of a server, whatever the path, in the deleting
 * transaction; the foreign key then clears `server_id` as before.
 */
export class Migration0027NotesOfDeletedServers extends Migration {
  override name = "0027_notes_of_deleted_servers";

  override async up(): Promise<void> {
    this.addSql(`alter table "notes" add column "managers_only" boolean not null default false;`);
    this.addSql(`create function "notes_server_gone"() returns trigger language plpgsql as $$
      begin
        update "notes" set "managers_only" = true where "server_id" = old."id";
        return old;
      end $$;`);
    this.addSql(`create trigger "notes_server_gone" before delete on "servers" for each row execute function "notes_server_gone"();`);
  }
}
