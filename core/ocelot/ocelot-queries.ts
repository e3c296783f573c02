/**
 * The assistant's SQL: its settings row, the daily usage counters and the gate's tool actions.
 * Every time and UTC day here is the database's (`now()`), so all instances agree on when a token
 * expires and which day a use counts against.
 */
import { sql, type Sql, type SqlRunner } from "../db/sql.ts";
import { bool, int, nullable, row, text, timestamp, type Decode, type Row } from "../db/rows.ts";
import type { ToolFamily } from "./tools.ts";

const responseStyles = ["concise", "detailed", "friendly"] as const;
export type ResponseStyleName = (typeof responseStyles)[number];

/**
 * A stored style; one this version does not know (the column has no check) reads as concise, as
 * the prompt and the API read it, so such a row does not stop the assistant.
 */
const responseStyle: Decode<ResponseStyleName> = (value) => {
  const style = text(value);
  return responseStyles.find((known) => known === style) ?? "concise";
};

const configRow = row({
  organization_id: text,
  enabled: bool,
  // The switch of each tool family (tools.ts, ToolFamily).
  console_read: bool,
  console_command: bool,
  players: bool,
  knowledge_read: bool,
  knowledge_write: bool,
  server_lifecycle: bool,
  files: bool,
  daily_query_cap: int,
  response_style: responseStyle,
  custom_instructions: text,
  emergency_stop: bool,
  emergency_stop_by: nullable(text),
  emergency_stop_by_email: nullable(text),
  emergency_stop_at: nullable(timestamp),
  break_glass: bool,
  break_glass_by: nullable(text),
  break_glass_by_email: nullable(text),
  break_glass_at: nullable(timestamp),
  break_glass_expires_at: nullable(timestamp),
  /** Whether break-glass is on now: its expiry not passed by the database's clock at the read. */
  break_glass_active: bool,
  version: int,
  /** Null only in {@link defaultConfig}'s row, which no one saved. */
  updated_at: nullable(timestamp),
});
/** An organization's stored settings; the switches carry who set them. */
export type ConfigRow = Row<typeof configRow>;

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

/** The organization's settings (the defaults when it has no row); `lock` holds its row until the transaction ends. */
export async function readConfig(query: SqlRunner, organizationId: string, lock = false): Promise<ConfigRow> {
  if (lock) await query.run(sql`select 1 from ocelot_configs where organization_id = ${organizationId} for update`);
  const found = await query.one(
    sql`select c.organization_id, c.enabled, c.console_read, c.console_command, c.players, c.knowledge_read, c.knowledge_write, c.server_lifecycle, c.files,
               c.daily_query_cap, c.response_style, c.custom_instructions, c.emergency_stop, c.emergency_stop_by, c.emergency_stop_at,
               c.break_glass, c.break_glass_by, c.break_glass_at, c.break_glass_expires_at, c.version, c.updated_at,
               se.email as emergency_stop_by_email, sb.email as break_glass_by_email,
               coalesce(c.break_glass and c.break_glass_expires_at > now(), false) as break_glass_active
          from ocelot_configs c
          left join users se on se.id = c.emergency_stop_by
          left join users sb on sb.id = c.break_glass_by
         where c.organization_id = ${organizationId}`,
    configRow,
  );
  return found ?? defaultConfig(organizationId);
}

/** Makes sure the organization has a settings row (the defaults) so it can be locked and updated. */
export async function ensureConfigRow(query: SqlRunner, organizationId: string): Promise<void> {
  const d = defaultConfig(organizationId);
  await query.run(
    sql`insert into ocelot_configs (organization_id, enabled, console_read, console_command, players, knowledge_read, knowledge_write, server_lifecycle, files, updated_at)
        values (${organizationId}, ${d.enabled}, ${d.console_read}, ${d.console_command}, ${d.players}, ${d.knowledge_read}, ${d.knowledge_write}, ${d.server_lifecycle}, ${d.files}, now())
        on conflict (organization_id) do nothing`,
  );
}

export type SettingsColumns = Pick<ConfigRow, ToolFamily | "enabled" | "daily_query_cap" | "response_style" | "custom_instructions">;

/**
 * Writes the settings if the row is still at `version`, and bumps it; false when another change
 * came first. Switch columns are written by {@link setEmergencyStop} and {@link setBreakGlass}.
 */
export async function writeSettings(query: SqlRunner, organizationId: string, version: number, s: SettingsColumns): Promise<boolean> {
  const written = await query.run(
    sql`update ocelot_configs set enabled = ${s.enabled}, console_read = ${s.console_read}, console_command = ${s.console_command}, players = ${s.players},
               knowledge_read = ${s.knowledge_read}, knowledge_write = ${s.knowledge_write}, server_lifecycle = ${s.server_lifecycle}, files = ${s.files},
               daily_query_cap = ${s.daily_query_cap}, response_style = ${s.response_style}, custom_instructions = ${s.custom_instructions},
               version = version + 1, updated_at = now()
         where organization_id = ${organizationId} and version = ${version}`,
  );
  return written === 1;
}

/** Turns the emergency stop on or off; true if it changed. */
export async function setEmergencyStop(query: SqlRunner, organizationId: string, on: boolean, userId: string): Promise<boolean> {
  const changed = await query.run(
    sql`update ocelot_configs set emergency_stop = ${on}, emergency_stop_by = ${userId}, emergency_stop_at = now(), version = version + 1, updated_at = now()
         where organization_id = ${organizationId} and emergency_stop <> ${on}`,
  );
  return changed === 1;
}

/** Turns break-glass on for `minutes` or off; true if it changed (turning it on again keeps its expiry). */
export async function setBreakGlass(query: SqlRunner, organizationId: string, on: boolean, minutes: number, userId: string): Promise<boolean> {
  const changed = await query.run(
    sql`update ocelot_configs set break_glass = ${on}, break_glass_by = ${userId}, break_glass_at = now(),
               break_glass_expires_at = case when ${on}::boolean then now() + make_interval(mins => ${minutes}) else null end, version = version + 1, updated_at = now()
         where organization_id = ${organizationId} and (break_glass and break_glass_expires_at > now()) <> ${on}`,
  );
  return changed === 1;
}

/**
 * Turns off a break-glass whose time is up; true for the one caller that did (it records the
 * event). Whoever reads the settings for a decision calls this first.
 */
export async function expireBreakGlass(query: SqlRunner, organizationId: string): Promise<boolean> {
  const ended = await query.run(
    sql`update ocelot_configs set break_glass = false, break_glass_by = null, break_glass_at = now(), break_glass_expires_at = null, version = version + 1, updated_at = now()
         where organization_id = ${organizationId} and break_glass and break_glass_expires_at <= now()`,
  );
  return ended === 1;
}

const usageRow = row({ day: text, queries: int, tool_actions: int });
export type UsageRow = Row<typeof usageRow>;

/** Today's counters (UTC, by the database's clock), 0 when nothing was counted yet. */
export async function todaysUsage(query: SqlRunner, organizationId: string): Promise<UsageRow> {
  const [usage] = await query.rows(
    sql`select d.day::text as day, coalesce(u.queries, 0) as queries, coalesce(u.tool_actions, 0) as tool_actions
          from (select (now() at time zone 'utc')::date as day) d
          left join ocelot_daily_usage u on u.organization_id = ${organizationId} and u.day = d.day`,
    usageRow,
  );
  return usage;
}

/** A daily counter of `ocelot_daily_usage`. */
export type UsageCounter = "queries" | "tool_actions";

/** The counter's column, as a fragment: a fixed name for each counter, nothing from outside. */
const counterColumn: Record<UsageCounter, Sql> = { queries: sql`queries`, tool_actions: sql`tool_actions` };

const dayRow = row({ day: text });

/**
 * Adds `amount` to today's counter if it stays within `cap`, in one conditional update (the row
 * lock orders concurrent callers, each sees the others' additions); the day it counted against,
 * or undefined when the cap would be passed.
 */
export async function reserveUsage(query: SqlRunner, organizationId: string, counter: UsageCounter, amount: number, cap: number): Promise<string | undefined> {
  const column = counterColumn[counter];
  await query.run(sql`insert into ocelot_daily_usage (organization_id, day) values (${organizationId}, (now() at time zone 'utc')::date) on conflict do nothing`);
  const reserved = await query.one(
    sql`update ocelot_daily_usage set ${column} = ${column} + ${amount}
         where organization_id = ${organizationId} and day = (now() at time zone 'utc')::date and ${column} + ${amount} <= ${cap} returning day::text as day`,
    dayRow,
  );
  return reserved?.day;
}

/** Gives back what {@link reserveUsage} took, to the day it was taken from. */
export async function releaseUsage(query: SqlRunner, organizationId: string, day: string, counter: UsageCounter, amount: number): Promise<void> {
  const column = counterColumn[counter];
  await query.run(sql`update ocelot_daily_usage set ${column} = greatest(${column} - ${amount}, 0) where organization_id = ${organizationId} and day = ${day}::date`);
}
