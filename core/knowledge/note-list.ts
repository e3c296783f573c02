/**
 * knowledge/listNotes: the notes a member can see, filtered by tag and server; newest first with
 * the shared page cursor, or, with `search`, ranked by full-text search (search.ts) with a
 * cursor of its own on (rank, id).
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { KnowledgeService, ListNotesResponseSchema } from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { requireMember, visibleServerIds } from "../access.ts";
import { decodeCursor, pageOf } from "../page-cursor.ts";
import { normalizeTag, noteToProto } from "./note-fields.ts";
import { listNoteRows, type NoteFilters } from "./note-queries.ts";
import { decodeSearchCursor, encodeSearchCursor, searchNotes } from "./search.ts";

type Impl = ServiceImpl<typeof KnowledgeService>;

export const listNotes =
  (deps: Pick<CoreDeps, "clock" | "statements">): Impl["listNotes"] =>
  async (req, ctx) => {
    const em = entityManager(ctx);
    const caller = requireUser(ctx);
    const access = await requireMember(em, caller, req.organizationSlug);
    const limit = req.limit ?? 20;
    const query = deps.statements.on(em);
    const filters: NoteFilters = {
      organizationId: access.organization.id,
      visible: await visibleServerIds(query, caller, access, deps.clock.now()),
      tag: req.tag === undefined ? undefined : normalizeTag(req.tag),
      serverId: req.serverId,
    };
    const text = req.search?.trim();
    if (text) {
      const after = req.cursor === undefined ? undefined : decodeSearchCursor(req.cursor);
      const hits = await searchNotes(query, { ...filters, text, limit: limit + 1, after });
      const page = hits.slice(0, limit);
      return create(ListNotesResponseSchema, {
        notes: page.map((hit) => ({ note: noteToProto(hit), snippet: hit.snippet, rank: hit.rank })),
        nextCursor: hits.length > limit ? encodeSearchCursor(page.at(-1)!.position) : "",
      });
    }
    const after = req.cursor === undefined ? undefined : decodeCursor(req.cursor);
    const rows = await listNoteRows(query, filters, limit + 1, after);
    const { page, nextCursor } = pageOf(rows, limit);
    return create(ListNotesResponseSchema, {
      notes: page.map((row) => ({ note: noteToProto(row) })),
      nextCursor,
    });
  };
