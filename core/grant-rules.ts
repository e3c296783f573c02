/**
 * What a server access grant allows and until when, as plain rules over its stored fields: the
 * actions, the constraints (an expiry, a number of acting uses, a duration after first use) and
 * the state they put a grant in. core/access.ts applies them to every call about a server;
 * core/access-queries.ts repeats the "still live" part in SQL, so spending a use stays atomic.
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AccessGrantState, GrantConstraintsSchema, ServerAction as ActionEnum, type GrantConstraints } from "../gen/outpost/organizations/v1/resources_pb.js";
import { fieldFail, type FieldProblem } from "./errors.ts";
import { parseFileSelector, selectorWithin } from "./file-paths.ts";

/** Every action, in the order they are stored and shown. Every one implies "view"; "files_write" implies "files_read". */
export const serverActions = ["view", "console_read", "console_command", "manage_players", "sign_in_verification", "files_read", "files_write", "lifecycle"] as const;
export type ServerAction = (typeof serverActions)[number];

const toEnum: Record<ServerAction, ActionEnum> = {
  view: ActionEnum.VIEW,
  console_read: ActionEnum.CONSOLE_READ,
  console_command: ActionEnum.CONSOLE_COMMAND,
  manage_players: ActionEnum.MANAGE_PLAYERS,
  sign_in_verification: ActionEnum.SIGN_IN_VERIFICATION,
  files_read: ActionEnum.FILES_READ,
  files_write: ActionEnum.FILES_WRITE,
  lifecycle: ActionEnum.LIFECYCLE,
};

/** Actions that another implies besides "view", and which: changing files needs reading them. */
const impliedBy: Partial<Record<ServerAction, ServerAction>> = { files_read: "files_write" };

/** Stored form of the actions a request names (validation refused UNSPECIFIED), with "view" (and what else they imply) added. */
export function actionsFromProto(actions: readonly ActionEnum[]): ServerAction[] {
  const asked = (a: ServerAction) => actions.includes(toEnum[a]);
  return serverActions.filter((a) => a === "view" || asked(a) || (impliedBy[a] !== undefined && asked(impliedBy[a])));
}

export function actionsToProto(actions: readonly string[]): ActionEnum[] {
  return serverActions.filter((a) => actions.includes(a)).map((a) => toEnum[a]);
}

/** A grant's (or a request's) constraints; null (for file paths: none) does not limit. */
export interface GrantLimits {
  expiresAt: Date | null;
  maxUses: number | null;
  durationSeconds: number | null;
  /** Where the file actions reach: stored selectors (core/file-paths.ts); empty: everywhere. */
  filePaths: string[];
}

/** A grant as the rules read it. */
export interface GrantFacts extends GrantLimits {
  actions: readonly string[];
  uses: number;
  firstUsedAt: Date | null;
}

export type GrantStateName = "active" | "expired" | "used_up";

/** When the grant stops working by time: the earlier of its expiry and its duration after first use. */
export function grantEndsAt(g: GrantFacts): Date | null {
  const afterFirstUse = g.durationSeconds !== null && g.firstUsedAt ? new Date(g.firstUsedAt.getTime() + g.durationSeconds * 1000) : null;
  if (!afterFirstUse) return g.expiresAt;
  return g.expiresAt && g.expiresAt < afterFirstUse ? g.expiresAt : afterFirstUse;
}

export function grantState(g: GrantFacts, now: Date): GrantStateName {
  const endsAt = grantEndsAt(g);
  if (endsAt && endsAt <= now) return "expired";
  if (g.maxUses !== null && g.uses >= g.maxUses) return "used_up";
  return "active";
}

/** Why the grant does not allow `action` now, in words for its holder; undefined when it does. */
export function grantRefusal(g: GrantFacts, action: ServerAction, now: Date): string | undefined {
  const state = grantState(g, now);
  if (state === "expired") return `your access grant to this server expired at ${grantEndsAt(g)!.toISOString()}; ask an owner or admin for a new one`;
  if (state === "used_up") return `your access grant to this server has used all ${g.maxUses} uses; ask an owner or admin for a new one`;
  if (!g.actions.includes(action)) return `your access grant to this server does not allow ${action}; request it from an owner or admin`;
  return undefined;
}

export const stateToProto: Record<GrantStateName, AccessGrantState> = {
  active: AccessGrantState.ACTIVE,
  expired: AccessGrantState.EXPIRED,
  used_up: AccessGrantState.USED_UP,
};

/**
 * The constraints of a create or approve call, checked where protovalidate cannot: an expiry must
 * be in the future (it does not know the service's clock), and each file path must be a selector
 * (core/file-paths.ts `parseFileSelector`), stored normalized and once. Ranges are the proto's.
 */
export function limitsFromProto(c: GrantConstraints | undefined, now: Date): GrantLimits {
  const expiresAt = c?.expiresAt ? timestampDate(c.expiresAt) : null;
  if (expiresAt && expiresAt <= now) throw fieldFail([{ field: "constraints", message: "expires_at must be in the future" }]);
  return { expiresAt, maxUses: c?.maxUses ?? null, durationSeconds: c?.durationSeconds ?? null, filePaths: filePathsFromProto(c?.filePaths ?? []) };
}

/** The selectors of `file_paths`, or every problem with them, on the field `constraints`. */
export function filePathsFromProto(paths: readonly string[]): string[] {
  const selectors: string[] = [];
  const problems: FieldProblem[] = [];
  paths.forEach((text, i) => {
    const parsed = parseFileSelector(text);
    if ("problem" in parsed) problems.push({ field: "constraints", message: `file_paths[${i}] ${JSON.stringify(text)} ${parsed.problem}` });
    else if (!selectors.includes(parsed.selector)) selectors.push(parsed.selector);
  });
  if (problems.length) throw fieldFail(problems);
  return selectors;
}

/** The terms a grant or a request asks for: its actions (view implied) and its limits. */
export function termsFromProto(req: { actions: readonly ActionEnum[]; constraints?: GrantConstraints }, now: Date) {
  return { actions: actionsFromProto(req.actions), ...limitsFromProto(req.constraints, now) };
}

export function limitsToProto(g: GrantLimits): GrantConstraints {
  return create(GrantConstraintsSchema, {
    expiresAt: g.expiresAt ? timestampFromDate(g.expiresAt) : undefined,
    maxUses: g.maxUses ?? undefined,
    durationSeconds: g.durationSeconds ?? undefined,
    filePaths: g.filePaths,
  });
}

/**
 * Why `narrowed` asks for more than `draft` (an approver may only remove actions and tighten
 * constraints: each file path within one asked for, any when none were), and which request field
 * says so; undefined when it does not.
 */
export function wideningProblem(
  draft: GrantLimits & { actions: readonly string[] },
  narrowed: GrantLimits & { actions: readonly string[] },
): { field: "actions" | "constraints"; message: string } | undefined {
  const added = narrowed.actions.filter((a) => !draft.actions.includes(a));
  if (added.length) return { field: "actions", message: `the request did not ask for ${added.join(", ")}` };
  const constraints = (message: string) => ({ field: "constraints" as const, message });
  if (draft.expiresAt && (!narrowed.expiresAt || narrowed.expiresAt > draft.expiresAt)) {
    return constraints(`the request expires at ${draft.expiresAt.toISOString()}; an approval may only keep or bring that forward`);
  }
  if (draft.maxUses !== null && (narrowed.maxUses === null || narrowed.maxUses > draft.maxUses)) {
    return constraints(`the request asked for at most ${draft.maxUses} uses; an approval may only keep or lower that`);
  }
  if (draft.durationSeconds !== null && (narrowed.durationSeconds === null || narrowed.durationSeconds > draft.durationSeconds)) {
    return constraints(`the request asked for at most ${draft.durationSeconds} seconds after first use; an approval may only keep or shorten that`);
  }
  if (!draft.filePaths.length) return undefined;
  const asked = draft.filePaths.join(", ");
  if (!narrowed.filePaths.length) return constraints(`the request asked for files at ${asked} only; an approval may only keep or narrow those paths`);
  const outside = narrowed.filePaths.find((path) => !draft.filePaths.some((wide) => selectorWithin(path, wide)));
  if (outside !== undefined) return constraints(`the file path ${JSON.stringify(outside)} is not within one the request asked for (${asked})`);
  return undefined;
}
