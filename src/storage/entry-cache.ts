import type {
  EntryRepository,
  EntryVersionSummary,
  StoredEntry,
} from "../entries/entry-repository.js";

/**
 * Where a cache learns that an entry changed in another process. `onChange` receives the entry
 * DID (without version) of every committed write; `onReset` means changes may have been missed
 * (the feed was down), so everything cached must go.
 */
export interface ChangeFeed {
  /** Whether changes are being received right now; while false nothing is cached. */
  readonly live: boolean;
  subscribe(listener: { onChange(baseDid: string): void; onReset(): void }): void;
}

export interface EntryCacheOptions {
  /** Most entry DIDs kept; the least recently used go first. */
  readonly maxEntries?: number;
  /** Longest a cached answer is served, as a backstop behind the change feed. */
  readonly ttlMs?: number;
  readonly now?: () => number;
}

interface CachedName {
  readonly storedAt: number;
  latest?: StoredEntry | null;
  versionList?: EntryVersionSummary[];
  readonly versions: Map<string, StoredEntry | null>;
}

/**
 * A read-through cache of resolves and version lists, per entry DID, in front of a repository.
 * Every write through this process drops the entry at once; writes by other processes arrive
 * through the change feed. A read that overlapped any change does not fill the cache, so a
 * stale answer read before a commit cannot be stored after that commit's invalidation.
 */
export function createCachedEntryRepository(
  inner: EntryRepository,
  feed: ChangeFeed,
  options: EntryCacheOptions = {},
): EntryRepository & { readonly size: number } {
  const maxEntries = options.maxEntries ?? 50_000;
  const ttlMs = options.ttlMs ?? 60_000;
  const now = options.now ?? Date.now;
  const names = new Map<string, CachedName>();
  let changes = 0;

  const drop = (baseDid: string) => {
    changes++;
    names.delete(baseDid);
  };
  feed.subscribe({
    onChange: drop,
    onReset: () => {
      changes++;
      names.clear();
    },
  });

  function cached(baseDid: string): CachedName | undefined {
    const name = names.get(baseDid);
    if (name === undefined) return undefined;
    if (!feed.live || now() - name.storedAt > ttlMs) {
      names.delete(baseDid);
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
    if (value !== undefined) return value;
    const changesBefore = changes;
    const loaded = await load();
    if (feed.live && changes === changesBefore) {
      let name = names.get(baseDid);
      if (name === undefined) {
        name = { storedAt: now(), versions: new Map() };
        names.set(baseDid, name);
        if (names.size > maxEntries) names.delete(names.keys().next().value as string);
      }
      put(name, loaded);
    }
    return loaded;
  }

  return {
    get size() {
      return names.size;
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
