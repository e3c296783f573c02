/**
 * A note's fields: the request's spec checked against the organization (its server) and turned
 * into columns (tags trimmed, lower-cased, checked, deduplicated and sorted), and a row turned
 * back into the proto.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { NoteSchema, type Note, type NoteSpec } from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import type { SqlRunner } from "../db/sql.ts";
import { fieldFail, type FieldProblem } from "../errors.ts";
import { organizationHasServer, type NoteColumns, type NoteRow } from "./note-queries.ts";

const tagShape = /^[a-z0-9-]{1,32}$/;

/** A tag as stored: trimmed and lower-cased (it may still be malformed; see {@link normalizeTags}). */
export const normalizeTag = (tag: string) => tag.trim().toLowerCase();

/** The tags as stored, sorted and without duplicates; a malformed one is invalid_argument naming it. */
export function normalizeTags(tags: readonly string[], field = "spec.tags"): string[] {
  const problems: FieldProblem[] = [];
  const result = new Set<string>();
  tags.forEach((raw, index) => {
    const tag = normalizeTag(raw);
    if (tagShape.test(tag)) result.add(tag);
    else problems.push({ field, index, message: `"${raw}" is not a tag: 1–32 characters of a–z, 0–9 and "-"` });
  });
  if (problems.length) throw fieldFail(problems);
  return [...result].sort();
}

/** Checks `spec` against the organization and returns the note's columns. */
export async function checkSpec(query: SqlRunner, organizationId: string, spec: NoteSpec): Promise<NoteColumns> {
  const tags = normalizeTags(spec.tags);
  if (spec.serverId !== undefined && !(await organizationHasServer(query, organizationId, spec.serverId))) {
    throw fieldFail([{ field: "spec.server_id", message: "no server with this id in the organization" }]);
  }
  return { title: spec.title, content: spec.content, tags, serverId: spec.serverId ?? null };
}

export function noteToProto(row: NoteRow): Note {
  return create(NoteSchema, {
    id: row.id,
    organizationId: row.organization_id,
    spec: { title: row.title, content: row.content, tags: row.tags, serverId: row.server_id ?? undefined },
    author: { userId: row.author_user_id ?? "", name: row.author_name ?? "" },
    updatedBy: { userId: row.updated_by_user_id ?? "", name: row.updated_by_name ?? "" },
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
    version: row.version,
    managersOnly: row.managers_only,
  });
}
