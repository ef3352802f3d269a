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
  /** Whether to count every match too, in the same snapshot as the page. */
  readonly count: boolean;
}

export interface DiscoveredPage<T> {
  readonly rows: readonly DiscoveredRow<T>[];
  /** Every match, when counting was asked for. */
  readonly total?: number;
}

/** Discovery reads in domain words; how plans become SQL is the implementation's business. */
export interface DiscoveryRepository {
  /** Whole entries, for a plan whose projection is "entry". */
  findEntries(plan: DiscoveryPlan, page: PageRequest): Promise<DiscoveredPage<StoredEntry>>;
  /** The selected columns only, for a plan with a column projection. */
  findProjected(plan: DiscoveryPlan, page: PageRequest): Promise<DiscoveredPage<ProjectedValues>>;
}
