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
import { isUuid } from "../../contract/uuid.ts";

/** How long a command's record is kept (the activity log keeps its event longer). */
export const consoleCommandsKeptMs = 30 * 24 * 60 * 60_000;

export type SettledStatus = "ran" | "failed" | "not_sent";

export interface PendingCommand {
  requestId: string;
  serverId: string;
  userId: string;
  command: string;
  /** The stream it is sent on, and the agent's run behind it (null: the agent names none). */
  connectionId: string;
  agentBootId: string | null;
  sentAt: Date;
}

/** The command's record, pending; before it is sent. Fails (and the command must not be sent) when it cannot be written. */
export async function recordPendingCommand(query: SqlRunner, c: PendingCommand): Promise<void> {
  await query.run(
    sql`insert into console_commands (request_id, server_id, user_id, command, status, connection_id, agent_boot_id, sent_at)
        values (${c.requestId}, ${c.serverId}, ${c.userId}, ${c.command}, 'pending', ${c.connectionId}, ${c.agentBootId}, ${c.sentAt})`,
  );
}

export interface Outcome {
  status: SettledStatus;
  output?: string[];
  error?: string;
  at: Date;
}

/** What an agent answered, as the record's outcome: ran with its output, or failed with why. */
export function answeredOutcome(answer: { success: boolean; output: string[]; error: string }, at: Date): Outcome & { error: string } {
  if (answer.success) return { status: "ran", output: answer.output, error: "", at };
  return { status: "failed", output: answer.output, error: answer.error || "the agent could not run the command", at };
}

/**
 * Settles the server's pending record of `requestId`; the command, when it was pending (and now
 * is not). An id that is no request id of ours (an agent's report may hold anything) settles nothing.
 */
export async function settleCommand(query: SqlRunner, serverId: string, requestId: string, outcome: Outcome): Promise<string | undefined> {
  if (!isUuid(requestId)) return undefined;
  const settled = await query.one(
    sql`update console_commands set status = ${outcome.status}, output = ${outcome.output ? JSON.stringify(outcome.output) : null}::jsonb,
                                    error = ${outcome.error || null}, settled_at = ${outcome.at}
        where request_id = ${requestId} and server_id = ${serverId} and status = 'pending' returning command`,
    row({ command: text }),
  );
  return settled?.command;
}

/**
 * Settles as never received the server's pending records sent to an earlier stream of the agent's
 * run `bootId` whose request ids the agent does not hold: all of the run's when it remembers every
 * command of it (`complete`), else those sent more than a second after the oldest it remembers
 * (commands reach it in the order they are sent, and it forgets the oldest first); the settled
 * ones (request id and command).
 */
export function settleNeverReceived(
  query: SqlRunner,
  f: { serverId: string; bootId: string; connectionId: string; received: string[]; complete: boolean; error: string; at: Date },
): Promise<Array<{ request_id: string; command: string }>> {
  const ids = f.received.filter(isUuid);
  const oldest = ids[0] ?? null;
  return query.rows(
    sql`update console_commands set status = 'not_sent', error = ${f.error}, settled_at = ${f.at}
        where server_id = ${f.serverId} and status = 'pending' and agent_boot_id = ${f.bootId} and connection_id <> ${f.connectionId}
          and not (request_id::text = any(${ids}::text[]))
          and (${f.complete}::boolean or sent_at > (select o.sent_at + interval '1 second' from console_commands o where o.request_id::text = ${oldest} and o.server_id = ${f.serverId}))
        returning request_id, command`,
    row({ request_id: text, command: text }),
  );
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
