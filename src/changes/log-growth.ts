/**
 * One process's view of the log's size, shared by all its watchers: however many streams are
 * open, the database is asked once per hint (a notification of a commit, a write of this process)
 * and once per poll, never once per watcher.
 */
export interface LogGrowth {
  /**
   * One watcher's waits, for as long as `signal` lets it run: the abort is listened for once, not
   * at every wait, which a watcher makes after every record it delivers live.
   */
  follower(signal: AbortSignal): LogFollower;
  /** The log may have grown: read its size again. */
  hint(): void;
  close(): void;
}

export interface LogFollower {
  /** Resolves once the log has a record above `index`, or when the follower's signal aborts. */
  waitBeyond(index: bigint): Promise<void>;
  /** The watcher is done: stop listening to its signal. */
  close(): void;
}

export interface LogGrowthOptions {
  /** Reads the log's size. */
  readonly readSize: () => Promise<bigint>;
  /**
   * How often the size is read anyway while anyone waits: the safety net for a notification
   * lost while the listening connection was down.
   */
  readonly pollMs: number;
  readonly onError?: (error: unknown) => void;
}

/** Waiters woken in one turn of the event loop. */
const RELEASE_CHUNK = 32;

interface Waiter {
  readonly index: bigint;
  readonly resolve: () => void;
}

export function createLogGrowth(options: LogGrowthOptions): LogGrowth {
  let size = -1n;
  let reading: Promise<void> | undefined;
  let again = false;
  const waiters = new Set<Waiter>();
  let timer: NodeJS.Timeout | undefined;

  /**
   * Wakes the waiters the log has outgrown, RELEASE_CHUNK to a turn of the event loop: each wakes
   * a stream that writes to its client, and a thousand of them in one turn would hold every
   * request that arrived meanwhile (a write among them) behind their writes.
   */
  function release(): void {
    let woken = 0;
    for (const waiter of waiters) {
      // The last record's index is size - 1.
      if (size - 1n <= waiter.index) continue;
      waiters.delete(waiter);
      waiter.resolve();
      if (++woken === RELEASE_CHUNK) {
        setImmediate(release);
        return;
      }
    }
  }

  function read(): void {
    if (reading !== undefined) {
      // A commit may have landed after the read in flight took its snapshot: read once more after it.
      again = true;
      return;
    }
    reading = options
      .readSize()
      .then((next) => {
        if (next > size) size = next;
        release();
      })
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        reading = undefined;
        if (again) {
          again = false;
          read();
        }
      });
  }

  function schedulePoll(): void {
    if (timer !== undefined || waiters.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (waiters.size === 0) return;
      read();
      schedulePoll();
    }, options.pollMs);
    timer.unref();
  }

  return {
    follower(signal) {
      let pending: Waiter | undefined;
      const onAbort = () => {
        if (pending === undefined) return;
        waiters.delete(pending);
        pending.resolve();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      return {
        waitBeyond(index) {
          if (signal.aborted || size - 1n > index) return Promise.resolve();
          return new Promise<void>((resolve) => {
            pending = {
              index,
              resolve: () => {
                pending = undefined;
                resolve();
              },
            };
            waiters.add(pending);
            schedulePoll();
            // The size this process knows may be stale: check once for this waiter.
            read();
          });
        },
        close() {
          signal.removeEventListener("abort", onAbort);
          onAbort();
        },
      };
    },
    hint() {
      // Nobody waits: the next waiter reads the size itself.
      if (waiters.size > 0) read();
    },
    close() {
      clearTimeout(timer);
      for (const waiter of waiters) waiter.resolve();
      waiters.clear();
    },
  };
}
