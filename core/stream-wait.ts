/**
 * The wait of a server-streaming handler that sends when something changes (the console's lines,
 * a hosted sign-in's status): it sleeps until an event wakes it or a deadline passes, and gives
 * back what it holds as soon as the call ends, not only when the generator is resumed to finish
 * (a caller that stops reading, or leaves while it waits at a yield, never resumes it).
 */

export interface Waker {
  /** Ends the sleep under way, if any. A wake while nobody sleeps is not kept: callers keep their own flag of what changed. */
  wake(): void;
  /** Sleeps for up to `ms`, less if woken. */
  sleep(ms: number): Promise<void>;
}

export function createWaker(): Waker {
  let woken: (() => void) | undefined;
  return {
    wake: () => woken?.(),
    async sleep(ms) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        woken = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      woken = undefined;
    },
  };
}

/**
 * Runs `release` when the call's signal aborts (and wakes the sleeper, which then sees the abort),
 * and returns it for the handler to run itself when it is done. `release` may run more than once.
 */
export function releaseWhenCallEnds(signal: AbortSignal, waker: Waker, release: () => void): () => void {
  const done = () => {
    release();
    signal.removeEventListener("abort", onAbort);
  };
  const onAbort = () => {
    done();
    waker.wake();
  };
  signal.addEventListener("abort", onAbort);
  return done;
}
