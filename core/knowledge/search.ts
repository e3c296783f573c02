/**
 * Full-text search over an organization's notes, for knowledge/listNotes and for any other part
 * of core that needs to look things up in the knowledge base (the assistant's tool, for one).
 *
 * The text is read by PostgreSQL's `websearch_to_tsquery('english', …)` (words, "phrases", `or`,
 * `-word`; never a syntax error) and matched against `notes.search_vector`, a stored generated
 * column (migration 0023) that weights the title A, the tags B and the content C; hits are
 * ranked by `ts_rank` (a title match outranks a single mention in the content), ties by id. The
 * same SQL runs on a PostgreSQL server and on the embedded database (PGlite is PostgreSQL).
 */
import { empty, sql, type SqlRunner } from "../db/sql.ts";
import { float, row, text } from "../db/rows.ts";
import { fieldFail } from "../errors.ts";
import { filterCondition, noteColumns, noteFields, type NoteFilters, type NoteRow } from "./note-queries.ts";

/** A piece of a snippet: text as in the note, and whether it is a matched word. */
export interface SnippetPart {
  text: string;
  match: boolean;
}

export interface SearchHit extends NoteRow {
  /** ts_rank; only the order means anything. */
  rank: number;
  /** Excerpts of the content around the matches (its start when only the title or tags matched). */
  snippet: SnippetPart[];
  /** Where the next page starts after this hit. */
  position: SearchPosition;
}

/** A hit's place in the ranked order: its rank exactly as PostgreSQL prints the real, and its id. */
export interface SearchPosition {
  rank: string;
  id: string;
}

export interface SearchOptions extends NoteFilters {
  /** What the user typed; blank text finds nothing. */
  text: string;
  limit: number;
  /** Continue after this hit (a previous page's last). */
  after?: SearchPosition;
}

// Markers ts_headline puts around matched words: control characters that note content may not
// contain (the proto refuses them), so splitting on them cannot misread the note's own text.
const start = "\u0002";
const stop = "\u0003";
const headlineOptions = `StartSel=${start}, StopSel=${stop}, MaxFragments=2, MaxWords=30, MinWords=12, FragmentDelimiter=" … "`;

/** Splits a marked headline into parts. */
export function snippetParts(headline: string): SnippetPart[] {
  const parts: SnippetPart[] = [];
  for (const [i, piece] of headline.split(new RegExp(`[${start}${stop}]`)).entries()) {
    if (piece) parts.push({ text: piece, match: i % 2 === 1 });
  }
  return parts;
}

/** A hit's row: the note's columns, its rank as a number and as PostgreSQL prints it, and its marked headline. */
const hitRow = row({ ...noteFields, rank: float, rank_text: text, headline: text });

/**
 * The notes matching `text` that the filters let through (organization, visible servers, tag,
 * server), best first, at most `limit`, each with its snippet. A caller outside a request (a tool)
 * decides visibility itself: pass the server ids the person may see, or null for all.
 */
export async function searchNotes(query: SqlRunner, options: SearchOptions): Promise<SearchHit[]> {
  const { after } = options;
  const rows = await query.rows(
    sql`with q as (select websearch_to_tsquery('english', ${options.text}) as q),
        hits as (
          select ${noteColumns(false)}, n.content as body, ts_rank(n.search_vector, q.q) as rank
          from notes n, q where ${filterCondition(options)} and n.search_vector @@ q.q
        ),
        page as (
          select h.* from hits h
           where true ${after ? sql`and (h.rank < ${after.rank}::real or (h.rank = ${after.rank}::real and h.id > ${after.id}::uuid))` : empty}
           order by h.rank desc, h.id asc limit ${options.limit}
        )
        select page.*, page.rank::text as rank_text, ts_headline('english', page.body, q.q, ${headlineOptions}) as headline
        from page, q order by page.rank desc, page.id asc`,
    hitRow,
  );
  return rows.map(({ rank_text, headline, ...hit }) => ({
    ...hit,
    snippet: snippetParts(headline),
    position: { rank: rank_text, id: hit.id },
  }));
}

const cursorShape = /^s([0-9.eE+-]{1,32})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** Whether PostgreSQL's `real` takes the number (ranks are reals; one out of range fails the query). */
const fitsReal = (n: number) => n === 0 || (Math.abs(n) >= 1e-37 && Math.abs(n) <= 3e38);

/** A search's page cursor (opaque: base64url of "s<rank>.<id>"; "s" keeps it apart from a plain list's). */
export function encodeSearchCursor(p: SearchPosition): string {
  return Buffer.from(`s${p.rank}.${p.id}`).toString("base64url");
}

export function decodeSearchCursor(cursor: string): SearchPosition {
  const match = /^[A-Za-z0-9_-]+$/.test(cursor) ? cursorShape.exec(Buffer.from(cursor, "base64url").toString("latin1")) : null;
  if (!match || !fitsReal(Number(match[1]))) {
    throw fieldFail([{ field: "cursor", message: "not a cursor from this search: pass a response's nextCursor as it was, with the same search" }]);
  }
  return { rank: match[1], id: match[2] };
}
