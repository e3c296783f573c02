/**
 * The record of each console command sent to a server's agent (`console_commands`): written as
 * pending before the command is sent, so that none runs unrecorded, and settled once its outcome
 * is known. A settle changes only a pending record: an outcome is never overwritten by a later one.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConsoleCommandSchema, ConsoleCommandStatus, type ConsoleCommand } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { sql, type SqlRunner } from "../db/sql.ts";
import { arrayOf, nullable, oneOf, row, text, timestamp, type Row } from "../db/rows.ts";

/** How long a command's record is kept (the activity log keeps its event longer). */
export const consoleCommandsKeptMs = 30 * 24 * 60 * 60_000;

export type SettledStatus = "ran" | "failed" | "not_sent";

export interface PendingCommand {
  requestId: string;
  serverId: string;
  userId: string;
  command: string;
  sentAt: Date;
}

/** The command's record, pending; before it is sent. Fails (and the command must not be sent) when it cannot be written. */
export async function recordPendingCommand(query: SqlRunner, c: PendingCommand): Promise<void> {
  await query.run(
    sql`insert into console_commands (request_id, server_id, user_id, command, status, sent_at) values (${c.requestId}, ${c.serverId}, ${c.userId}, ${c.command}, 'pending', ${c.sentAt})`,
  );
}

/** Settles a pending record; true when it was pending (and now is not). */
export async function settleCommand(
  query: SqlRunner,
  requestId: string,
  outcome: { status: SettledStatus; output?: string[]; error?: string; at: Date },
): Promise<boolean> {
  const changed = await query.run(
    sql`update console_commands set status = ${outcome.status}, output = ${outcome.output ? JSON.stringify(outcome.output) : null}::jsonb, error = ${outcome.error || null}, settled_at = ${outcome.at}
        where request_id = ${requestId} and status = 'pending'`,
  );
  return changed > 0;
}

const commandRow = row({
  request_id: text,
  command: text,
  status: oneOf("pending", "ran", "failed", "not_sent"),
  output: nullable(arrayOf(text)),
  error: nullable(text),
  user_id: text,
  sent_at: timestamp,
  settled_at: nullable(timestamp),
});

/** A server's command by its request id, or undefined (another server's is not this one's). */
export function findCommand(query: SqlRunner, serverId: string, requestId: string): Promise<Row<typeof commandRow> | undefined> {
  return query.one(
    sql`select request_id, command, status, output, error, user_id, sent_at, settled_at from console_commands where request_id = ${requestId} and server_id = ${serverId}`,
    commandRow,
  );
}

/** Deletes records older than {@link consoleCommandsKeptMs}. */
export function deleteOldCommands(query: SqlRunner, now: Date): Promise<number> {
  return query.run(sql`delete from console_commands where sent_at < ${new Date(now.getTime() - consoleCommandsKeptMs)}`);
}

const statuses = {
  pending: ConsoleCommandStatus.PENDING,
  ran: ConsoleCommandStatus.RAN,
  failed: ConsoleCommandStatus.FAILED,
  not_sent: ConsoleCommandStatus.NOT_SENT,
} as const;

export function consoleCommandToProto(r: Row<typeof commandRow>): ConsoleCommand {
  return create(ConsoleCommandSchema, {
    requestId: r.request_id,
    command: r.command,
    status: statuses[r.status],
    output: r.output ?? [],
    error: r.error ?? "",
    userId: r.user_id,
    sentAt: timestampFromDate(r.sent_at),
    settledAt: r.settled_at ? timestampFromDate(r.settled_at) : undefined,
  });
}
