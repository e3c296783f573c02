/**
 * The wrapped server's output, cut into lines the way the server ends them: at "\n" only, with
 * one "\r" before it dropped. node:readline would also end a line at a lone "\r", U+2028 and
 * U+2029, and a player can put U+2028 in chat: everything after it would be a line of the
 * player's making, read as the server's own ("Steve issued server command: …"). Here such a
 * character stays inside its line, which log-formats.ts then refuses to read.
 *
 * A line longer than {@link maxLineChars} is passed on in pieces, so a server printing without end
 * cannot fill the agent's memory; pieces are marked as not whole, and only whole lines are read.
 */
import { StringDecoder } from "node:string_decoder";

/** The longest line kept whole; the console's own limit (consoleLimits.lineChars) is far below. */
export const maxLineChars = 65_536;

export interface OutputLine {
  /** The line, without its line end. */
  text: string;
  /** False for a piece of a line cut at {@link maxLineChars}. */
  whole: boolean;
}

export interface LineSplitter {
  /** Takes a chunk of output; returns the lines it completed. */
  push(chunk: Buffer | string): OutputLine[];
  /** The output ended: returns what was left after the last line end, if anything. */
  end(): OutputLine[];
}

export function createLineSplitter(maxChars = maxLineChars): LineSplitter {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  // Whether the line being collected lost its beginning to a cut.
  let cut = false;

  function take(text: string): OutputLine[] {
    pending += text;
    const lines: OutputLine[] = [];
    let start = 0;
    for (let end = pending.indexOf("\n"); end !== -1; end = pending.indexOf("\n", start)) {
      const line = pending.slice(start, end);
      lines.push({ text: line.endsWith("\r") ? line.slice(0, -1) : line, whole: !cut });
      cut = false;
      start = end + 1;
    }
    pending = pending.slice(start);
    while (pending.length > maxChars) {
      lines.push({ text: pending.slice(0, maxChars), whole: false });
      pending = pending.slice(maxChars);
      cut = true;
    }
    return lines;
  }

  return {
    push: (chunk) => take(typeof chunk === "string" ? chunk : decoder.write(chunk)),
    end() {
      const lines = take(decoder.end());
      if (pending) lines.push({ text: pending.endsWith("\r") ? pending.slice(0, -1) : pending, whole: !cut });
      pending = "";
      return lines;
    },
  };
}

/** Calls `onLine` with each line `stream` prints, to its end. */
export function readLines(stream: NodeJS.ReadableStream, onLine: (line: OutputLine) => void): void {
  const splitter = createLineSplitter();
  stream.on("data", (chunk: Buffer | string) => splitter.push(chunk).forEach(onLine));
  stream.on("end", () => splitter.end().forEach(onLine));
}
