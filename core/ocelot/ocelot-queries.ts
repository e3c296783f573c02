/**
 * The assistant's SQL (`?` placeholders): its settings row, the daily usage counters and the
 * gate's tool actions. Every time and UTC day here is the database's (`now()`), so all instances
 * agree on when a token expires and which day a use counts against.
 */
import type { Query } from "../db/statements.ts";
import type { ToolFamily } from "./tools.ts";

export type ResponseStyleName = "concise" | "detailed" | "friendly";

/** An organization's stored settings; the switches carry who set them. */
export interface ConfigRow extends Record<ToolFamily, boolean> {
  organization_id: string;
  enabled: boolean;
  daily_query_cap: number;
  response_style: ResponseStyleName;
  custom_instructions: string;
  emergency_stop: boolean;
  emergency_stop_by: string | null;
  emergency_stop_by_email: string | null;
  emergency_stop_at: Date | null;
  break_glass: boolean;
  break_glass_by: string | null;
  break_glass_by_email: string | null;
  break_glass_at: Date | null;
  break_glass_expires_at: Date | null;
  /** Whether break-glass is on now: its expiry not passed by the database's clock at the read. */
  break_glass_active: boolean;
  version: number;
  updated_at: Date | null;
}

/** An organization's settings before anyone saved them: on, read-only families only. */
export function defaultConfig(organizationId: string): ConfigRow {
  return {
    organization_id: organizationId,
    enabled: true,
    console_read: true,
    console_command: false,
    players: true,
    knowledge_read: true,
    knowledge_write: false,
    server_lifecycle: false,
    files: false,
    daily_query_cap: 0,
    response_style: "concise",
    custom_instructions: "",
    emergency_stop: false,
    emergency_stop_by: null,
    emergency_stop_by_email: null,
    emergency_stop_at: null,
    break_glass: false,
    break_glass_by: null,
    break_glass_by_email: null,
    break_glass_at: null,
    break_glass_expires_at: null,
    break_glass_active: false,
    version: 0,
    updated_at: null,
  };
}

const selectConfig = `select c.*, se.email as emergency_stop_by_email, sb.email as break_glass_by_email,
        coalesce(c.break_glass and c.break_glass_expires_at > now(), false) as break_glass_active
   from ocelot_configs c
   left join users se on se.id = c.emergency_stop_by
   left join users sb on sb.id = c.break_glass_by
  where c.organization_id = ?`;

/** The organization's settings (the defaults when it has no row); `lock` holds its row until the transaction ends. */
export async function readConfig(query: Query, organizationId: string, lock = false): Promise<ConfigRow> {
  if (lock) await query(`select 1 from ocelot_configs where organization_id = ? for update`, [organizationId]);
  const [row] = await query<ConfigRow>(selectConfig, [organizationId]);
  return row ?? defaultConfig(organizationId);
}

/** Makes sure the organization has a settings row (the defaults) so it can be locked and updated. */
export async function ensureConfigRow(query: Query, organizationId: string): Promise<void> {
  const d = defaultConfig(organizationId);
  await query(
    `insert into ocelot_configs (organization_id, enabled, console_read, console_command, players, knowledge_read, knowledge_write, server_lifecycle, files, updated_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, now()) on conflict (organization_id) do nothing`,
    [organizationId, d.enabled, d.console_read, d.console_command, d.players, d.knowledge_read, d.knowledge_write, d.server_lifecycle, d.files],
  );
}

export interface SettingsColumns extends Record<ToolFamily, boolean> {
  enabled: boolean;
  daily_query_cap: number;
  response_style: ResponseStyleName;
  custom_instructions: string;
}

/**
 * Writes the settings if the row is still at `version`, and bumps it; false when another change
 * came first. Switch columns are written by {@link setSwitch}.
 */
export async function writeSettings(query: Query, organizationId: string, version: number, s: SettingsColumns): Promise<boolean> {
  const rows = await query(
    `update ocelot_configs set enabled = ?, console_read = ?, console_command = ?, players = ?, knowledge_read = ?, knowledge_write = ?,
            server_lifecycle = ?, files = ?, daily_query_cap = ?, response_style = ?, custom_instructions = ?, version = version + 1, updated_at = now()
      where organization_id = ? and version = ? returning 1`,
    [s.enabled, s.console_read, s.console_command, s.players, s.knowledge_read, s.knowledge_write, s.server_lifecycle, s.files, s.daily_query_cap, s.response_style, s.custom_instructions, organizationId, version],
  );
  return rows.length === 1;
}

/** Turns the emergency stop on or off; true if it changed. */
export async function setEmergencyStop(query: Query, organizationId: string, on: boolean, userId: string): Promise<boolean> {
  const rows = await query(
    `update ocelot_configs set emergency_stop = ?, emergency_stop_by = ?, emergency_stop_at = now(), version = version + 1, updated_at = now()
      where organization_id = ? and emergency_stop <> ? returning 1`,
    [on, userId, organizationId, on],
  );
  return rows.length === 1;
}

/** Turns break-glass on for `minutes` or off; true if it changed (turning it on again keeps its expiry). */
export async function setBreakGlass(query: Query, organizationId: string, on: boolean, minutes: number, userId: string): Promise<boolean> {
  const rows = await query(
    `update ocelot_configs set break_glass = ?, break_glass_by = ?, break_glass_at = now(),
            break_glass_expires_at = case when ? then now() + make_interval(mins => ?) else null end, version = version + 1, updated_at = now()
      where organization_id = ? and (break_glass and break_glass_expires_at > now()) <> ? returning 1`,
    [on, userId, on, minutes, organizationId, on],
  );
  return rows.length === 1;
}

/**
 * Turns off a break-glass whose time is up; true for the one caller that did (it records the
 * event). Whoever reads the settings for a decision calls this first.
 */
export async function expireBreakGlass(query: Query, organizationId: string): Promise<boolean> {
  const rows = await query(
    `update ocelot_configs set break_glass = false, break_glass_by = null, break_glass_at = now(), break_glass_expires_at = null, version = version + 1, updated_at = now()
      where organization_id = ? and break_glass and break_glass_expires_at <= now() returning 1`,
    [organizationId],
  );
  return rows.length === 1;
}

export interface UsageRow {
  day: string;
  queries: number;
  tool_actions: number;
}

/** Today's counters (UTC, by the database's clock), 0 when nothing was counted yet. */
export async function todaysUsage(query: Query, organizationId: string): Promise<UsageRow> {
  const [row] = await query<UsageRow>(
    `select d.day::text as day, coalesce(u.queries, 0) as queries, coalesce(u.tool_actions, 0) as tool_actions
       from (select (now() at time zone 'utc')::date as day) d
       left join ocelot_daily_usage u on u.organization_id = ? and u.day = d.day`,
    [organizationId],
  );
  return row;
}

/**
 * Adds `amount` to today's counter if it stays within `cap`, in one conditional update (the row
 * lock orders concurrent callers, each sees the others' additions); the day it counted against,
 * or undefined when the cap would be passed.
 */
export async function reserveUsage(query: Query, organizationId: string, counter: "queries" | "tool_actions", amount: number, cap: number): Promise<string | undefined> {
  await query(`insert into ocelot_daily_usage (organization_id, day) values (?, (now() at time zone 'utc')::date) on conflict do nothing`, [organizationId]);
  const [row] = await query<{ day: string }>(
    `update ocelot_daily_usage set ${counter} = ${counter} + ?
      where organization_id = ? and day = (now() at time zone 'utc')::date and ${counter} + ? <= ? returning day::text as day`,
    [amount, organizationId, amount, cap],
  );
  return row?.day;
}

/** Gives back what {@link reserveUsage} took, to the day it was taken from. */
export async function releaseUsage(query: Query, organizationId: string, day: string, counter: "queries" | "tool_actions", amount: number): Promise<void> {
  await query(`update ocelot_daily_usage set ${counter} = greatest(${counter} - ?, 0) where organization_id = ? and day = ?::date`, [amount, organizationId, day]);
}
