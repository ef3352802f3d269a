import { toBinary, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { ChangeFeed } from "../storage/entry-cache.js";
import type { KeptAnswer, ReadAnswers, ReadSlot } from "../transport/kept-answers.js";

/**
 * Answers to reads, kept per request as it arrived (a REST URL, a Connect GET query, an RPC body),
 * so that asking again skips decoding the request and running the handler. Everything else of a
 * call still runs each time: interceptors (rate limits, error mapping), headers, the access line
 * and the metrics.
 *
 * A handler opts an answer in with `keepAnswer`, naming the tag that changes when the answer
 * would: an entry's name. The tags arrive from the entry cache, which hears of this process's
 * writes at once and of other processes' through the change feed, so a kept answer is never older
 * than what the entry cache would have served. As there, an answer whose handler ran while any
 * change arrived is not kept, and nothing is kept while the feed is down.
 *
 * Only methods marked NO_SIDE_EFFECTS are considered: for them, the same request always means the
 * same call.
 */

export interface ReadAnswersOptions {
  /** Where changes are heard of: each names the tag of the answers it makes stale. */
  readonly changes: ChangeFeed;
  /** Most requests remembered; the least recently used go first. */
  readonly maxRequests?: number;
  /** Most memory the kept requests and answers may take, estimated from their encoded size. */
  readonly maxBytes?: number;
  /** Longest an answer is kept, as a backstop behind the change feed. */
  readonly ttlMs?: number;
  readonly now?: () => number;
  /** Told of every call that could have been answered from here: whether it was (for metrics). */
  readonly onRead?: (kept: boolean) => void;
}

/** What a kept answer costs besides its encoding, and what a remembered request costs besides its key. */
const ANSWER_OVERHEAD_BYTES = 512;
const SLOT_OVERHEAD_BYTES = 256;

/**
 * One remembered request: what it decoded to (the protocol's business), and the answer kept for it
 * while that answer is current.
 */
class StoredReadSlot implements ReadSlot {
  #kept: (KeptAnswer & { readonly tag: string; readonly storedAt: number; readonly bytes: number }) | undefined;

  constructor(
    readonly key: string,
    readonly decoded: unknown,
    readonly bytes: number,
    private readonly cache: ReadAnswerStore,
  ) {}

  /** The kept answer, if there is one and it is still current. */
  answer(): KeptAnswer | undefined {
    const kept = this.#kept;
    const current = kept !== undefined && this.cache.isCurrent(kept.storedAt);
    this.cache.onRead(current);
    if (current) return kept;
    if (kept !== undefined) this.forget();
    return undefined;
  }

  /** Read before the handler runs: `keep` refuses the answer if anything changed since. */
  mark(): number {
    return this.cache.changes;
  }

  keep(mark: number, schema: DescMessage, message: Message, header: KeptAnswer["header"], tag: string): void {
    if (!this.cache.mayKeep(mark, this)) return;
    this.forget();
    // The answer is held as a message and, once sent, as its JSON or binary encoding: about three
    // times its binary size. Computed on a miss only.
    const bytes = ANSWER_OVERHEAD_BYTES + 3 * toBinary(schema, message).byteLength;
    this.#kept = { message, header, tag, storedAt: this.cache.now(), bytes };
    this.cache.kept(this, tag, bytes);
  }

  /** Drops the kept answer (stale, or replaced). */
  forget(): void {
    const kept = this.#kept;
    if (kept === undefined) return;
    this.#kept = undefined;
    this.cache.forgot(this, kept.tag, kept.bytes);
  }
}

/** What slots need of their cache. */
interface ReadAnswerStore {
  /** Changes heard of so far. */
  changes: number;
  now(): number;
  isCurrent(storedAt: number): boolean;
  mayKeep(mark: number, slot: StoredReadSlot): boolean;
  onRead(kept: boolean): void;
  kept(slot: StoredReadSlot, tag: string, bytes: number): void;
  forgot(slot: StoredReadSlot, tag: string, bytes: number): void;
}

export function createReadAnswers(options: ReadAnswersOptions): ReadAnswers {
  const maxRequests = options.maxRequests ?? 10_000;
  const maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  const ttlMs = options.ttlMs ?? 60_000;
  const now = options.now ?? Date.now;
  const { changes: feed } = options;
  const slots = new Map<string, StoredReadSlot>();
  /** The slots holding an answer, by the tag that makes it stale. */
  const byTag = new Map<string, Set<StoredReadSlot>>();
  let bytes = 0;

  const store: ReadAnswerStore = {
    changes: 0,
    now,
    isCurrent: (storedAt) => feed.live && now() - storedAt <= ttlMs,
    mayKeep: (mark, slot) => feed.live && store.changes === mark && slots.get(slot.key) === slot,
    onRead: options.onRead ?? (() => {}),
    kept(slot, tag, size) {
      let tagged = byTag.get(tag);
      if (tagged === undefined) byTag.set(tag, (tagged = new Set()));
      tagged.add(slot);
      bytes += size;
      evict();
    },
    forgot(slot, tag, size) {
      bytes -= size;
      const tagged = byTag.get(tag);
      tagged?.delete(slot);
      if (tagged?.size === 0) byTag.delete(tag);
    },
  };

  feed.subscribe({
    onChange(tag) {
      store.changes++;
      const tagged = byTag.get(tag);
      if (tagged === undefined) return;
      for (const slot of [...tagged]) slot.forget();
    },
    onReset() {
      store.changes++;
      for (const slot of slots.values()) slot.forget();
    },
  });

  function drop(slot: StoredReadSlot) {
    slot.forget();
    slots.delete(slot.key);
    bytes -= slot.bytes;
  }

  function evict() {
    // The Map iterates least recently used first.
    while (slots.size > maxRequests || (bytes > maxBytes && slots.size > 0)) {
      drop(slots.values().next().value as StoredReadSlot);
    }
  }

  return {
    find(key) {
      const slot = slots.get(key);
      if (slot === undefined) return undefined;
      // Re-inserting keeps the Map in least-recently-used order.
      slots.delete(key);
      slots.set(key, slot);
      return slot;
    },
    remember(key, decoded) {
      const old = slots.get(key);
      if (old !== undefined) drop(old);
      const slot = new StoredReadSlot(key, decoded, SLOT_OVERHEAD_BYTES + 2 * key.length, store);
      slots.set(key, slot);
      bytes += slot.bytes;
      evict();
      return slot;
    },
    get size() {
      return slots.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
