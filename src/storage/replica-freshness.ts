import type { ChangeFeed } from "./entry-cache.js";

/**
 * Positions in the primary's write-ahead log, as byte offsets. A streaming replica shows a commit
 * once it has replayed past the commit's position, so comparing positions tells whether a replica
 * can already see a change.
 */
export interface WalPositions {
  /** The primary's WAL insert position now: past every commit the primary has made visible. */
  primary(): Promise<bigint>;
  /** The least position replayed by every replica; rejects when any replica cannot say. */
  replayedByAll(): Promise<bigint>;
}

/** Why a read must go to the primary; undefined when a replica can answer it. */
export type PrimaryReadReason = "changed-recently" | "change-feed-down";

export interface ReplicaFreshness {
  /** Records that this process committed a change of `baseDid` (before its notification arrives). */
  changed(baseDid: string): void;
  /** Whether, and why, a read of `baseDid` must go to the primary to see every change known here. */
  primaryReason(baseDid: string): PrimaryReadReason | undefined;
  close(): void;
}

export interface ReplicaFreshnessOptions {
  readonly feed: ChangeFeed;
  readonly positions: WalPositions;
  /** How often the replicas' replay positions are read while changes wait for them. */
  readonly pollMs?: number;
  /**
   * Most entry DIDs tracked one by one. Past it (replicas far behind a burst of writes) every read
   * goes to the primary until the replicas catch up, rather than the tracking growing unbounded.
   */
  readonly maxTracked?: number;
  /**
   * Told when positions cannot be read (once per spell of failures, not at every poll); changed
   * entries then stay on the primary meanwhile.
   */
  readonly onError?: (error: unknown) => void;
}

/** A change waiting for the replicas: `position` is unknown until read after the change committed. */
interface PendingChange {
  readonly mark: number;
  position?: bigint;
}

/**
 * Knows which entries changed recently enough that a streaming replica may not show the change
 * yet, so their reads go to the primary. The per-process entry cache depends on it: the change
 * feed (LISTEN on the primary) drops a cached entry the moment its change commits, and the read
 * that refills the cache must not fetch the old state from a replica that is still behind, or the
 * cache would keep that stale state with no further notification to drop it.
 *
 * An entry stays "changed recently" until every replica has replayed past the primary's WAL
 * position read after the change's notification arrived, which is past its commit. While the
 * change feed is down, changes may be missed, so every read goes to the primary, and once it is
 * back (a reset) until the replicas pass the primary's position at that moment.
 */
export function createReplicaFreshness(options: ReplicaFreshnessOptions): ReplicaFreshness {
  const { feed, positions } = options;
  const pollMs = options.pollMs ?? 100;
  const maxTracked = options.maxTracked ?? 100_000;
  const onError = options.onError ?? (() => {});
  const pending = new Map<string, PendingChange>();
  /** Changes whose position has not been asked for yet. */
  let unpositioned: Array<[string, PendingChange]> = [];
  /** When set, every entry is treated as changed (after a reset or an overflow). */
  let everything: PendingChange | undefined;
  let marks = 0;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let failing = false;
  let closed = false;

  const markChanged = (baseDid: string) => {
    if (everything !== undefined && everything.position === undefined) return;
    if (pending.size >= maxTracked) {
      markEverything();
      return;
    }
    const change: PendingChange = { mark: ++marks };
    pending.set(baseDid, change);
    unpositioned.push([baseDid, change]);
    schedule(0);
  };

  const markEverything = () => {
    everything = { mark: ++marks };
    pending.clear();
    unpositioned = [];
    schedule(0);
  };

  feed.subscribe({ onChange: markChanged, onReset: markEverything });

  function schedule(delayMs: number): void {
    if (closed || running || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void settle();
    }, delayMs);
    timer.unref();
  }

  /** Gives waiting changes their positions, then forgets those every replica has replayed. */
  async function settle(): Promise<void> {
    running = true;
    try {
      const batch = unpositioned;
      const whole = everything !== undefined && everything.position === undefined ? everything : undefined;
      unpositioned = [];
      if (batch.length > 0 || whole !== undefined) {
        const position = await positions.primary().catch((error: unknown) => {
          unpositioned = batch.concat(unpositioned);
          throw error;
        });
        for (const [, change] of batch) change.position = position;
        if (whole !== undefined) whole.position = position;
      }
      if (pending.size > 0 || everything !== undefined) {
        const replayed = await positions.replayedByAll();
        for (const [baseDid, change] of pending) {
          if (change.position !== undefined && change.position <= replayed) pending.delete(baseDid);
        }
        if (everything?.position !== undefined && everything.position <= replayed) everything = undefined;
      }
      failing = false;
    } catch (error) {
      if (!failing) onError(error);
      failing = true;
    } finally {
      running = false;
    }
    if (unpositioned.length > 0) schedule(0);
    else if (pending.size > 0 || everything !== undefined) schedule(pollMs);
  }

  return {
    changed: markChanged,
    primaryReason(baseDid) {
      if (!feed.live) return "change-feed-down";
      if (everything !== undefined || pending.has(baseDid)) return "changed-recently";
      return undefined;
    },
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}
