import type { Knex } from "knex";
import { columnText, type Column } from "../discovery/query-language/ast.js";
import type { DiscoveryPlan } from "../discovery/discovery-plan.js";
import type { DiscoveredPage, DiscoveryRepository, PageRequest, ProjectedValues } from "../discovery/discovery-repository.js";
import type { StoredEntry } from "../entries/entry-repository.js";
import { translateDriverErrors } from "./driver-errors.js";
import { afterPositionSql, filterSql, orderBySql, orderKeys, projectedColumnSql, type SqlFragment } from "../discovery/discovery-sql.js";
import { entryFromRow, type EntryRow } from "./entry-row.js";

export interface KnexDiscoveryRepositoryOptions {
  /** Longest a discovery statement may run before it is cancelled (deadline_exceeded). */
  readonly statementTimeoutMs: number;
}

/** Aliases of the order keys in the select list; no entries column starts with an underscore. */
const keyAlias = (index: number) => `_key${index}`;
const columnAlias = (index: number) => `_col${index}`;
const ENTRY_COLUMNS: readonly SqlFragment[] = [{ sql: "entries.*", bindings: [] }];

export function createKnexDiscoveryRepository(knex: Knex, options: KnexDiscoveryRepositoryOptions): DiscoveryRepository {
  const timeout = Math.trunc(options.statementTimeoutMs);

  /**
   * The page and its count read one snapshot (repeatable read), so the total describes the same
   * state the page was taken from; read-only, with a timeout of its own for every statement.
   */
  function inSnapshot<T>(work: (tx: Knex.Transaction) => Promise<T>): Promise<T> {
    return translateDriverErrors(() =>
      knex.transaction(
        async (tx) => {
          await tx.raw(`set local statement_timeout = ${timeout}`);
          return work(tx);
        },
        { isolationLevel: "repeatable read", readOnly: true },
      ),
    );
  }

  async function findPage<T>(
    plan: DiscoveryPlan,
    page: PageRequest,
    selectList: readonly SqlFragment[],
    read: (row: Record<string, unknown>) => T,
  ): Promise<DiscoveredPage<T>> {
    return inSnapshot(async (tx) => {
      const rows: Record<string, unknown>[] = await buildPageQuery(tx, plan, page, selectList);
      const total = page.countLimit === undefined ? undefined : await buildCountQuery(tx, plan, page.countLimit);
      const keyCount = orderKeys(plan.order).length;
      return {
        rows: rows.map((row) => ({
          values: read(row),
          position: Array.from({ length: keyCount }, (_, index) => String(row[keyAlias(index)])),
        })),
        ...(total === undefined ? {} : { total: Number(total[0]?.count ?? 0) }),
      };
    });
  }

  return {
    findEntries: (plan, page) => findPage<StoredEntry>(plan, page, ENTRY_COLUMNS, (row) => entryFromRow(row as unknown as EntryRow)),

    findProjected(plan, page) {
      const columns = plan.projection === "entry" ? [] : plan.projection;
      const selectList = columns.map((column, index) => aliased(projectedColumnSql(column), columnAlias(index)));
      return findPage<ProjectedValues>(plan, page, selectList, (row) => projectedValues(columns, row));
    },
  };
}

/** The compiler binds only strings, numbers and booleans: values knex passes to the driver as they are. */
function bound(fragment: SqlFragment): Knex.RawBinding[] {
  return fragment.bindings as Knex.RawBinding[];
}

function aliased(expression: SqlFragment, alias: string): SqlFragment {
  return { sql: `${expression.sql} as ${alias}`, bindings: expression.bindings };
}

function projectedValues(columns: readonly Column[], row: Record<string, unknown>): ProjectedValues {
  return new Map(columns.map((column, index) => [columnText(column), row[columnAlias(index)]]));
}

/**
 * The SELECT of one page: the projection, each order key as text (its cursor form), the filter,
 * the keyset condition, the order, the size. Exported so the benchmark can EXPLAIN exactly it.
 */
export function buildPageQuery(
  db: Knex | Knex.Transaction,
  plan: DiscoveryPlan,
  page: PageRequest,
  selectList: readonly SqlFragment[] = ENTRY_COLUMNS,
): Knex.QueryBuilder {
  const keys = orderKeys(plan.order);
  const query = db("entries");
  for (const item of selectList) query.select(db.raw(item.sql, bound(item)));
  for (const [index, key] of keys.entries())
    query.select(db.raw(`(${key.expression.sql})::text as ${keyAlias(index)}`, bound(key.expression)));
  // Knex joins raw conditions with a bare "and": a top-level OR must keep its own parentheses.
  if (plan.where !== undefined) {
    const where = filterSql(plan.where);
    query.whereRaw(`(${where.sql})`, bound(where));
  }
  if (page.after !== undefined) {
    const after = afterPositionSql(keys, page.after);
    query.whereRaw(after.sql, bound(after));
  }
  const orderBy = orderBySql(keys);
  return query.orderByRaw(orderBy.sql, bound(orderBy)).limit(page.size);
}

/**
 * The count of the plan's matches, up to `limit` + 1 (the scan stops there), or of every match
 * when the limit is Infinity.
 */
export function buildCountQuery(db: Knex | Knex.Transaction, plan: DiscoveryPlan, limit: number): Knex.QueryBuilder {
  const matches = db("entries").select(db.raw("1"));
  if (plan.where !== undefined) {
    const where = filterSql(plan.where);
    matches.whereRaw(`(${where.sql})`, bound(where));
  }
  if (Number.isFinite(limit)) matches.limit(limit + 1);
  return db.count({ count: "*" }).from(matches.as("matches"));
}
