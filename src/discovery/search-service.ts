import type { StoredEntry } from "../entries/entry-repository.js";
import { InvalidArgumentError } from "../errors.js";
import { allOrViolations, DEFAULT_PAGE_SIZE, pageSize } from "./discovery-service.js";
import type { CursorCodec } from "./page-cursor.js";
import { planSearch } from "./search-query.js";
import type { SearchRepository } from "./search-repository.js";

export interface SearchRequest {
  readonly q: string;
  readonly entryType: string;
  readonly limit: number;
  readonly cursor: string;
}

export interface SearchResult {
  readonly entries: readonly StoredEntry[];
  readonly nextCursor?: string;
}

export interface SearchServiceOptions {
  readonly repository: SearchRepository;
  /** The codec discovery's cursors use: the same secret, lifetime and refusals. */
  readonly cursors: CursorCodec;
}

export type SearchService = ReturnType<typeof createSearchService>;

/**
 * Ranked search (CONTRACT-HISTORY 18): pages through the matches best first by keyset, as
 * discovery does; a cursor holds the last row's (tier score, sequence) and is bound to the words and
 * type it came from.
 */
export function createSearchService(options: SearchServiceOptions) {
  const { repository, cursors } = options;

  async function search(request: SearchRequest): Promise<SearchResult> {
    const { plan, size } = checked(request);
    const after = request.cursor === "" ? undefined : positionOf(cursors.decode(request.cursor, plan.binding).position);
    // One row more than the page shows tells whether another page exists.
    const page = await repository.search(plan.query, { size: size + 1, ...(after === undefined ? {} : { after }) });
    const entries = page.rows.slice(0, size).map((row) => row.values);
    const next = page.rows.length > size ? page.rows[size - 1]!.position : undefined;
    return {
      entries,
      ...(next === undefined ? {} : { nextCursor: cursors.encode({ binding: plan.binding, position: next }) }),
    };
  }

  return { search };
}

/** The plan and the page size, every fault at once. */
function checked(request: SearchRequest) {
  const [plan, size] = allOrViolations(
    () => planSearch(request),
    () => pageSize(request.limit, DEFAULT_PAGE_SIZE),
  );
  return { plan, size };
}

/** Signed by this registry for this very search; one of another shape is from an earlier release. */
function positionOf(position: readonly unknown[]): string[] {
  if (position.length !== 2 || !position.every((value) => typeof value === "string" && value !== "" && Number.isFinite(Number(value)))) {
    throw InvalidArgumentError.of("cursor", "is not a valid cursor");
  }
  return position as string[];
}
