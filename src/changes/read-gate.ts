/**
 * At most `concurrency` reads at once; the rest wait in order. However many streams catch up at
 * the same time, they take this many database connections, and the pool stays free for calls.
 */
export interface ReadGate {
  /** Runs `read` when a place is free; a caller aborted while it waits leaves the queue unread. */
  run<T>(read: () => Promise<T>, signal: AbortSignal): Promise<T>;
}

export function createReadGate(concurrency: number): ReadGate {
  let running = 0;
  const queue = new Set<() => void>();

  function leave(): void {
    running -= 1;
    const [next] = queue;
    if (next === undefined) return;
    queue.delete(next);
    next();
  }

  async function enter(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (running < concurrency && queue.size === 0) {
      running += 1;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const admitted = () => {
        signal.removeEventListener("abort", onAbort);
        running += 1;
        resolve();
      };
      const onAbort = () => {
        queue.delete(admitted);
        reject(signal.reason);
      };
      queue.add(admitted);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  return {
    async run(read, signal) {
      await enter(signal);
      try {
        return await read();
      } finally {
        leave();
      }
    },
  };
}
