/**
 * Frees a file transfer's spent buffers while they are young: core's side and the agent's side of
 * servers/downloadFile and servers/uploadFile each call one collector with every piece they pass on
 * (docs/operations.md, Performance).
 *
 * A piece goes through several buffers outside V8's heap at each hop (the socket's reads, the piece
 * joined, protobuf's encoding, Connect's envelope), each dropped within milliseconds. V8 frees such
 * a buffer only when it collects the object holding it, and it starts a full collection only once
 * they add up to 64 MiB more than after the last one (a fixed allowance no flag changes), then marks
 * the whole heap while the transfer adds more: `bench:files` measured 65 to 130 MiB of them held at
 * the peak. A young-generation collection (a scavenge) finds them still young and frees them in
 * about a millisecond whatever the heap's size, so one every few MiB keeps what is held to a few
 * pieces, and the full collections the transfer used to cause no longer run.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** How many bytes of pieces pass between two young-generation collections. */
export const collectEveryBytes = 2 * 1024 * 1024;

type Gc = (options: { type: "minor"; execution: "sync" }) => void;

// The process has one V8 heap, so one `gc` serves every transfer: got on first use and kept.
let gc: Gc | null | undefined;

/**
 * V8's `gc`, from a context made while the flag that exposes it is set, the flag set back at once:
 * the process's own global scope does not get a `gc` (unless Node was started with --expose-gc).
 * Null where V8 offers none, and then V8's own schedule stands.
 */
function youngCollection(): Gc | null {
  if (gc !== undefined) return gc;
  const own = (globalThis as { gc?: Gc }).gc;
  if (own) return (gc = own);
  try {
    setFlagsFromString("--expose-gc");
    gc = (runInNewContext("gc") as Gc | undefined) ?? null;
  } catch {
    gc = null;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
  return gc;
}

/** A function a transfer calls with the size of each piece it passed on; every {@link collectEveryBytes} it collects V8's young generation. */
export function createPieceCollector(everyBytes = collectEveryBytes): (bytes: number) => void {
  let since = 0;
  return (bytes) => {
    since += bytes;
    if (since < everyBytes) return;
    since = 0;
    youngCollection()?.({ type: "minor", execution: "sync" });
  };
}
