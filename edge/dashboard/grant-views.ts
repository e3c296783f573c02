/**
 * Grants and access requests as the dashboard shows and edits them: the actions a grant allows,
 * its constraints and state in words, and the fields that set them (the grant form, the request
 * form and the narrowing of an approval share them).
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AccessGrantState, GrantConstraintsSchema, ServerAction, type AccessGrant, type GrantConstraints } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { utcText, when } from "./format.ts";
import { choiceGroup, textArea, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";

const actionLabels: ReadonlyArray<{ action: ServerAction; value: string; label: string; hint: string }> = [
  { action: ServerAction.VIEW, value: "view", label: "View", hint: "See the server, its status and players (every action includes it)." },
  { action: ServerAction.CONSOLE_READ, value: "console_read", label: "Read the console", hint: "Watch the live console output." },
  { action: ServerAction.CONSOLE_COMMAND, value: "console_command", label: "Run console commands", hint: "Each command counts as a use." },
  { action: ServerAction.MANAGE_PLAYERS, value: "manage_players", label: "Manage players", hint: "Reserved for player administration; nothing uses it yet." },
  {
    action: ServerAction.SIGN_IN_VERIFICATION,
    value: "sign_in_verification",
    label: "Sign-in activity",
    hint: "See the server's Game OAuth sign-in activity (not shown anywhere yet).",
  },
  { action: ServerAction.FILES_READ, value: "files_read", label: "Read files", hint: "List and read the server's files, within the file paths below." },
  {
    action: ServerAction.FILES_WRITE,
    value: "files_write",
    label: "Change files",
    hint: "Write, create, move and delete files within the file paths below; includes reading them.",
  },
  { action: ServerAction.LIFECYCLE, value: "lifecycle", label: "Start and stop", hint: "Start, stop, restart and kill the server. Each counts as a use." },
];

/** The actions, in words. */
export function actionNames(actions: readonly ServerAction[]): string {
  return actionLabels
    .filter((a) => actions.includes(a.action))
    .map((a) => a.label.toLowerCase())
    .join(", ");
}

/** The constraints, in words ("no limits" when none). */
export function constraintWords(c: GrantConstraints | undefined): string {
  const parts = [
    c?.expiresAt ? `expires ${utcText(timestampDate(c.expiresAt))}` : "",
    c?.maxUses !== undefined ? `at most ${c.maxUses} uses` : "",
    c?.durationSeconds !== undefined ? `${Math.round(c.durationSeconds / 60)} min after first use` : "",
    c?.filePaths.length ? `files: ${c.filePaths.join(", ")}` : "",
  ].filter(Boolean);
  return parts.length ? parts.join(" · ") : "no limits";
}

const stateNames: Record<AccessGrantState, string> = {
  [AccessGrantState.UNSPECIFIED]: "unknown",
  [AccessGrantState.ACTIVE]: "Active",
  [AccessGrantState.EXPIRED]: "Expired",
  [AccessGrantState.USED_UP]: "Used up",
};

/** A grant's actions, constraints, uses and state. */
export function grantSummary(g: AccessGrant): Html {
  const uses = g.constraints?.maxUses !== undefined ? `${g.uses} of ${g.constraints.maxUses} uses` : `${g.uses} uses`;
  return html`<span class="badge">${stateNames[g.state]}</span> ${actionNames(g.actions)} <span class="muted">(${constraintWords(g.constraints)}; ${uses}${
    g.firstUsedAt ? html`; first used ${when(g.firstUsedAt)}` : ""
  })</span>`;
}

/** What a grant form holds, as typed. */
export interface TermsValues {
  actions: string[];
  /** An expiry kept as asked (an approval's form), ISO; `expiresInHours` overrides it. */
  expiresAt?: string;
  expiresInHours: string;
  maxUses: string;
  durationMinutes: string;
  /** The file paths, one a line. */
  filePaths: string;
}

export const defaultTerms: TermsValues = { actions: ["view"], expiresInHours: "", maxUses: "", durationMinutes: "", filePaths: "" };

/** An approval's form, filled in with what the request asked for. */
export function termsFromDraft(actions: readonly ServerAction[], c: GrantConstraints | undefined): TermsValues {
  return {
    actions: actionLabels.filter((a) => actions.includes(a.action)).map((a) => a.value),
    expiresAt: c?.expiresAt ? new Date(Number(c.expiresAt.seconds) * 1000).toISOString() : undefined,
    expiresInHours: "",
    maxUses: c?.maxUses === undefined ? "" : String(c.maxUses),
    durationMinutes: c?.durationSeconds === undefined ? "" : String(c.durationSeconds / 60),
    filePaths: (c?.filePaths ?? []).join("\n"),
  };
}

export function termsValuesOf(form: URLSearchParams): TermsValues {
  return {
    actions: form.getAll("actions"),
    expiresAt: form.get("expiresAt") || undefined,
    expiresInHours: (form.get("expiresInHours") ?? "").trim(),
    maxUses: (form.get("maxUses") ?? "").trim(),
    durationMinutes: (form.get("durationMinutes") ?? "").trim(),
    filePaths: form.get("filePaths") ?? "",
  };
}

/** The request fields for the typed values, or the form's errors (numbers that are not numbers). */
/** What a terms form gives core: the actions and the constraints. */
export type Terms = { actions: ServerAction[]; constraints: GrantConstraints };

export function termsOf(values: TermsValues, now: Date): Terms | FormErrors {
  const number = (text: string) => (text === "" ? undefined : /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN);
  const hours = number(values.expiresInHours);
  const kept = values.expiresAt && hours === undefined ? new Date(values.expiresAt) : undefined;
  if (kept && Number.isNaN(kept.getTime())) return { fields: { constraints: ["The expiry asked for is not a date."] }, form: [] };
  const maxUses = number(values.maxUses);
  const minutes = number(values.durationMinutes);
  if ([hours, maxUses, minutes].some((n) => Number.isNaN(n))) return { fields: { constraints: ["Limits must be positive numbers, or empty for no limit."] }, form: [] };
  return {
    actions: actionLabels.filter((a) => values.actions.includes(a.value)).map((a) => a.action),
    constraints: create(GrantConstraintsSchema, {
      expiresAt: hours !== undefined ? timestampFromDate(new Date(now.getTime() + hours * 3_600_000)) : kept && timestampFromDate(kept),
      maxUses: maxUses === undefined ? undefined : Math.round(maxUses),
      durationSeconds: minutes === undefined ? undefined : Math.round(minutes * 60),
      filePaths: values.filePaths
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter(Boolean),
    }),
  };
}

/** The action checkboxes and the limit fields; `id` keeps several forms on one page apart. */
export function termsFields(values: TermsValues, errors: FormErrors | undefined, id: string): Html {
  return html`${choiceGroup({
    name: "actions",
    legend: "Actions",
    type: "checkbox",
    options: actionLabels.map((a) => ({ value: a.value, label: a.label, hint: a.hint })),
    checked: new Set(values.actions),
    errors,
    id: `${id}-actions`,
  })}
<fieldset class="field choices${errors?.fields.constraints ? " invalid" : ""}" id="${id}-limits"${errors?.fields.constraints ? html` aria-describedby="${id}-limits-error"` : ""}>
<legend>Limits (empty: none)</legend>
${errors?.fields.constraints ? html`<p class="field-error" id="${id}-limits-error">${errors.fields.constraints.join(" ")}</p>` : ""}
${values.expiresAt ? html`<input type="hidden" name="expiresAt" value="${values.expiresAt}">` : ""}
${textField({
  name: "expiresInHours",
  label: values.expiresAt ? "Expire sooner, in (hours)" : "Expires in (hours)",
  value: values.expiresInHours,
  id: `${id}-expires`,
  hint: values.expiresAt ? `As asked, it expires ${values.expiresAt.slice(0, 16).replace("T", " ")} UTC.` : undefined,
})}
${textField({ name: "maxUses", label: "Maximum uses (1 to 1,000,000)", value: values.maxUses, id: `${id}-uses`, hint: "A console command or opening the console is a use; viewing is not." })}
${textField({ name: "durationMinutes", label: "Lasts after first use (minutes, 1 to 525,600)", value: values.durationMinutes, id: `${id}-duration` })}
${textArea({
  name: "filePaths",
  label: "File paths (one a line; empty: every file)",
  value: values.filePaths,
  id: `${id}-files`,
  hint: "For reading and changing files only. A folder covers everything in it (plugins/Essentials); globs work too (plugins/*.jar).",
})}
</fieldset>`;
}

/** A refused grant or request form, back with what was typed. */
export interface TermsForm {
  values: TermsValues;
  errors: FormErrors;
  reason?: string;
}

/**
 * A grant-terms form's submission (a grant, a request, an approval): true once `send` took the
 * terms; otherwise `refused` shows the form again with what was typed and what is wrong with it
 * (core's refusals with a reason that `reasonFields` maps to a field are shown on that field).
 */
export async function submitTerms(
  form: URLSearchParams,
  send: (terms: Terms) => Promise<unknown>,
  refused: (values: TermsValues, errors: FormErrors) => unknown,
  reasonFields?: Record<string, string>,
): Promise<boolean> {
  const values = termsValuesOf(form);
  const terms = termsOf(values, new Date());
  if ("fields" in terms) {
    await refused(values, terms);
    return false;
  }
  try {
    await send(terms);
    return true;
  } catch (error) {
    await refused(values, formErrorsOrThrow(error, reasonFields));
    return false;
  }
}
