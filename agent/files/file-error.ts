/**
 * Why the agent refused a file operation: one closed list of reasons, each a word the next hop
 * (core, then the edge's 400/403/404/409/413) maps without parsing the message. The message says the
 * same in words for the owner; it names the client's path, never the real one on the machine.
 */

/** Every reason a file operation is refused. */
export type FileErrorReason =
  /** The path's text is not one the agent accepts (controls, look-alikes, empty segments, too long…). */
  | "invalid_path"
  /** The path, or a symlink on it, leads out of the server's directory: `..`, absolute, drive letters. */
  | "outside_root"
  /** Nothing there, or something the operator's deny list hides (the two are not told apart). */
  | "not_found"
  /** A write to a path the operator's deny list covers. */
  | "denied"
  /** A device, FIFO or socket, or a directory where a file is needed. */
  | "not_a_regular_file"
  | "not_a_directory"
  | "already_exists"
  | "directory_not_empty"
  /** The operator started the agent with `--files read-only`. */
  | "read_only"
  /** The operator started the agent with `--files off`. */
  | "files_off"
  | "too_large"
  /** A listing's cursor that this agent did not give. */
  | "invalid_cursor"
  /** The file is no longer the version the caller read (`expectedSha256`). */
  | "edit_conflict"
  /** Too much under way (file operations waiting, uploads at once): nothing was done; try again shortly. */
  | "busy";

/** A refusal with its reason; anything else a file operation throws is an internal error. */
export class FileError extends Error {
  readonly reason: FileErrorReason;

  constructor(reason: FileErrorReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "FileError";
    this.reason = reason;
  }
}

/** Node's error code (`ENOENT`…) of `error`, if it has one. */
export function errnoCode(error: unknown): string | undefined {
  return error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

const errnoReasons: Record<string, FileErrorReason> = {
  ENOENT: "not_found",
  ENOTDIR: "not_a_directory",
  EISDIR: "not_a_regular_file",
  EEXIST: "already_exists",
  ENOTEMPTY: "directory_not_empty",
  ELOOP: "outside_root",
  EXDEV: "outside_root",
  ENAMETOOLONG: "invalid_path",
  EINVAL: "invalid_path",
  ENXIO: "not_a_regular_file",
};

/**
 * The refusal an expected system error stands for, said about `path` (the client's); an unexpected
 * one (EIO, EACCES…) is rethrown as it is, to be reported as internal.
 */
export function asFileError(error: unknown, path: string): never {
  if (error instanceof FileError) throw error;
  const reason = errnoReasons[errnoCode(error) ?? ""];
  if (!reason) throw error;
  const words: Record<FileErrorReason, string> = {
    invalid_path: "is not a valid path here",
    outside_root: "leads outside the server's directory, or changed while being opened",
    not_found: "does not exist",
    denied: "is on the operator's deny list",
    not_a_regular_file: "is not a regular file",
    not_a_directory: "is not a directory",
    already_exists: "already exists",
    directory_not_empty: "is a directory that is not empty",
    read_only: "cannot be changed: files are read-only on this server",
    files_off: "cannot be reached: files are off on this server",
    too_large: "is too large",
    invalid_cursor: "was listed with a cursor this agent did not give",
    edit_conflict: "changed since it was read",
    busy: "could not be reached: too much is under way",
  };
  throw new FileError(reason, `${JSON.stringify(path || ".")} ${words[reason]}`, { cause: error });
}
