/**
 * The password of `outpost user create` when `--password` is not given, so that it is on no
 * command line (npm prints a script's arguments in its banner, and other users of the machine see
 * them in `ps`): typed twice at a prompt that does not echo it when stdin is a terminal, else read
 * from stdin (`echo … | outpost user create …`, a file, a secret manager's pipe).
 */

/** Not a password: the person at the prompt gave up (Ctrl-C, or Ctrl-D on an empty line). */
export class PromptAborted extends Error {}

/** What reads from stdin: a terminal (which can stop echoing) or a pipe. */
export interface PasswordInput extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?: (raw: boolean) => unknown;
}

/** More than any password the contract accepts (256 characters), to stop reading an endless pipe. */
const maxStdinBytes = 4096;

/**
 * The password: from the terminal's prompt (written to `output`, the typing not echoed, asked
 * twice; they must match), or the one line of a pipe without its line break. "" when none was
 * given (an empty line, or nothing on the pipe): the caller says how to give one.
 */
export async function readPassword(input: PasswordInput, output: NodeJS.WritableStream): Promise<string> {
  if (input.isTTY && input.setRawMode) {
    const first = await promptHidden(input, output, "Password: ");
    if (first === "") return "";
    const again = await promptHidden(input, output, "The same password again: ");
    if (again !== first) throw new Error("the two passwords differ; nothing was created");
    return first;
  }
  const password = (await readAll(input)).replace(/\r?\n$/, "");
  if (/[\r\n]/.test(password)) throw new Error("stdin holds more than one line; a password is one line");
  return password;
}

/** One line typed at the terminal in raw mode, echoing nothing: Enter ends it, Backspace and Ctrl-U edit it, Ctrl-C gives up. */
function promptHidden(input: PasswordInput, output: NodeJS.WritableStream, prompt: string): Promise<string> {
  output.write(prompt);
  input.setRawMode!(true);
  input.resume();
  return new Promise((resolve, reject) => {
    let typed = "";
    const finish = (outcome: () => void) => {
      input.off("data", onData);
      input.setRawMode!(false);
      input.pause();
      output.write("\n");
      outcome();
    };
    const onData = (chunk: Buffer | string) => {
      for (const char of String(chunk)) {
        if (char === "\r" || char === "\n") return finish(() => resolve(typed));
        if (char === "\u0003" || (char === "\u0004" && typed === "")) return finish(() => reject(new PromptAborted("cancelled; nothing was created")));
        if (char === "\u007f" || char === "\b") typed = [...typed].slice(0, -1).join("");
        else if (char === "\u0015") typed = "";
        else if (char >= " ") typed += char;
      }
    };
    input.on("data", onData);
  });
}

/** Everything on a pipe, as UTF-8; refused past {@link maxStdinBytes}. */
async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    size += bytes.length;
    if (size > maxStdinBytes) throw new Error(`stdin holds more than ${maxStdinBytes} bytes; a password is one line`);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString("utf8");
}
