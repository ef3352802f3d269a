/**
 * Runs `onExpiry` once `ms` have passed since `start()` without a `stop()`. Starting and stopping
 * read the clock and touch no timer, so a stream can do both for every message: one timer lives
 * while the deadline runs, and when it fires early it waits again for the time left.
 */
export interface IdleDeadline {
  start(): void;
  stop(): void;
  /** Stops it and lets go of its timer: the deadline's owner is done. */
  clear(): void;
}

export function createIdleDeadline(ms: number, onExpiry: () => void): IdleDeadline {
  let startedAt: number | undefined;
  let timer: NodeJS.Timeout | undefined;

  function arm(delay: number): void {
    timer = setTimeout(check, delay);
    timer.unref();
  }

  function check(): void {
    timer = undefined;
    if (startedAt === undefined) return;
    const left = startedAt + ms - performance.now();
    if (left > 0) {
      arm(left);
      return;
    }
    startedAt = undefined;
    onExpiry();
  }

  return {
    start() {
      startedAt = performance.now();
      if (timer === undefined) arm(ms);
    },
    stop() {
      startedAt = undefined;
    },
    clear() {
      startedAt = undefined;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
