import type { StoredEntry } from "../entries/entry-repository.js";
import type { DiscoveredPage, PageRequest } from "./discovery-repository.js";

/** What a search looks for, checked and normalised (search-query.ts). */
export interface SearchQuery {
  /** The searched words: lower case, letters and digits only, at least one. */
  readonly words: readonly string[];
  /** Only entries of this type; empty for every type. */
  readonly entryType: string;
}

/** Search reads in domain words; how the ranking becomes SQL is the implementation's business. */
export interface SearchRepository {
  /** The latest version of each matching name, best match first, a page after `page.after`. */
  search(query: SearchQuery, page: Omit<PageRequest, "countLimit">): Promise<DiscoveredPage<StoredEntry>>;
}
