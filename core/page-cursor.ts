/**
 * The page cursor of every newest-first list (the activity log, alert deliveries, notifications):
 * the last row of a page, as its time and id, which the next page continues after (keyset on
 * created_at, id). New rows sort before the first page, so pages already read do not shift.
 * Opaque to clients (base64url of "<ms>.<uuid>"); a string that does not decode to one is
 * `invalid_argument` on the `cursor` field.
 */
import { fieldFail } from "./errors.ts";

export interface PageCursor {
  createdAt: Date;
  id: string;
}

const shape = /^(\d{1,15})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function encodeCursor(row: PageCursor): string {
  return Buffer.from(`${row.createdAt.getTime()}.${row.id}`).toString("base64url");
}

export function decodeCursor(cursor: string): PageCursor {
  const match = /^[A-Za-z0-9_-]+$/.test(cursor) ? shape.exec(Buffer.from(cursor, "base64url").toString("latin1")) : null;
  if (!match) throw fieldFail([{ field: "cursor", message: "not a cursor from this list: pass a response's nextCursor as it was" }]);
  return { createdAt: new Date(Number(match[1])), id: match[2] };
}

/**
 * A newest-first list read with one row more than `limit`: the page, and the cursor after its
 * last row ("" on the last page).
 */
export function pageOf<T extends { created_at: Date | string; id: string }>(rows: T[], limit: number): { page: T[]; nextCursor: string } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { page, nextCursor: rows.length > limit && last ? encodeCursor({ createdAt: new Date(last.created_at), id: last.id }) : "" };
}
