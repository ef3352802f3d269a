import { InvalidArgumentError } from "../errors.js";
import type { ChangeLogRepository, ChangePage, LoggedChange } from "./change-log.js";
import type { LogGrowth } from "./log-growth.js";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1_000;
/** How many records a watcher reads at once while it catches up: enough to stream fast, bounded in memory. */
const WATCH_BATCH = 500;

export interface ChangeLogServiceOptions {
  readonly log: ChangeLogRepository;
  readonly growth: LogGrowth;
}

export interface ChangeLogService {
  /** A page of changes after `after` (from the first when undefined); `limit` 0 is the default size. */
  listChanges(after: bigint | undefined, limit: number): Promise<ChangePage>;
  /**
   * Every change after `after`, then each new one as it is committed, until `signal` aborts.
   * Reads from its own last index every time, so the switch from replay to live can neither skip
   * nor repeat a record; it reads the next batch only when the consumer asks, so a slow consumer
   * holds at most one batch.
   */
  watchChanges(after: bigint | undefined, signal: AbortSignal): AsyncGenerator<LoggedChange>;
}

export function createChangeLogService(options: ChangeLogServiceOptions): ChangeLogService {
  const { log, growth } = options;

  function checkAfter(after: bigint | undefined): void {
    if (after !== undefined && after < 0n) throw InvalidArgumentError.of("after", "must not be negative (leave it unset to start at the first change)");
  }

  return {
    async listChanges(after, limit) {
      checkAfter(after);
      if (!Number.isInteger(limit) || limit < 0) throw InvalidArgumentError.of("limit", "must not be negative");
      if (limit > MAX_PAGE_SIZE) throw InvalidArgumentError.of("limit", `must be at most ${MAX_PAGE_SIZE}`);
      return log.listChanges(after, limit === 0 ? DEFAULT_PAGE_SIZE : limit);
    },

    async *watchChanges(after, signal) {
      checkAfter(after);
      let last = after;
      while (!signal.aborted) {
        const page = await log.listChanges(last, WATCH_BATCH);
        for (const change of page.changes) {
          yield change;
          last = change.index;
        }
        if (page.changes.length === WATCH_BATCH) continue;
        // Caught up: wait until the log holds a record beyond the last one delivered.
        await growth.waitBeyond(last === undefined ? -1n : last, signal);
      }
    },
  };
}
