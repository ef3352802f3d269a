import { describe, expect, it, vi } from "vitest";
import type { ChangeFeed } from "../../src/storage/entry-cache.js";
import { createReplicaFreshness, type WalPositions } from "../../src/storage/replica-freshness.js";

/**
 * The freshness rules, with the WAL positions of a primary and its replicas played by the test:
 * what is under test is when an entry may be read from a replica again, which depends only on
 * those positions and the change feed's notifications.
 */
function scenario(options: { maxTracked?: number } = {}) {
  let listener: Parameters<ChangeFeed["subscribe"]>[0] | undefined;
  const feed = {
    live: true,
    subscribe(next: Parameters<ChangeFeed["subscribe"]>[0]) {
      listener = next;
    },
  };
  const wal = { primary: 100n, replayed: 0n, failing: false };
  const positions: WalPositions = {
    primary: async () => {
      if (wal.failing) throw new Error("primary unreachable");
      return wal.primary;
    },
    replayedByAll: async () => {
      if (wal.failing) throw new Error("replica unreachable");
      return wal.replayed;
    },
  };
  const errors: unknown[] = [];
  const freshness = createReplicaFreshness({ feed, positions, pollMs: 5, onError: (error) => errors.push(error), ...options });
  return {
    feed,
    wal,
    errors,
    freshness,
    notify: (baseDid: string) => listener!.onChange(baseDid),
    reset: () => listener!.onReset(),
    /** Lets the tracker poll the positions a few times. */
    polls: () => new Promise((resolve) => setTimeout(resolve, 40)),
  };
}

const A = "did:reg:main:skill:a";
const B = "did:reg:main:skill:b";

describe("replica freshness", () => {
  it("sends an entry changed elsewhere to the primary until every replica has replayed past the change", async () => {
    const { freshness, wal, notify, polls } = scenario();
    expect(freshness.primaryReason(A)).toBeUndefined();
    notify(A);
    expect(freshness.primaryReason(A)).toBe("changed-recently");
    expect(freshness.primaryReason(B)).toBeUndefined();
    wal.replayed = 99n;
    await polls();
    expect(freshness.primaryReason(A)).toBe("changed-recently");
    wal.replayed = 100n;
    await vi.waitFor(() => expect(freshness.primaryReason(A)).toBeUndefined());
    freshness.close();
  });

  it("takes the primary's position after the notification, so a replica at an older position never clears it", async () => {
    const { freshness, wal, notify, polls } = scenario();
    wal.replayed = 100n;
    notify(A);
    // The primary moved on before its position was read: the change may lie anywhere below 150.
    wal.primary = 150n;
    await polls();
    expect(freshness.primaryReason(A)).toBe("changed-recently");
    wal.replayed = 150n;
    await vi.waitFor(() => expect(freshness.primaryReason(A)).toBeUndefined());
    freshness.close();
  });

  it("keeps this process's own writes on the primary before their notification arrives", async () => {
    const { freshness, wal, polls } = scenario();
    freshness.changed(A);
    expect(freshness.primaryReason(A)).toBe("changed-recently");
    wal.replayed = 100n;
    await polls();
    expect(freshness.primaryReason(A)).toBeUndefined();
    freshness.close();
  });

  it("a second change of an entry waits for its own position, not the first one's", async () => {
    const { freshness, wal, notify, polls } = scenario();
    notify(A);
    await polls();
    wal.primary = 200n;
    notify(A);
    wal.replayed = 100n;
    await polls();
    expect(freshness.primaryReason(A)).toBe("changed-recently");
    wal.replayed = 200n;
    await vi.waitFor(() => expect(freshness.primaryReason(A)).toBeUndefined());
    freshness.close();
  });

  it("sends every read to the primary while the change feed is down, and after a reset until replicas catch up", async () => {
    const { freshness, feed, wal, reset, polls } = scenario();
    feed.live = false;
    expect(freshness.primaryReason(B)).toBe("change-feed-down");
    reset();
    feed.live = true;
    expect(freshness.primaryReason(B)).toBe("changed-recently");
    wal.replayed = 99n;
    await polls();
    expect(freshness.primaryReason(B)).toBe("changed-recently");
    wal.replayed = 100n;
    await vi.waitFor(() => expect(freshness.primaryReason(B)).toBeUndefined());
    freshness.close();
  });

  it("keeps changed entries on the primary while positions cannot be read, reporting once", async () => {
    const { freshness, wal, errors, notify, polls } = scenario();
    wal.failing = true;
    wal.replayed = 1_000n;
    notify(A);
    await polls();
    await polls();
    expect(freshness.primaryReason(A)).toBe("changed-recently");
    expect(errors).toHaveLength(1);
    wal.failing = false;
    await vi.waitFor(() => expect(freshness.primaryReason(A)).toBeUndefined());
    freshness.close();
  });

  it("past its tracking limit treats every entry as changed until the replicas catch up", async () => {
    const { freshness, wal, notify } = scenario({ maxTracked: 2 });
    notify(A);
    notify(B);
    notify("did:reg:main:skill:c");
    expect(freshness.primaryReason("did:reg:main:skill:never-changed")).toBe("changed-recently");
    wal.replayed = 100n;
    await vi.waitFor(() => expect(freshness.primaryReason("did:reg:main:skill:never-changed")).toBeUndefined());
    expect(freshness.primaryReason(A)).toBeUndefined();
    freshness.close();
  });
});
