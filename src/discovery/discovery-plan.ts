/**
 * What both discovery endpoints compile to: one filter, one total order, one projection. Structured
 * conditions and the query language meet here, so the same question asked either way runs the same
 * SQL and returns the same entries. Pure: no I/O.
 */
import { DEFAULT_DISCOVERY_STATUSES } from "../domain/version-state.js";
import type { Column, Expr, OrderItem, Query, SortDirection } from "./query-language/ast.js";
import { columnText } from "./query-language/ast.js";
import { cursorBinding } from "./page-cursor.js";

/** What each result carries: whole entries ("entry", structured discover) or the selected columns. */
export type Projection = "entry" | readonly Column[];

export interface DiscoveryPlan<P extends Projection = Projection> {
  /** The filter, including the default that leaves revoked entries out. */
  readonly where: Expr | undefined;
  /**
   * The requested order followed by `sequence` as a tie-breaker: sequence is unique, so the order
   * is total and a keyset position names exactly one place in it.
   */
  readonly order: readonly OrderItem[];
  /** The columns each result carries; "entry" for whole entries (structured discover). */
  readonly projection: P;
  /** The query's own LIMIT: the most rows the whole listing returns, across pages. */
  readonly limit: number | undefined;
  /** Fingerprint of everything that gives a cursor position its meaning. */
  readonly binding: string;
}

const SOMEWHERE = { line: 1, column: 1 } as const;
const SEQUENCE: Column = { kind: "column", name: "sequence", position: SOMEWHERE };

/** Newest first, as a registry's listing usually is. */
const DEFAULT_ORDER: readonly OrderItem[] = [{ column: SEQUENCE, direction: "desc" }];

export type DiscoveryEndpoint = "discover" | "query";

export function planDiscovery<P extends Projection>(endpoint: DiscoveryEndpoint, query: Query, projection: P): DiscoveryPlan<P> {
  const where = withDefaultStatus(query.where);
  const order = totalOrder(query.orderBy.length === 0 ? DEFAULT_ORDER : query.orderBy);
  return {
    where,
    order,
    projection,
    limit: query.limit,
    binding: cursorBinding({
      endpoint,
      where: withoutPositions(where),
      order: order.map((item) => [columnText(item.column), item.direction]),
      projection: projection === "entry" ? "entry" : projection.map(columnText),
      limit: query.limit ?? null,
    }),
  };
}

/**
 * The columns about an entry's lifecycle: a filter that names one is asking about revocations, so
 * it sees revoked entries (`revoked_at > '2026-11-01'` would otherwise match nothing).
 */
const LIFECYCLE_COLUMNS: readonly string[] = ["status", "revoked_at"];

/**
 * Only active and deprecated versions unless the filter says something about the lifecycle
 * itself: yanked, quarantined, revoked and removed ones are reached by naming `status`.
 */
function withDefaultStatus(where: Expr | undefined): Expr | undefined {
  if (where !== undefined && LIFECYCLE_COLUMNS.some((name) => mentionsColumn(where, name))) return where;
  const active: Expr = {
    kind: "in",
    column: { kind: "column", name: "status", position: SOMEWHERE },
    values: DEFAULT_DISCOVERY_STATUSES.map((value) => ({ value, position: SOMEWHERE })),
    negated: false,
    position: SOMEWHERE,
  };
  if (where === undefined) return active;
  return { kind: "and", operands: [where, active], position: where.position };
}

function mentionsColumn(expr: Expr, name: string): boolean {
  switch (expr.kind) {
    case "and":
    case "or":
      return expr.operands.some((operand) => mentionsColumn(operand, name));
    case "not":
      return mentionsColumn(expr.operand, name);
    default:
      return expr.column.kind === "column" && expr.column.name === name;
  }
}

/** Items after `sequence` can never decide anything, so the order ends there. */
function totalOrder(items: readonly OrderItem[]): OrderItem[] {
  const order: OrderItem[] = [];
  for (const item of items) {
    order.push(item);
    if (item.column.kind === "column" && item.column.name === "sequence") return order;
  }
  // The tie-breaker runs the way the last item does, so a one-direction order stays one row
  // comparison (and one index range) in SQL.
  const direction: SortDirection = order.at(-1)?.direction ?? "desc";
  order.push({ column: SEQUENCE, direction });
  return order;
}

/** The tree without source positions: the same question written differently binds the same. */
export function withoutPositions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutPositions);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => key !== "position")
        .map(([key, inner]) => [key, withoutPositions(inner)]),
    );
  }
  return value;
}
