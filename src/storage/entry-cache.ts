import { deepFreeze } from "../domain/deep-freeze.js";
import type { EntryRepository, EntryVersionSummary, StoredEntry } from "../entries/entry-repository.js";

/**
 * Where a cache learns that an entry changed in another process. `onChange` receives the entry
 * DID (without version) of every committed write; `onReset` means changes may have been missed
 * (the feed was down), so everything cached must go.
 */
/** Told of each change: the entry DID (without version) it touched, or that changes may have been missed. */
export interface ChangeListener {
  onChange(baseDid: string): void;
  onReset(): void;
}

export interface ChangeFeed {
  /** Whether changes are being received right now; while false nothing is cached. */
  readonly live: boolean;
  subscribe(listener: ChangeListener): void;
}

export interface EntryCacheOptions {
  /** Most entry DIDs kept; the least recently used go first. */
  readonly maxEntries?: number;
  /**
   * Most memory the cached answers may take, estimated from their content; the least recently
   * used go first. Entries differ a lot in size (data can be 32 KiB), so a count alone is no bound.
   */
  readonly maxBytes?: number;
  /** Longest a cached answer is served, as a backstop behind the change feed. */
  readonly ttlMs?: number;
  readonly now?: () => number;
  /** Told of every read: answered from the cache (true) or from the repository (false), for metrics. */
  readonly onRead?: (hit: boolean) => void;
}

interface CachedName {
  readonly storedAt: number;
  /** Estimated memory of everything cached under this name. */
  bytes: number;
  latest?: StoredEntry | null;
  versionList?: EntryVersionSummary[];
  readonly versions: Map<string, StoredEntry | null>;
}

/**
 * A read-through cache of resolves and version lists, per entry DID, in front of a repository.
 * Every write through this process drops the entry at once; writes by other processes arrive
 * through the change feed. A read that overlapped any change does not fill the cache, so a
 * stale answer read before a commit cannot be stored after that commit's invalidation. What it
 * keeps is frozen: every later read of the same name shares it.
 */
export function createCachedEntryRepository(
  inner: EntryRepository,
  feed: ChangeFeed,
  options: EntryCacheOptions = {},
): EntryRepository & {
  readonly size: number;
  readonly bytes: number;
  /**
   * Every change this cache acts on, as it acts on it: this process's writes at once, other
   * processes' as the feed brings them. Caches built on what this one answers (the edge's kept
   * answers) listen here, so they are never staler than it is.
   */
  readonly changes: ChangeFeed;
} {
  const maxEntries = options.maxEntries ?? 50_000;
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const ttlMs = options.ttlMs ?? 60_000;
  const now = options.now ?? Date.now;
  const onRead = options.onRead ?? (() => {});
  const names = new Map<string, CachedName>();
  let bytes = 0;
  let changes = 0;
  const listeners: ChangeListener[] = [];

  const forget = (baseDid: string) => {
    const name = names.get(baseDid);
    if (name === undefined) return;
    bytes -= name.bytes;
    names.delete(baseDid);
  };
  const drop = (baseDid: string) => {
    changes++;
    forget(baseDid);
    for (const listener of listeners) listener.onChange(baseDid);
  };
  feed.subscribe({
    onChange: drop,
    onReset: () => {
      changes++;
      names.clear();
      bytes = 0;
      for (const listener of listeners) listener.onReset();
    },
  });

  function cached(baseDid: string): CachedName | undefined {
    const name = names.get(baseDid);
    if (name === undefined) return undefined;
    if (!feed.live || now() - name.storedAt > ttlMs) {
      forget(baseDid);
      return undefined;
    }
    // Re-inserting keeps the Map in least-recently-used order.
    names.delete(baseDid);
    names.set(baseDid, name);
    return name;
  }

  async function readThrough<T>(
    baseDid: string,
    get: (name: CachedName) => T | undefined,
    put: (name: CachedName, value: T) => void,
    load: () => Promise<T>,
  ): Promise<T> {
    const hit = cached(baseDid);
    const value = hit === undefined ? undefined : get(hit);
    onRead(value !== undefined);
    if (value !== undefined) return value;
    const changesBefore = changes;
    const loaded = await load();
    if (feed.live && changes === changesBefore) {
      let name = names.get(baseDid);
      if (name === undefined) {
        name = { storedAt: now(), bytes: NAME_OVERHEAD_BYTES, versions: new Map() };
        names.set(baseDid, name);
        bytes += NAME_OVERHEAD_BYTES;
      }
      const size = estimatedBytes(loaded as StoredEntry | EntryVersionSummary[] | null);
      name.bytes += size;
      bytes += size;
      put(name, deepFreeze(loaded));
      // The Map iterates least recently used first.
      while (names.size > maxEntries || (bytes > maxBytes && names.size > 0)) {
        forget(names.keys().next().value as string);
      }
    }
    return loaded;
  }

  return {
    get size() {
      return names.size;
    },
    get bytes() {
      return bytes;
    },
    changes: {
      get live() {
        return feed.live;
      },
      subscribe: (listener) => void listeners.push(listener),
    },
    async createEntry(entry) {
      try {
        return await inner.createEntry(entry);
      } finally {
        drop(entry.baseDid);
      }
    },
    async revoke(baseDid, version, revocation) {
      try {
        return await inner.revoke(baseDid, version, revocation);
      } finally {
        drop(baseDid);
      }
    },
    async applyAction(baseDid, version, action, decide) {
      try {
        return await inner.applyAction(baseDid, version, action, decide);
      } finally {
        drop(baseDid);
      }
    },
    findLatest: (baseDid) =>
      readThrough(
        baseDid,
        (name) => name.latest,
        (name, entry) => void (name.latest = entry ?? null),
        async () => (await inner.findLatest(baseDid)) ?? null,
      ).then((entry) => entry ?? undefined),
    findVersion: (baseDid, version) =>
      readThrough(
        baseDid,
        (name) => name.versions.get(version),
        (name, entry) => void name.versions.set(version, entry ?? null),
        async () => (await inner.findVersion(baseDid, version)) ?? null,
      ).then((entry) => entry ?? undefined),
    listVersions: (baseDid) =>
      readThrough(
        baseDid,
        (name) => name.versionList,
        (name, list) => void (name.versionList = list),
        () => inner.listVersions(baseDid),
      ),
    // Ownership never changes once set, but an unknown name must not be remembered as unowned.
    findOwner: (baseDid) => inner.findOwner(baseDid),
  };
}

const NAME_OVERHEAD_BYTES = 256;
const ENTRY_OVERHEAD_BYTES = 1_024;

/**
 * A rough memory estimate of a cached answer: a fixed cost per entry plus its variable-length
 * text, counted at two bytes a character as V8 may store it. Close enough to bound the cache.
 */
function estimatedBytes(value: StoredEntry | EntryVersionSummary[] | null): number {
  if (value === null) return 64;
  if (Array.isArray(value)) return value.length * 256;
  return ENTRY_OVERHEAD_BYTES + 2 * (value.description.length + JSON.stringify(value.data).length + value.tags.join("").length);
}
