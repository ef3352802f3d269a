import type { Knex } from "knex";
import { columnText, type Column } from "../domain/query-language/ast.js";
import type { DiscoveryPlan } from "../discovery/discovery-plan.js";
import type {
  DiscoveredPage,
  DiscoveryRepository,
  PageRequest,
  ProjectedValues,
} from "../discovery/discovery-repository.js";
import type { StoredEntry } from "../entries/entry-repository.js";
import { translateDriverErrors } from "./driver-errors.js";
import { afterPositionSql, filterSql, orderBySql, orderKeys, projectedColumnSql, type SqlFragment } from "./discovery-sql.js";
import { entryFromRow, type EntryRow } from "./entry-row.js";

export interface KnexDiscoveryRepositoryOptions {
  /** Longest a discovery statement may run before it is cancelled (deadline_exceeded). */
  readonly statementTimeoutMs: number;
}

/** Aliases of the order keys in the select list; no entries column starts with an underscore. */
const keyAlias = (index: number) => `_key${index}`;
const columnAlias = (index: number) => `_col${index}`;

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
    const keys = orderKeys(plan.order);
    return inSnapshot(async (tx) => {
      const query = tx("entries");
      for (const item of selectList) query.select(tx.raw(item.sql, bound(item)));
      keys.forEach((key, index) => query.select(tx.raw(`(${key.expression.sql})::text as ${keyAlias(index)}`, bound(key.expression))));
      const where = plan.where === undefined ? undefined : filterSql(plan.where);
      if (where !== undefined) query.whereRaw(where.sql, bound(where));
      if (page.after !== undefined) {
        const after = afterPositionSql(keys, page.after);
        query.whereRaw(after.sql, bound(after));
      }
      const orderBy = orderBySql(keys);
      query.orderByRaw(orderBy.sql, bound(orderBy)).limit(page.size);
      const rows: Record<string, unknown>[] = await query;
      const total = page.count ? await countMatches(tx, where) : undefined;
      return {
        rows: rows.map((row) => ({ values: read(row), position: keys.map((_, index) => String(row[keyAlias(index)])) })),
        ...(total === undefined ? {} : { total }),
      };
    });
  }

  return {
    findEntries: (plan, page) =>
      findPage<StoredEntry>(plan, page, [{ sql: "entries.*", bindings: [] }], (row) => entryFromRow(row as unknown as EntryRow)),

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

async function countMatches(tx: Knex.Transaction, where: SqlFragment | undefined): Promise<number> {
  const query = tx("entries").count<{ count: string }[]>({ count: "*" });
  if (where !== undefined) query.whereRaw(where.sql, bound(where));
  const [row] = await query;
  return Number(row?.count ?? 0);
}
