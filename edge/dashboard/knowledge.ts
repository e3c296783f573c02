/**
 * An organization's notes, the routes and forms: write a note (or preview it), edit one from the
 * version it was read at (a conflict keeps the typed text and shows the newer version), delete
 * one. Each action: read the form → call core → the next page. The pages are in knowledge-views.ts.
 */
import type { Router } from "@koa/router";
import { Code, ConnectError } from "@connectrpc/connect";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { NoteSpec, NoteSpecSchema } from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { action, confirmed, done, page, type ActionHandler, type DashboardDeps } from "./context.ts";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { jsonName } from "../errors.ts";
import { editPage, emptyNote, notePage, notePath, notesPage, writableKnowledge, type NoteValues } from "./knowledge-views.ts";

/** Parse: the form's values as typed. */
function readNoteForm(form: URLSearchParams): NoteValues {
  return {
    title: (form.get("title") ?? "").trim(),
    content: form.get("content") ?? "",
    tags: form.get("tags") ?? "",
    serverId: form.get("serverId") ?? "",
    version: Math.trunc(Number(form.get("version") ?? "0")) || 0,
  };
}

function specOf(values: NoteValues): MessageInitShape<typeof NoteSpecSchema> {
  return {
    title: values.title,
    content: values.content.replace(/\r\n?/g, "\n"),
    tags: values.tags
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean),
    serverId: values.serverId || undefined,
  };
}

/** The refusal next to the field it names (title, content, tags, server), whatever its depth under `spec`. */
function noteFormErrors(error: unknown): FormErrors {
  const [violations] = error instanceof ConnectError ? error.findDetails(ViolationsSchema) : [];
  if (!violations?.violations.length) return formErrorsOrThrow(error);
  const result: FormErrors = { fields: {}, form: [] };
  for (const v of violations.violations) {
    const path = (v.field?.elements ?? [])
      .map((e) => e.fieldName)
      .join(".")
      .split(".");
    const field = jsonName(path.at(-1) ?? "");
    const index = v.field?.elements.find((e) => e.subscript.case === "index")?.subscript.value;
    const text = index === undefined ? v.message : `Tag ${Number(index) + 1}: ${v.message}`;
    if (["title", "content", "tags", "serverId"].includes(field)) (result.fields[field] ??= []).push(text);
    else result.form.push(text);
  }
  return result;
}

const createNote: ActionHandler = async (ctx, v, form) => {
  const org = writableKnowledge(v, ctx.params.slug);
  const values = readNoteForm(form);
  if (form.get("intent") === "preview") return editPage(ctx, v, values, undefined, { preview: true });
  try {
    const { note } = await v.core.knowledge.createNote({ organizationSlug: org.slug, spec: specOf(values) });
    done(ctx, notePath(org, note!.id), "note-created");
  } catch (error) {
    await editPage(ctx, v, values, undefined, { errors: noteFormErrors(error) }, 400);
  }
};

const updateNote: ActionHandler = async (ctx, v, form) => {
  const org = writableKnowledge(v, ctx.params.slug);
  const noteId = ctx.params.noteId;
  const values = readNoteForm(form);
  if (form.get("intent") === "preview") return editPage(ctx, v, values, noteId, { preview: true });
  try {
    await v.core.knowledge.updateNote({ organizationSlug: org.slug, noteId, version: values.version, spec: specOf(values) });
    done(ctx, notePath(org, noteId), "note-saved");
  } catch (error) {
    if (!(error instanceof ConnectError && error.code === Code.Aborted)) {
      return editPage(ctx, v, values, noteId, { errors: noteFormErrors(error) }, 400);
    }
    // Someone saved first: keep what was typed, show theirs, and let a second save be a choice.
    const { note } = await v.core.knowledge.getNote({ organizationSlug: org.slug, noteId });
    await editPage(ctx, v, { ...values, version: note!.version }, noteId, { conflict: note }, 409);
  }
};

const deleteNote: ActionHandler = async (ctx, v, form) => {
  const org = writableKnowledge(v, ctx.params.slug);
  const noteId = ctx.params.noteId;
  if (
    !confirmed(ctx, v, form, {
      title: "Delete this note?",
      consequence: "It is gone for everyone. This cannot be undone.",
      label: "Delete note",
      cancel: notePath(org, noteId),
      org,
    })
  )
    return;
  await v.core.knowledge.deleteNote({ organizationSlug: org.slug, noteId });
  done(ctx, notePath(org), "note-deleted");
};

export function knowledgeRoutes(router: Router, deps: DashboardDeps): void {
  router.get("/app/o/:slug/knowledge", page(deps, notesPage));
  router.get(
    "/app/o/:slug/knowledge/new",
    page(deps, (ctx, v) => editPage(ctx, v, emptyNote, undefined)),
  );
  router.get("/app/o/:slug/knowledge/:noteId", page(deps, notePage));
  router.get(
    "/app/o/:slug/knowledge/:noteId/edit",
    page(deps, async (ctx, v) => {
      const org = writableKnowledge(v, ctx.params.slug);
      const { note } = await v.core.knowledge.getNote({ organizationSlug: org.slug, noteId: ctx.params.noteId });
      const s: NoteSpec = note!.spec!;
      await editPage(ctx, v, { title: s.title, content: s.content, tags: s.tags.join(", "), serverId: s.serverId ?? "", version: note!.version }, note!.id);
    }),
  );
  router.post("/app/o/:slug/knowledge", action(deps, createNote));
  router.post("/app/o/:slug/knowledge/:noteId", action(deps, updateNote));
  router.post("/app/o/:slug/knowledge/:noteId/delete", action(deps, deleteNote));
}
