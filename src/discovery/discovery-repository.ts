import type { StoredEntry } from "../entries/entry-repository.js";
import type { DiscoveryPlan } from "./discovery-plan.js";

/** A projected row: each selected column, by how the query wrote it (`version`, `data.a.b`). */
export type ProjectedValues = ReadonlyMap<string, unknown>;

export interface DiscoveredRow<T> {
  readonly values: T;
  /** The row's place in the plan's order, opaque to callers; a cursor carries it. */
  readonly position: readonly string[];
}

export interface PageRequest {
  /** Only rows after this position (from an earlier page's last row). */
  readonly after?: readonly string[];
  /** Most rows returned. */
  readonly size: number;
  /**
   * Whether to count the matches too, in the same snapshot as the page: undefined not to, a number
   * to count up to that many and stop (the answer is then at most limit + 1, meaning "more"),
   * Infinity to count every match.
   */
  readonly countLimit?: number;
}

export interface DiscoveredPage<T> {
  readonly rows: readonly DiscoveredRow<T>[];
  /** The matches counted, when counting was asked for: at most countLimit + 1. */
  readonly total?: number;
}

/** Discovery reads in domain words; how plans become SQL is the implementation's business. */
export interface DiscoveryRepository {
  /** Whole entries, for a plan whose projection is "entry". */
  findEntries(plan: DiscoveryPlan, page: PageRequest): Promise<DiscoveredPage<StoredEntry>>;
  /** The selected columns only, for a plan with a column projection. */
  findProjected(plan: DiscoveryPlan, page: PageRequest): Promise<DiscoveredPage<ProjectedValues>>;
}
