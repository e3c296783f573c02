/**
 * The notes' plain SQL, always within one organization. Visibility is a list of server ids the
 * caller may see (`null`: every server, for owners and admins): a note about no server is seen by
 * every member, a note about a server only by those who see the server, and a note whose server
 * was deleted (`managers_only`) by owners and admins only.
 */
import type { Query } from "../db/statements.ts";

export interface NoteRow {
  id: string;
  organization_id: string;
  server_id: string | null;
  /** Its server was deleted: owners and admins read it, members do not (migration 0027). */
  managers_only: boolean;
  title: string;
  /** Empty in listed rows: lists leave the content out. */
  content: string;
  tags: string[];
  author_user_id: string | null;
  author_name: string | null;
  updated_by_user_id: string | null;
  updated_by_name: string | null;
  version: number;
  created_at: Date | string;
  updated_at: Date | string;
}

/** Servers whose notes the caller sees; null for all of the organization's. */
export type VisibleServers = readonly string[] | null;

/** A note's stored fields; tags are normalized (no commas: they travel joined by one). */
export interface NoteColumns {
  title: string;
  content: string;
  tags: string[];
  serverId: string | null;
}

const person = (column: string, alias: string) =>
  `(select coalesce(nullif(u.name, ''), u.email) from users u where u.id = ${column}) as ${alias}`;

/** The columns of a NoteRow, from `notes n`; `content` is the empty string unless asked for. */
export function noteColumns(withContent: boolean): string {
  return `n.id, n.organization_id, n.server_id, n.managers_only, n.title, ${withContent ? "n.content" : "''::text as content"}, n.tags,
    n.author_user_id, ${person("n.author_user_id", "author_name")}, n.updated_by_user_id, ${person("n.updated_by_user_id", "updated_by_name")},
    n.version, n.created_at, n.updated_at`;
}

/** The condition that a note of `notes n` is visible, and its values. */
export function visibleCondition(visible: VisibleServers): { sql: string; values: unknown[] } {
  if (visible === null) return { sql: "true", values: [] };
  return { sql: "(not n.managers_only and (n.server_id is null or n.server_id = any(string_to_array(?, ',')::uuid[])))", values: [visible.join(",")] };
}

/** One note of the organization that the caller can see, with its content. */
export async function findNote(query: Query, organizationId: string, noteId: string, visible: VisibleServers): Promise<NoteRow | undefined> {
  const v = visibleCondition(visible);
  const rows = await query<NoteRow>(`select ${noteColumns(true)} from notes n where n.id = ? and n.organization_id = ? and ${v.sql}`, [
    noteId,
    organizationId,
    ...v.values,
  ]);
  return rows[0];
}

export async function countNotes(query: Query, organizationId: string): Promise<number> {
  const rows = await query<{ count: string | number }>(`select count(*) as count from notes where organization_id = ?`, [organizationId]);
  return Number(rows[0].count);
}

export async function insertNote(query: Query, row: { id: string; organizationId: string; authorUserId: string; at: Date } & NoteColumns): Promise<void> {
  await query(
    `insert into notes (id, organization_id, server_id, title, content, tags, author_user_id, updated_by_user_id, version, created_at, updated_at)
     values (?, ?, ?, ?, ?, string_to_array(?, ','), ?, ?, 1, ?, ?)`,
    [row.id, row.organizationId, row.serverId, row.title, row.content, row.tags.join(","), row.authorUserId, row.authorUserId, row.at, row.at],
  );
}

/**
 * Replaces the note's fields if it is still at `version`, moving it to the next version; a
 * concurrent update of the same version waits for the row lock, then finds the version moved
 * and changes nothing. Saving it about a server ends `managers_only`. Returns whether it was updated.
 */
export async function updateNoteIfVersion(
  query: Query,
  where: { organizationId: string; noteId: string; version: number },
  change: NoteColumns & { updatedByUserId: string; at: Date },
): Promise<boolean> {
  const rows = await query(
    `update notes set title = ?, content = ?, tags = string_to_array(?, ','), server_id = ?, managers_only = managers_only and ?::uuid is null,
            updated_by_user_id = ?, updated_at = ?, version = version + 1
     where id = ? and organization_id = ? and version = ? returning id`,
    [change.title, change.content, change.tags.join(","), change.serverId, change.serverId, change.updatedByUserId, change.at, where.noteId, where.organizationId, where.version],
  );
  return rows.length === 1;
}

/** Deletes the note; returns its title and server if there was one. */
export async function deleteNoteRow(query: Query, organizationId: string, noteId: string): Promise<{ title: string; server_id: string | null } | undefined> {
  const rows = await query<{ title: string; server_id: string | null }>(
    `delete from notes where id = ? and organization_id = ? returning title, server_id`,
    [noteId, organizationId],
  );
  return rows[0];
}

export interface NoteFilters {
  organizationId: string;
  visible: VisibleServers;
  tag?: string;
  serverId?: string;
}

/** The filters' condition on `notes n` and its values (organization, visibility, tag, server). */
export function filterCondition(f: NoteFilters): { sql: string; values: unknown[] } {
  const v = visibleCondition(f.visible);
  const parts = ["n.organization_id = ?", v.sql];
  const values: unknown[] = [f.organizationId, ...v.values];
  if (f.tag !== undefined) {
    parts.push("n.tags @> array[?::text]");
    values.push(f.tag);
  }
  if (f.serverId !== undefined) {
    parts.push("n.server_id = ?");
    values.push(f.serverId);
  }
  return { sql: parts.join(" and "), values };
}

/** A page of notes newest first, after the (created_at, id) position `after` when given. */
export function listNoteRows(query: Query, f: NoteFilters, limit: number, after?: { createdAt: Date; id: string }): Promise<NoteRow[]> {
  const c = filterCondition(f);
  const position = after ? "and (n.created_at, n.id) < (?::timestamptz, ?::uuid)" : "";
  return query(
    `select ${noteColumns(false)} from notes n where ${c.sql} ${position} order by n.created_at desc, n.id desc limit ?`,
    [...c.values, ...(after ? [after.createdAt, after.id] : []), limit],
  );
}
