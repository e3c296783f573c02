/**
 * The activity log's page cursor: the last event of a page, as its time and id, which the next
 * page continues after (keyset on created_at, id, newest first). New events sort before the first
 * page, so pages already read do not shift. Opaque to clients (base64url of "<ms>.<uuid>"); a
 * string that does not decode to one is `invalid_argument` on the `cursor` field.
 */
import { fieldFail } from "../errors.ts";

export interface ActivityCursor {
  createdAt: Date;
  id: string;
}

const shape = /^(\d{1,15})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function encodeCursor(event: ActivityCursor): string {
  return Buffer.from(`${event.createdAt.getTime()}.${event.id}`).toString("base64url");
}

export function decodeCursor(cursor: string): ActivityCursor {
  const match = /^[A-Za-z0-9_-]+$/.test(cursor) ? shape.exec(Buffer.from(cursor, "base64url").toString("latin1")) : null;
  if (!match) throw fieldFail([{ field: "cursor", message: "not a cursor from this log: pass a response's nextCursor as it was" }]);
  return { createdAt: new Date(Number(match[1])), id: match[2] };
}
