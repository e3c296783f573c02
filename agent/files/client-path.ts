/**
 * The text of a path as a client sends it, checked before it comes near the file system: the
 * contract's check (contract/file-path.ts), which core makes too, refusing with the agent's
 * FileError.
 */
import { ClientPathError, parseClientPath as parse, type ClientPath } from "../../contract/file-path.ts";
import { FileError } from "./file-error.ts";

export type { ClientPath } from "../../contract/file-path.ts";

/**
 * `text` as segments under the root, or a FileError: `invalid_path` for text the agent will not
 * read, `outside_root` for `..`, absolute paths and drive letters in any spelling. "" and "." are
 * the root; one trailing `/` is allowed.
 */
export function parseClientPath(text: string): ClientPath {
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof ClientPathError) throw new FileError(error.reason, error.message);
    throw error;
  }
}
