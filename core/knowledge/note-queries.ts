/**
 * The notes' plain SQL, always within one organization. Visibility is a list of server ids the
 * caller may see (`null`: every server, for owners and admins): a note about no server is seen by
 * every member, a note about a server only by those who see the server, and a note whose server
 * was deleted (`managers_only`) by owners and admins only.
 */
import { empty, join, sql, type Sql, type SqlRunner } from "../db/sql.ts";
import { arrayOf, bool, int, nullable, row, text, timestamp, type Row } from "../db/rows.ts";

/** A note's columns as {@link noteColumns} selects them, each with its decoder. */
export const noteFields = {
  id: text,
  organization_id: text,
  server_id: nullable(text),
  /** Its server was deleted: owners and admins read it, members do not (migration 0027). */
  managers_only: bool,
  title: text,
  /** Empty in listed rows: lists leave the content out. */
  content: text,
  tags: arrayOf(text),
  author_user_id: nullable(text),
  author_name: nullable(text),
  updated_by_user_id: nullable(text),
  updated_by_name: nullable(text),
  version: int,
  created_at: timestamp,
  updated_at: timestamp,
};
const noteRow = row(noteFields);
export type NoteRow = Row<typeof noteRow>;

/** Servers whose notes the caller sees; null for all of the organization's. */
export type VisibleServers = readonly string[] | null;

/** A note's stored fields; tags are normalized (lower-case, sorted, no duplicates). */
export interface NoteColumns {
  title: string;
  content: string;
  tags: string[];
  serverId: string | null;
}

/** The columns of a NoteRow, from `notes n`; `content` is the empty string unless asked for. */
export function noteColumns(withContent: boolean): Sql {
  return sql`n.id, n.organization_id, n.server_id, n.managers_only, n.title, ${withContent ? sql`n.content` : sql`''::text as content`}, n.tags,
    n.author_user_id, (select coalesce(nullif(u.name, ''), u.email) from users u where u.id = n.author_user_id) as author_name,
    n.updated_by_user_id, (select coalesce(nullif(u.name, ''), u.email) from users u where u.id = n.updated_by_user_id) as updated_by_name,
    n.version, n.created_at, n.updated_at`;
}

/** The condition that a note of `notes n` is visible. */
export function visibleCondition(visible: VisibleServers): Sql {
  if (visible === null) return sql`true`;
  return sql`(not n.managers_only and (n.server_id is null or n.server_id = any(${visible}::uuid[])))`;
}

/** One note of the organization that the caller can see, with its content. */
export function findNote(query: SqlRunner, organizationId: string, noteId: string, visible: VisibleServers): Promise<NoteRow | undefined> {
  return query.one(
    sql`select ${noteColumns(true)} from notes n where n.id = ${noteId} and n.organization_id = ${organizationId} and ${visibleCondition(visible)}`,
    noteRow,
  );
}

const counted = row({ count: int });

export async function countNotes(query: SqlRunner, organizationId: string): Promise<number> {
  const found = await query.one(sql`select count(*) as count from notes where organization_id = ${organizationId}`, counted);
  return found?.count ?? 0;
}

/** Whether the organization has this server (a note may be about it). */
export async function organizationHasServer(query: SqlRunner, organizationId: string, serverId: string): Promise<boolean> {
  const found = await query.one(sql`select 1 as found from servers where id = ${serverId} and organization_id = ${organizationId}`, row({ found: int }));
  return found !== undefined;
}

export async function insertNote(query: SqlRunner, note: { id: string; organizationId: string; authorUserId: string; at: Date } & NoteColumns): Promise<void> {
  await query.run(
    sql`insert into notes (id, organization_id, server_id, title, content, tags, author_user_id, updated_by_user_id, version, created_at, updated_at)
        values (${note.id}, ${note.organizationId}, ${note.serverId}, ${note.title}, ${note.content}, ${note.tags}::text[], ${note.authorUserId}, ${note.authorUserId}, 1, ${note.at}, ${note.at})`,
  );
}

/**
 * Replaces the note's fields if it is still at `version`, moving it to the next version; a
 * concurrent update of the same version waits for the row lock, then finds the version moved
 * and changes nothing. Saving it about a server ends `managers_only`. Returns whether it was updated.
 */
export async function updateNoteIfVersion(
  query: SqlRunner,
  where: { organizationId: string; noteId: string; version: number },
  change: NoteColumns & { updatedByUserId: string; at: Date },
): Promise<boolean> {
  const updated = await query.run(
    sql`update notes set title = ${change.title}, content = ${change.content}, tags = ${change.tags}::text[], server_id = ${change.serverId},
               managers_only = managers_only and ${change.serverId}::uuid is null, updated_by_user_id = ${change.updatedByUserId}, updated_at = ${change.at},
               version = version + 1
         where id = ${where.noteId} and organization_id = ${where.organizationId} and version = ${where.version}`,
  );
  return updated === 1;
}

const deletedNote = row({ title: text, server_id: nullable(text) });

/** Deletes the note; returns its title and server if there was one. */
export function deleteNoteRow(query: SqlRunner, organizationId: string, noteId: string): Promise<Row<typeof deletedNote> | undefined> {
  return query.one(sql`delete from notes where id = ${noteId} and organization_id = ${organizationId} returning title, server_id`, deletedNote);
}

export interface NoteFilters {
  organizationId: string;
  visible: VisibleServers;
  tag?: string;
  serverId?: string;
}

/** The filters' condition on `notes n` (organization, visibility, tag, server). */
export function filterCondition(f: NoteFilters): Sql {
  const parts = [sql`n.organization_id = ${f.organizationId}`, visibleCondition(f.visible)];
  if (f.tag !== undefined) parts.push(sql`n.tags @> array[${f.tag}::text]`);
  if (f.serverId !== undefined) parts.push(sql`n.server_id = ${f.serverId}`);
  return join(parts, " and ");
}

/** A page of notes newest first, after the (created_at, id) position `after` when given. */
export function listNoteRows(query: SqlRunner, f: NoteFilters, limit: number, after?: { createdAt: Date; id: string }): Promise<NoteRow[]> {
  return query.rows(
    sql`select ${noteColumns(false)} from notes n
         where ${filterCondition(f)} ${after ? sql`and (n.created_at, n.id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : empty}
         order by n.created_at desc, n.id desc limit ${limit}`,
    noteRow,
  );
}
