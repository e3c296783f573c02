/**
 * The organization's notes as the assistant's usage shows them. Notes belong to the knowledge
 * router; until it is part of this build there are none, and no limit to show.
 */
import type { Db } from "../db/statements.ts";
import type { PlanLimits } from "../deps.ts";

export interface NoteUsage {
  notes: number;
  limit: number;
}

/** Notes kept by the organization and the plan's limit on them. */
export async function noteUsage(_db: Db, _organizationId: string, _limits: PlanLimits): Promise<NoteUsage> {
  return { notes: 0, limit: 0 };
}
