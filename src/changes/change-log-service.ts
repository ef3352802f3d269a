import { InvalidArgumentError } from "../errors.js";
import type { ChangeLogRepository, ChangePage, LoggedChange } from "./change-log.js";
import { createHeadFanOut, type ChangeSink } from "./head-fan-out.js";
import type { LogGrowth } from "./log-growth.js";
import { createIdleDeadline } from "./idle-deadline.js";
import { createLogTail } from "./log-tail.js";
import { createReadGate } from "./read-gate.js";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1_000;
/** How many records a watcher reads at once while it catches up: enough to stream fast, bounded in memory. */
const WATCH_BATCH = 500;
/**
 * How long a watcher keeps the rest of a batch while its client does not take the next record:
 * a stalled client then holds one record, not a batch, and the batch is read again when it moves.
 */
const BATCH_HOLD_MS = 1_000;

export interface ChangeLogLimits {
  /** The most a page (and a watcher's batch) may weigh, in bytes of entry state; the first record always comes. */
  readonly pageMaxBytes: number;
  /** Catch-up reads running at once for all watchers of this process. */
  readonly watchReadConcurrency: number;
  /** What the shared tail of the log holds for the watchers at its head. */
  readonly tailMaxRecords: number;
  readonly tailMaxBytes: number;
}

export interface ChangeLogServiceOptions {
  readonly log: ChangeLogRepository;
  readonly growth: LogGrowth;
  readonly limits: ChangeLogLimits;
}

export interface ChangeLogService {
  /** A page of changes after `after` (from the first when undefined); `limit` 0 is the default size. */
  listChanges(after: bigint | undefined, limit: number): Promise<ChangePage>;
  /**
   * Every change after `after`, then each new one as it is committed, until `signal` aborts.
   * Reads from its own last index every time, so the switch from replay to live can neither skip
   * nor repeat a record. A watcher behind the head reads batches of its own, one at a time; the
   * watchers at the head share the log's tail. Throws invalid_argument at once for a bad `after`.
   */
  watchChanges(after: bigint | undefined, signal: AbortSignal): AsyncGenerator<LoggedChange>;
  /**
   * Every change after `sink.last`, then each new one as it is committed, written into `sink`
   * until `signal` aborts or the sink is gone; resolves then, rejects when a read fails. The sink
   * reads its way up while it is behind, and is pushed each new record by the shared tail at the
   * head, with no wake-up of its own. Throws invalid_argument at once for a bad `sink.last`.
   */
  followChanges(sink: ChangeSink, signal: AbortSignal): Promise<void>;
}

export function createChangeLogService(options: ChangeLogServiceOptions): ChangeLogService {
  const { log, growth, limits } = options;
  const gate = createReadGate(limits.watchReadConcurrency);
  const tail = createLogTail({
    read: (after) => log.listChanges(after, WATCH_BATCH, limits.pageMaxBytes),
    maxRecords: limits.tailMaxRecords,
    maxBytes: limits.tailMaxBytes,
    onAppend: () => head.push(),
  });
  const head = createHeadFanOut(tail, growth);

  /**
   * The next records for a watcher after `last`: from the tail, else a batch of its own, held
   * briefly; how many; and whether they reach the head.
   */
  async function nextBatch(last: bigint, signal: AbortSignal): Promise<{ batch: Batch; count: number; atHead: boolean }> {
    const held = tail.heldAfter(last);
    if (held !== undefined) return { batch: heldBriefly(held), count: held.length, atHead: true };
    const page = await gate.run(() => log.listChanges(last, WATCH_BATCH, limits.pageMaxBytes), signal);
    const lastRead = page.changes.at(-1)?.index ?? last;
    return { batch: heldBriefly(page.changes), count: page.changes.length, atHead: lastRead >= page.size - 1n };
  }

  async function* watch(after: bigint | undefined, signal: AbortSignal): AsyncGenerator<LoggedChange> {
    let last = after ?? -1n;
    const follower = growth.follower(signal);
    try {
      while (!signal.aborted) {
        const { batch, count, atHead } = await nextBatch(last, signal);
        let delivered = 0;
        for (let change = batch.take(0); change !== undefined; change = batch.take(delivered)) {
          yield change;
          last = change.index;
          delivered += 1;
        }
        // A batch let go while its client stalled is read again from `last`.
        if (delivered < count || !atHead || signal.aborted) continue;
        // Caught up: wait until the log holds a record beyond the last one delivered, then let the
        // tail (one read for every watcher here) fetch it.
        await follower.waitBeyond(last);
        // Woken after another watcher's read already brought the record: nothing to read.
        if (!signal.aborted && !tail.holdsAfter(last)) await tail.extend(last);
      }
    } finally {
      follower.close();
    }
  }

  /**
   * Offers `sink` the next records after its position, from the tail or a read of its own; true
   * when it took them all and they reach the head. A function of its own, so that the batch is
   * let go when it returns rather than held by a suspended caller.
   */
  async function offerNext(sink: ChangeSink, signal: AbortSignal): Promise<boolean> {
    const held = tail.heldAfter(sink.last);
    if (held !== undefined) return sink.offer(held);
    const page = await gate.run(() => log.listChanges(sink.last, WATCH_BATCH, limits.pageMaxBytes), signal);
    const lastRead = page.changes.at(-1)?.index ?? sink.last;
    return sink.offer(page.changes) && lastRead >= page.size - 1n;
  }

  async function follow(sink: ChangeSink, signal: AbortSignal): Promise<void> {
    while (!signal.aborted && (await sink.ready())) {
      if (await offerNext(sink, signal)) await head.follow(sink, signal);
    }
  }

  return {
    async listChanges(after, limit) {
      checkAfter(after);
      if (!Number.isInteger(limit) || limit < 0) throw InvalidArgumentError.of("limit", "must not be negative");
      if (limit > MAX_PAGE_SIZE) throw InvalidArgumentError.of("limit", `must be at most ${MAX_PAGE_SIZE}`);
      return log.listChanges(after, limit === 0 ? DEFAULT_PAGE_SIZE : limit, limits.pageMaxBytes);
    },

    watchChanges(after, signal) {
      checkAfter(after);
      return watch(after, signal);
    },

    followChanges(sink, signal) {
      // -1 is "from the first record".
      if (sink.last !== -1n) checkAfter(sink.last);
      return follow(sink, signal);
    },
  };
}

function checkAfter(after: bigint | undefined): void {
  if (after !== undefined && after < 0n)
    throw InvalidArgumentError.of("after", "must not be negative (leave it unset to start at the first change)");
}

/**
 * A batch that lets go of its records when nobody takes one for BATCH_HOLD_MS: the generator
 * reads through `take`, so while it is suspended only this holder, not a local, keeps the batch.
 */
interface Batch {
  /** The record at `position`, or undefined past the end or once the batch was let go. */
  take(position: number): LoggedChange | undefined;
}

function heldBriefly(changes: readonly LoggedChange[]): Batch {
  // One record is held by whoever took it anyway: nothing to let go of, and no deadline to keep.
  if (changes.length <= 1) return { take: (position) => changes[position] };
  let held: readonly LoggedChange[] | undefined = changes;
  const hold = createIdleDeadline(BATCH_HOLD_MS, () => (held = undefined));
  return {
    take(position) {
      hold.stop();
      const change = held?.[position];
      if (change === undefined) {
        held = undefined;
        hold.clear();
        return undefined;
      }
      hold.start();
      return change;
    },
  };
}
