import { ENTRY_FIELDS } from "../domain/entry-fields.js";
import type { Column } from "./query-language/ast.js";
import { checkQuery } from "./query-language/columns.js";
import { parseQuery } from "./query-language/parser.js";
import type { CursorCodec, DecodedCursor } from "./page-cursor.js";
import type { StoredEntry } from "../entries/entry-repository.js";
import { InvalidArgumentError, type FieldViolation } from "../errors.js";
import { planDiscovery, type DiscoveryPlan } from "./discovery-plan.js";
import type { DiscoveredPage, DiscoveryRepository, PageRequest } from "./discovery-repository.js";
import { structuredQuery, type JsonValue, type StructuredRequest } from "./structured-conditions.js";

/** Page sizes (CONTRACT 6; 0 means the default, as in Google's AIP-158). */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export interface DiscoverRequest extends StructuredRequest {
  readonly limit: number;
  readonly cursor: string;
}

export interface DiscoverResult {
  readonly entries: readonly StoredEntry[];
  /** Matches counted exactly, up to the count limit. */
  readonly total: number;
  /** More entries match than total says: it is the count limit, a lower bound. */
  readonly totalIsLowerBound: boolean;
  readonly nextCursor?: string;
}

export interface QueryRequest {
  readonly query: string;
  readonly limit: number;
  readonly cursor: string;
}

/** One result of a query: the selected columns under the Entry's JSON names; data paths nested. */
export type QueryRow = { [key: string]: JsonValue };

export interface QueryResult {
  readonly rows: readonly QueryRow[];
  readonly nextCursor?: string;
}

export interface DiscoveryServiceOptions {
  readonly repository: DiscoveryRepository;
  readonly cursors: CursorCodec;
  /**
   * The most matches a listing counts exactly; 0 counts every match. Counting costs time in
   * proportion to what it counts, so a bound keeps every public request's cost bounded.
   */
  readonly totalLimit: number;
}

export type DiscoveryService = ReturnType<typeof createDiscoveryService>;

/**
 * Discovery by structured conditions and by the query language. Both become one plan (filter,
 * total order, projection) and page through it by keyset: a cursor holds the last row's place in
 * the order, so entries published while a client pages neither repeat nor shift the pages.
 */
export function createDiscoveryService(options: DiscoveryServiceOptions) {
  const { repository, cursors } = options;
  const countLimit = options.totalLimit === 0 ? Infinity : options.totalLimit;

  async function discover(request: DiscoverRequest): Promise<DiscoverResult> {
    // Every fault at once: the page size and each condition are independent.
    const [size, plan] = allOrViolations(
      () => pageSize(request.limit, DEFAULT_PAGE_SIZE),
      () => planRequest("discover", request),
    );
    const resumed = resume(request.cursor, plan);
    const page = await repository.findEntries(plan, { ...pageRequest(resumed, size), ...(resumed === undefined ? { countLimit } : {}) });
    // The first page counts; later pages repeat that count, which is exactly what walking the
    // listing yields (entries published meanwhile sort before the cursor and are not visited).
    // The cursor keeps the count as made, so limit + 1 still says "more" on later pages.
    const counted = resumed?.total ?? page.total ?? 0;
    const next = nextPosition(page, size);
    return {
      entries: page.rows.slice(0, size).map((row) => row.values),
      total: Math.min(counted, countLimit),
      totalIsLowerBound: counted > countLimit,
      ...(next === undefined ? {} : { nextCursor: cursors.encode({ binding: plan.binding, position: next, total: counted }) }),
    };
  }

  async function query(request: QueryRequest): Promise<QueryResult> {
    const plan = planRequest("query", request);
    const resumed = resume(request.cursor, plan);
    const remaining = resumed?.remaining ?? plan.limit;
    const size = Math.min(
      pageSize(request.limit, Math.min(plan.limit ?? DEFAULT_PAGE_SIZE, DEFAULT_PAGE_SIZE)),
      remaining ?? MAX_PAGE_SIZE,
    );
    if (size === 0) return { rows: [] };
    const page = await repository.findProjected(plan, pageRequest(resumed, size));
    const rows = page.rows.slice(0, size).map((row) => queryRow(plan.projection, row.values));
    const left = remaining === undefined ? undefined : remaining - rows.length;
    const next = left === 0 ? undefined : nextPosition(page, size);
    return {
      rows,
      ...(next === undefined
        ? {}
        : { nextCursor: cursors.encode({ binding: plan.binding, position: next, ...(left === undefined ? {} : { remaining: left }) }) }),
    };
  }

  function resume(cursor: string, plan: DiscoveryPlan): DecodedCursor | undefined {
    if (cursor === "") return undefined;
    const decoded = cursors.decode(cursor, plan.binding);
    // Signed by this registry for this very plan, so a malformed position is a server bug.
    if (!decoded.position.every((value) => typeof value === "string")) {
      throw InvalidArgumentError.of("cursor", "is not a valid cursor");
    }
    return decoded;
  }

  return { discover, query };
}

/**
 * What a request asks for, checked and planned: the plan the repository runs, whose binding its
 * cursors carry. Pure, so the benchmark explains the very plan the service runs by calling this.
 */
export function planRequest(endpoint: "discover", request: StructuredRequest): DiscoveryPlan<"entry">;
export function planRequest(endpoint: "query", request: Pick<QueryRequest, "query">): DiscoveryPlan<readonly Column[]>;
export function planRequest(
  ...[endpoint, request]: ["discover", StructuredRequest] | ["query", Pick<QueryRequest, "query">]
): DiscoveryPlan {
  if (endpoint === "discover") return planDiscovery("discover", structuredQuery(request), "entry");
  const checked = checkQuery(parseQuery(request.query));
  return planDiscovery("query", checked.query, checked.selected);
}

/** Both results, or one invalid_argument holding every field violation either raised. */
export function allOrViolations<A, B>(first: () => A, second: () => B): [A, B] {
  const violations: FieldViolation[] = [];
  const attempt = <T>(work: () => T): T | undefined => {
    try {
      return work();
    } catch (error) {
      if (!(error instanceof InvalidArgumentError)) throw error;
      violations.push(...error.violations);
      return undefined;
    }
  };
  const results = [attempt(first), attempt(second)] as [A, B];
  if (violations.length > 0) throw new InvalidArgumentError(violations);
  return results;
}

/** One row more than the page shows tells whether another page exists, without counting. */
function pageRequest(resumed: DecodedCursor | undefined, size: number): PageRequest {
  return { size: size + 1, ...(resumed === undefined ? {} : { after: resumed.position as string[] }) };
}

function nextPosition<T>(page: DiscoveredPage<T>, size: number): readonly string[] | undefined {
  return page.rows.length > size ? page.rows[size - 1]!.position : undefined;
}

/** A request's page size: 0 means the default; larger than the most is clamped; negative is refused. */
export function pageSize(limit: number, fallback: number): number {
  if (!Number.isInteger(limit) || limit < 0) throw InvalidArgumentError.of("limit", "must not be negative");
  if (limit === 0) return fallback;
  return Math.min(limit, MAX_PAGE_SIZE);
}

/** JSON names of the columns, as an Entry is written in JSON, from the field catalogue. */
const JSON_NAMES: Readonly<Record<string, string>> = Object.fromEntries(ENTRY_FIELDS.map((field) => [field.column, field.name]));

function queryRow(selected: readonly Column[], values: ReadonlyMap<string, unknown>): QueryRow {
  const row: QueryRow = {};
  for (const column of selected) {
    const value = values.get(column.kind === "column" ? column.name : ["data", ...column.path].join("."));
    if (column.kind === "column") row[JSON_NAMES[column.name] ?? column.name] = jsonValue(value);
    else setPath(row, ["data", ...column.path], (value ?? null) as JsonValue);
  }
  return row;
}

/** Database values in the Entry's JSON forms: times as RFC 3339 with milliseconds, int64 as text. */
function jsonValue(value: unknown): JsonValue {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "bigint") return value.toString();
  if (value === undefined) return null;
  return value as JsonValue;
}

/**
 * Writes a value at a path of own properties only: keys come from the query (data.<path>), and a
 * plain assignment to a key such as "__proto__" would reach the prototype (the column checker
 * refuses those keys; this keeps a missed one harmless).
 */
function setPath(target: { [key: string]: JsonValue }, path: readonly string[], value: JsonValue): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = Object.hasOwn(node, key) ? node[key] : undefined;
    if (typeof next === "object" && next !== null && !Array.isArray(next)) node = next as { [key: string]: JsonValue };
    else {
      const child: { [key: string]: JsonValue } = {};
      Object.defineProperty(node, key, { value: child, enumerable: true, writable: true, configurable: true });
      node = child;
    }
  }
  Object.defineProperty(node, path.at(-1)!, { value, enumerable: true, writable: true, configurable: true });
}
