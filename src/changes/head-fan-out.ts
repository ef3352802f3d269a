import type { LoggedChange } from "./change-log.js";
import type { LogGrowth } from "./log-growth.js";
import type { LogTail } from "./log-tail.js";

/**
 * Where a stream's changes go, written as they are offered: the change stream's response.
 * It keeps its own position, so whoever offers it changes (its own reads, or the head) hands it
 * exactly the records after it.
 */
export interface ChangeSink {
  /** The index of the last change taken; -1 before the first. */
  readonly last: bigint;
  /**
   * Takes `changes`, consecutive from `last + 1`, in order, until it is full (its client has not
   * read what it holds); false once it is full or gone, and what it did not take is offered again.
   */
  offer(changes: readonly LoggedChange[]): boolean;
  /** Resolves true once the sink takes changes again, false when it never will (stalled, gone). */
  ready(): Promise<boolean>;
}

/**
 * The streams at the head of the log, pushed each new record by the shared tail when it grows, in
 * passes over them: a commit costs one read and one write per stream, with no stream of its own to
 * wake. Records that land while a pass runs go out together with the records before them. A stream
 * leaves the head when it is full (its client reads slower than the log grows) or the tail moved
 * past it, and catches up by reading; it comes back once it reaches the head.
 */
export interface HeadFanOut {
  /**
   * Pushes `sink` every record after its `last` until it is full, falls behind the tail, or
   * `signal` aborts; resolves then. Rejects when reading the log fails.
   */
  follow(sink: ChangeSink, signal: AbortSignal): Promise<void>;
  /** The tail grew: push its new records to every stream at the head. */
  push(): void;
}

/**
 * Followers written to in one turn of the event loop. A pass over all of them at once holds the
 * next create's reads and answer behind every stream's write; in turns, the writes fill the time
 * that create waits on the database.
 */
const PUSH_CHUNK = 64;

interface Follower {
  readonly sink: ChangeSink;
  leave(): void;
  fail(error: unknown): void;
}

export function createHeadFanOut(tail: LogTail, growth: LogGrowth): HeadFanOut {
  const followers = new Set<Follower>();
  let pump: AbortController | undefined;
  /** Whether a pass over the followers is under way, and whether the tail grew again meanwhile. */
  let passing = false;
  let again = false;

  /** Offers the held records to `list`, PUSH_CHUNK followers a turn, from `from`; again if the tail grew meanwhile. */
  function pass(list: readonly Follower[], from: number): void {
    const to = Math.min(list.length, from + PUSH_CHUNK);
    for (let i = from; i < to; i += 1) if (followers.has(list[i]!)) offer(list[i]!);
    if (to < list.length) return void setImmediate(pass, list, to);
    passing = false;
    if (!again) return;
    again = false;
    passing = true;
    pass([...followers], 0);
  }

  /**
   * Where the next read starts: the oldest position among the followers, or the tail's last
   * record if that is later (its records are being pushed to the others).
   */
  function nextRead(): bigint {
    let oldest: bigint | undefined;
    for (const { sink } of followers) if (oldest === undefined || sink.last < oldest) oldest = sink.last;
    const lastHeld = tail.end === undefined ? undefined : tail.end - 1n;
    if (oldest === undefined) return lastHeld ?? -1n;
    return lastHeld !== undefined && lastHeld > oldest ? lastHeld : oldest;
  }

  /**
   * While anyone follows: one wait for the log to grow past them, then one read into the tail,
   * whose growth pushes to them all.
   */
  async function run(controller: AbortController): Promise<void> {
    const signal = controller.signal;
    const waits = growth.follower(signal);
    try {
      while (!signal.aborted) {
        const from = nextRead();
        await waits.waitBeyond(from);
        if (signal.aborted) return;
        // A stream's own read may have brought the records already (and pushed them).
        if (!tail.holdsAfter(from)) await tail.extend(from);
      }
    } catch (error) {
      for (const follower of followers) follower.fail(error);
    } finally {
      waits.close();
      // Whoever follows next starts a pump of its own.
      controller.abort();
    }
  }

  function ensurePump(): void {
    if (pump !== undefined && !pump.signal.aborted) return;
    pump = new AbortController();
    void run(pump);
  }

  /**
   * Hands `sink` every record the tail holds after its position, one read's worth at a time;
   * false when it cannot follow from the tail: it is full, or older than what the tail holds.
   */
  function offerHeld(sink: ChangeSink): boolean {
    for (;;) {
      const held = tail.heldAfter(sink.last);
      if (held === undefined) return tail.end === undefined;
      if (held.length === 0) return true;
      if (!sink.offer(held)) return false;
    }
  }

  function offer(follower: Follower): void {
    if (!offerHeld(follower.sink)) follower.leave();
  }

  return {
    follow(sink, signal) {
      return new Promise<void>((resolve, reject) => {
        if (signal.aborted) return resolve();
        // Full, or older than the tail holds: the stream reads its way up first.
        if (!offerHeld(sink)) return resolve();
        const end = (settle: () => void) => {
          if (!followers.delete(follower)) return;
          signal.removeEventListener("abort", onAbort);
          if (followers.size === 0) pump?.abort();
          settle();
        };
        const follower: Follower = {
          sink,
          leave: () => end(resolve),
          fail: (error) => end(() => reject(error)),
        };
        const onAbort = () => follower.leave();
        signal.addEventListener("abort", onAbort, { once: true });
        followers.add(follower);
        ensurePump();
      });
    },

    push() {
      if (passing) {
        again = true;
        return;
      }
      passing = true;
      pass([...followers], 0);
    },
  };
}
