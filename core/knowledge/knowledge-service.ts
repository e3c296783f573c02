/**
 * KnowledgeService: an organization's notes. Every member reads the notes they can see (about no
 * server, or about a server they see); owners and admins write. Updates are optimistic: the
 * caller names the version it read, and a conditional UPDATE refuses a stale one
 * (version_conflict). Each change is an activity event in the change's transaction; the plan
 * limits the note count (reservePlanCapacity locks the organization while counting).
 */
import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  CreateNoteResponseSchema,
  DeleteNoteResponseSchema,
  GetNoteResponseSchema,
  KnowledgeService,
  UpdateNoteResponseSchema,
} from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { requireManager, requireMember, reservePlanCapacity, visibleServerIds } from "../access.ts";
import { inTransaction } from "../db/sql.ts";
import { recordActivity } from "../activity/record.ts";
import { checkSpec, noteToProto } from "./note-fields.ts";
import { countNotes, deleteNoteRow, findNote, insertNote, updateNoteIfVersion } from "./note-queries.ts";
import { listNotes } from "./note-list.ts";

type Impl = ServiceImpl<typeof KnowledgeService>;

type Verb = "created" | "updated" | "deleted";

function activity(
  tx: EntityManager,
  caller: UserCaller,
  note: { id: string; organizationId: string; serverId: string | null; title: string; version?: number },
  verb: Verb,
) {
  recordActivity(tx, caller, {
    action: `knowledge.note_${verb}`,
    targetType: "note",
    targetId: note.id,
    organizationId: note.organizationId,
    serverId: note.serverId,
    details: { title: note.title, ...(note.version === undefined ? {} : { version: String(note.version) }) },
  });
}

const getNote =
  (deps: CoreDeps): Impl["getNote"] =>
  async (req, ctx) => {
    const em = entityManager(ctx);
    const caller = requireUser(ctx);
    const access = await requireMember(em, caller, req.organizationSlug);
    const query = deps.statements.on(em);
    const row = await findNote(query, access.organization.id, req.noteId, await visibleServerIds(query, caller, access, deps.clock.now()));
    if (!row) throw fail("not_found", "note not found");
    return create(GetNoteResponseSchema, { note: noteToProto(row) });
  };

const createNote =
  (deps: CoreDeps): Impl["createNote"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const query = inTransaction(tx);
      const access = await requireManager(tx, caller, req.organizationSlug);
      const organizationId = access.organization.id;
      const columns = await checkSpec(query, organizationId, req.spec!);
      await reservePlanCapacity(tx, deps.config, organizationId, "notes", () => countNotes(query, organizationId));
      const id = randomUUID();
      await insertNote(query, { id, organizationId, authorUserId: caller.user.id, at: deps.clock.now(), ...columns });
      activity(tx, caller, { id, organizationId, serverId: columns.serverId, title: columns.title }, "created");
      await tx.flush();
      const row = await findNote(query, organizationId, id, null);
      return create(CreateNoteResponseSchema, { note: noteToProto(row!) });
    });
  };

const updateNote =
  (deps: CoreDeps): Impl["updateNote"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const query = inTransaction(tx);
      const access = await requireManager(tx, caller, req.organizationSlug);
      const organizationId = access.organization.id;
      const columns = await checkSpec(query, organizationId, req.spec!);
      const where = { organizationId, noteId: req.noteId, version: req.version };
      if (!(await updateNoteIfVersion(query, where, { ...columns, updatedByUserId: caller.user.id, at: deps.clock.now() }))) {
        const current = await findNote(query, organizationId, req.noteId, null);
        if (!current) throw fail("not_found", "note not found");
        throw fail(
          "version_conflict",
          `the note was changed since version ${req.version} was read (it is at version ${current.version}): read it again and reapply your change`,
        );
      }
      const row = (await findNote(query, organizationId, req.noteId, null))!;
      activity(tx, caller, { id: row.id, organizationId, serverId: row.server_id, title: row.title, version: row.version }, "updated");
      await tx.flush();
      return create(UpdateNoteResponseSchema, { note: noteToProto(row) });
    });
  };

const deleteNote: Impl["deleteNote"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  await entityManager(ctx).transactional(async (tx) => {
    const access = await requireManager(tx, caller, req.organizationSlug);
    const organizationId = access.organization.id;
    const gone = await deleteNoteRow(inTransaction(tx), organizationId, req.noteId);
    if (!gone) throw fail("not_found", "note not found");
    activity(tx, caller, { id: req.noteId, organizationId, serverId: gone.server_id, title: gone.title }, "deleted");
    await tx.flush();
  });
  return create(DeleteNoteResponseSchema, {});
};

export function createKnowledgeService(deps: CoreDeps): Impl {
  return { listNotes: listNotes(deps), getNote: getNote(deps), createNote: createNote(deps), updateNote: updateNote(deps), deleteNote };
}
