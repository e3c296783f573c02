/**
 * Typed rows: a decoder per query says what each column is, checks it as the row arrives and
 * gives it the type TypeScript then relies on, so a statement that changes shape fails at its
 * first row, by name, instead of somewhere downstream as `undefined`. A decoder is a plain
 * function; `row({...})` builds one for a row (or a `row_to_json` object inside one) from one per
 * column, and `Row<typeof decoder>` is its type.
 *
 * The conversions are the ones `pg` and `row_to_json` make necessary: a bigint (`count(*)`,
 * int8) arrives as a string of digits, a timestamp as a Date from a column or as ISO text from
 * JSON.
 */

/** Turns one value from the database into a `T`, or throws a {@link RowShapeError}. */
export type Decode<T> = (value: unknown) => T;

/** The type a decoder gives. */
export type Row<D> = D extends Decode<infer T> ? T : never;

/** A value that is not what its query's decoder says: a fault in the code, never in a request. */
export class RowShapeError extends Error {
  override name = "RowShapeError";
}

function mismatch(expected: string, value: unknown): never {
  const shown = value === null ? "null" : typeof value === "string" ? `the text ${JSON.stringify(value.slice(0, 40))}` : typeof value;
  throw new RowShapeError(`expected ${expected}, got ${shown}`);
}

export const text: Decode<string> = (value) => (typeof value === "string" ? value : mismatch("text", value));

export const bool: Decode<boolean> = (value) => (typeof value === "boolean" ? value : mismatch("a boolean", value));

/** A whole number: an int2/int4, or an int8 or numeric that `pg` hands over as digits. */
export const int: Decode<number> = (value) => {
  if (typeof value === "number" && Number.isSafeInteger(value)) return value;
  if (typeof value === "string" && /^-?\d{1,15}$/.test(value)) return Number(value);
  return mismatch("a whole number", value);
};

/** A float8, or a numeric that `pg` hands over as text. */
export const float: Decode<number> = (value) => {
  if (typeof value === "number") return value;
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return Number(value);
  return mismatch("a number", value);
};

/** A bytea column, which `pg` hands over as a Buffer. */
export const bytes: Decode<Buffer> = (value) => (Buffer.isBuffer(value) ? value : mismatch("bytes", value));

/** A timestamp: a Date from a timestamptz column, or the ISO text `row_to_json` writes. */
export const timestamp: Decode<Date> = (value) => {
  if (value instanceof Date) return value;
  if (typeof value === "string") {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  return mismatch("a timestamp", value);
};

/** One of a closed set of texts (a check-constrained column). */
export function oneOf<const T extends string>(...values: readonly T[]): Decode<T> {
  const allowed = new Set<string>(values);
  return (value) => (typeof value === "string" && allowed.has(value) ? (value as T) : mismatch(`one of ${values.join(", ")}`, value));
}

/** The value, or null where the column is null (or a `row_to_json` key is absent). */
export function nullable<T>(decode: Decode<T>): Decode<T | null> {
  return (value) => (value === null || value === undefined ? null : decode(value));
}

/** An array (a Postgres array or a JSON one), each element decoded. */
export function arrayOf<T>(decode: Decode<T>): Decode<T[]> {
  return (value) => (Array.isArray(value) ? value.map(decode) : mismatch("an array", value));
}

/**
 * A JSON value kept as it is (a jsonb column's free-form details): the caller reads it as
 * `unknown` and checks what it uses.
 */
export const json: Decode<unknown> = (value) => value;

/**
 * A JSON object kept whole, its columns unread here: a `row_to_json` of a table's row that the
 * EntityManager maps into an entity (`em.map`), which checks its columns itself.
 */
export const record: Decode<Record<string, unknown>> = (value) =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : mismatch("a JSON object", value);

/** A JSON object whose keys are texts (a jsonb column of string values). */
export const textRecord: Decode<Record<string, string>> = (value) => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return mismatch("a JSON object", value);
  for (const v of Object.values(value)) if (typeof v !== "string") mismatch("a JSON object of texts", v);
  return value as Record<string, string>;
};

type Shape = Record<string, Decode<unknown>>;
type Decoded<S extends Shape> = { [K in keyof S]: Row<S[K]> };

/**
 * A row: each column of `shape` decoded by its decoder (others the statement returns are left
 * out, so a row carries only what its type says). Also decodes a `row_to_json` object.
 */
export function row<S extends Shape>(shape: S): Decode<Decoded<S>> {
  const columns = Object.entries(shape);
  return (value) => {
    if (typeof value !== "object" || value === null) return mismatch("a row", value);
    const source = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [column, decode] of columns) {
      try {
        out[column] = decode(source[column]);
      } catch (error) {
        if (error instanceof RowShapeError) throw new RowShapeError(`column ${column}: ${error.message}`);
        throw error;
      }
    }
    return out as Decoded<S>;
  };
}
