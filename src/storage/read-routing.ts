import type { DiscoveryRepository } from "../discovery/discovery-repository.js";
import type { EntryRepository } from "../entries/entry-repository.js";
import { UnavailableError } from "../errors.js";
import type { PrimaryReadReason, ReplicaFreshness } from "./replica-freshness.js";

/** Where a read went, and why: the labels of the reads-by-target metric. */
export type ReadTarget = "primary" | "replica";
export type ReadReason = "replica" | PrimaryReadReason | "replicas-resting" | "replica-failed" | "missing-on-replica";

/**
 * Which replica reads next, round robin, and which are resting after a failure. One rotation is
 * shared by every router over the same replicas, so a replica that failed an entry read is also
 * passed over by discovery.
 */
export interface ReplicaRotation {
  /** The index of the next replica not resting, advancing the round robin; -1 when all rest. */
  next(): number;
  /** Passes over `index` for a while. */
  rest(index: number): void;
}

export function createReplicaRotation(count: number, options: { restMs?: number; now?: () => number } = {}): ReplicaRotation {
  const restMs = options.restMs ?? 5_000;
  const now = options.now ?? Date.now;
  const restingUntil = Array.from({ length: count }, () => 0);
  let next = 0;
  return {
    next() {
      const at = now();
      for (let tried = 0; tried < count; tried++) {
        const index = next;
        next = (next + 1) % count;
        if (restingUntil[index]! <= at) return index;
      }
      return -1;
    },
    rest(index) {
      restingUntil[index] = now() + restMs;
    },
  };
}

export interface ReadRouterOptions {
  /** The replicas' rotation; by default one of the router's own, resting a failed replica 5 s. */
  readonly rotation?: ReplicaRotation;
  /** Told where each read went and why. */
  readonly onRead?: (target: ReadTarget, reason: ReadReason) => void;
  /** Told when a replica failed and was put to rest; the read was retried on the primary. */
  readonly onReplicaFailure?: (replica: number, error: unknown) => void;
}

/** One repository per database: the primary's, and one per read replica. */
export interface ReadRouter<R> {
  readonly primary: R;
  /**
   * Runs `read` on the next replica, round robin, or on the primary when `primaryReason` is given
   * or every replica is resting. A replica that fails as unavailable (down, unreachable, or a
   * query cancelled by a recovery conflict) rests for a while, and the read is retried on the
   * primary: losing a replica costs latency, not answers.
   */
  read<T>(read: (repository: R) => Promise<T>, primaryReason?: PrimaryReadReason, options?: ReadOptions<T>): Promise<T>;
}

export interface ReadOptions<T> {
  /**
   * Whether a replica's answer may only mean that the replica is behind, and the primary must be
   * asked instead: "not found" for a resolve, since the entry may have been published a moment ago.
   */
  readonly askPrimaryIf?: (answer: T) => boolean;
}

export function createReadRouter<R>(primary: R, replicas: readonly R[], options: ReadRouterOptions = {}): ReadRouter<R> {
  const rotation = options.rotation ?? createReplicaRotation(replicas.length);
  const onRead = options.onRead ?? (() => {});
  const onReplicaFailure = options.onReplicaFailure ?? (() => {});

  async function onPrimary<T>(read: (repository: R) => Promise<T>, reason: ReadReason): Promise<T> {
    onRead("primary", reason);
    return read(primary);
  }

  return {
    primary,
    async read(read, primaryReason, readOptions) {
      if (primaryReason !== undefined) return onPrimary(read, primaryReason);
      const index = rotation.next();
      if (index < 0) return onPrimary(read, "replicas-resting");
      onRead("replica", "replica");
      try {
        const answer = await read(replicas[index]!);
        return readOptions?.askPrimaryIf?.(answer) === true ? await onPrimary(read, "missing-on-replica") : answer;
      } catch (error) {
        if (!(error instanceof UnavailableError)) throw error;
        rotation.rest(index);
        onReplicaFailure(index, error);
        return onPrimary(read, "replica-failed");
      }
    },
  };
}

const missing = { askPrimaryIf: (entry: unknown) => entry === undefined };
const noVersions = { askPrimaryIf: (versions: readonly unknown[]) => versions.length === 0 };

/**
 * Entries with resolves and version lists read from replicas, except those of entries changed so
 * recently that a replica may not show the change (see replica-freshness.ts). Writes, and the
 * ownership check that decides a write, always use the primary.
 *
 * What a replica does not find is asked of the primary: a client that publishes and at once
 * resolves through another registry process (before that process has heard of the change) gets
 * its entry, as npm users expect of `npm publish` then `npm view`. It costs a primary read per
 * "not found", which the per-address read limit bounds.
 */
export function createReplicaRoutedEntryRepository(router: ReadRouter<EntryRepository>, freshness: ReplicaFreshness): EntryRepository {
  const { primary } = router;
  return {
    async createEntry(entry) {
      try {
        return await primary.createEntry(entry);
      } finally {
        freshness.changed(entry.baseDid);
      }
    },
    async revoke(baseDid, version, revocation) {
      try {
        return await primary.revoke(baseDid, version, revocation);
      } finally {
        freshness.changed(baseDid);
      }
    },
    async applyAction(baseDid, version, action, decide) {
      try {
        return await primary.applyAction(baseDid, version, action, decide);
      } finally {
        freshness.changed(baseDid);
      }
    },
    findOwner: (baseDid) => primary.findOwner(baseDid),
    findLatest: (baseDid) => router.read((repository) => repository.findLatest(baseDid), freshness.primaryReason(baseDid), missing),
    findVersion: (baseDid, version) =>
      router.read((repository) => repository.findVersion(baseDid, version), freshness.primaryReason(baseDid), missing),
    listVersions: (baseDid) => router.read((repository) => repository.listVersions(baseDid), freshness.primaryReason(baseDid), noVersions),
  };
}

/**
 * Discovery on the replicas. Its pages may lag the primary by the replication delay (a just
 * published entry appears in discovery once a replica has replayed it); cursors carry positions,
 * not snapshots, so a walk may continue on any replica, or on the primary.
 */
export function createReplicaRoutedDiscoveryRepository(router: ReadRouter<DiscoveryRepository>): DiscoveryRepository {
  return {
    findEntries: (plan, page) => router.read((repository) => repository.findEntries(plan, page)),
    findProjected: (plan, page) => router.read((repository) => repository.findProjected(plan, page)),
  };
}
