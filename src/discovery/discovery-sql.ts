/**
 * Compiles a discovery plan (src/discovery/discovery-plan.ts) into SQL fragments for knex.
 *
 * Safety: every value that came from a request leaves this file as a `?` binding. SQL text is built
 * only from the fixed tables below, chosen by column names the checker has already accepted, so no
 * user text can become SQL. `data.<key>` paths are bound too (`array[?, ?]`), never spliced.
 *
 * Semantics worth knowing:
 * - Predicates are two-valued: a comparison with a missing value (no bond, no such data key) is
 *   false, `!=` included, and `NOT p` matches exactly the entries `p` does not.
 * - Text ranges and text order use the "C" collation (code-point order), the same on every
 *   database whatever its locale, so results and cursors do not depend on the server's settings.
 * - A date-only time (`2026-01-01`) means that whole UTC day: `= day` is within it, `> day` after it.
 */
import { parseVersion } from "../domain/semver-order.js";
import type { Column, ComparisonOperator, Expr, Literal, LiteralValue, OrderItem, Predicate } from "./query-language/ast.js";
import { fieldByColumn, fieldSpec, type EntryFieldSpec } from "../domain/entry-fields.js";
import { COLUMN_KINDS, isNullable, type ColumnKind } from "./query-language/columns.js";

/** SQL text with `?` placeholders and the values they bind, in order. */
export interface SqlFragment {
  readonly sql: string;
  readonly bindings: readonly unknown[];
}

/** One key of the total order: its expression, the type its text form casts back to, and its direction. */
export interface OrderKey {
  readonly expression: SqlFragment;
  readonly type: string;
  readonly direction: "asc" | "desc";
}

const fragment = (sql: string, bindings: readonly unknown[] = []): SqlFragment => ({ sql, bindings });

function join(parts: readonly SqlFragment[], separator: string): SqlFragment {
  return fragment(
    parts.map((part) => `(${part.sql})`).join(separator),
    parts.flatMap((part) => part.bindings),
  );
}

/** The WHERE condition of an expression. */
export function filterSql(expr: Expr): SqlFragment {
  switch (expr.kind) {
    case "and":
      return join(expr.operands.map(filterSql), " and ");
    case "or":
      return join(expr.operands.map(filterSql), " or ");
    case "not": {
      const inner = filterSql(expr.operand);
      return fragment(`not (${inner.sql})`, inner.bindings);
    }
    default:
      return predicateSql(expr);
  }
}

function predicateSql(predicate: Predicate): SqlFragment {
  if (predicate.kind === "is_null" && isNullable(predicate.column)) {
    return fragment(`${columnName(predicate.column)} is ${predicate.negated ? "not " : ""}null`);
  }
  const sql = valuePredicateSql(predicate);
  // NULL in a comparison is unknown, and NOT unknown is still unknown: two-valued, it is false.
  return isNullable(predicate.column) ? fragment(`coalesce(${sql.sql}, false)`, sql.bindings) : sql;
}

function valuePredicateSql(predicate: Predicate): SqlFragment {
  const kind = kindOf(predicate.column);
  switch (predicate.kind) {
    case "comparison":
      return comparisonSql(kind, predicate.column, predicate.op, predicate.value.value);
    case "in": {
      const anyOf = join(
        predicate.values.map((value) => comparisonSql(kind, predicate.column, "=", value.value)),
        " or ",
      );
      return predicate.negated ? fragment(`not (${anyOf.sql})`, anyOf.bindings) : anyOf;
    }
    case "like":
      return likeSql(kind, predicate.column, predicate.pattern, predicate.negated);
    case "is_null":
      return isNullSql(kind, predicate.column, predicate.negated);
    case "contains":
      return containsSql(kind, predicate.column, predicate.value);
  }
}

function kindOf(column: Column): ColumnKind {
  if (column.kind === "data") return "json";
  const kind = COLUMN_KINDS[column.name];
  // The checker refuses unknown columns before a plan exists; reaching here is a programming error.
  if (kind === undefined) throw new Error(`unchecked column ${column.name}`);
  return kind;
}

/** Column names are the checker's fixed set and are also the table's column names. */
function columnName(column: Column): string {
  if (column.kind !== "column") throw new Error("data paths have no column name");
  return column.name;
}

/** The catalogue's spec of a checked column. */
function specOf(column: Column): EntryFieldSpec {
  const field = fieldByColumn(columnName(column));
  if (field === undefined) throw new Error(`unchecked column ${columnName(column)}`);
  return fieldSpec(field);
}

/** The column that orders a SemVer column by precedence. */
function sortColumnOf(column: Column): string {
  const sortColumn = specOf(column).sortColumn;
  if (sortColumn === undefined) throw new Error(`${columnName(column)} has no sort column`);
  return sortColumn;
}

/** The value and unit columns of an amount column. */
function amountColumnsOf(column: Column): { readonly value: string; readonly unit: string } {
  const parts = specOf(column).amountColumns;
  if (parts === undefined) throw new Error(`${columnName(column)} has no amount columns`);
  return parts;
}

const SQL_OPERATOR: Readonly<Record<ComparisonOperator, string>> = { "=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">=" };

function comparisonSql(kind: ColumnKind, column: Column, op: ComparisonOperator, value: LiteralValue): SqlFragment {
  const sqlOp = SQL_OPERATOR[op];
  switch (kind) {
    case "text":
    case "status":
      // Equality needs no collation (and so keeps btree and trigram indexes usable); order does.
      return op === "=" || op === "!="
        ? fragment(`${columnName(column)} ${sqlOp} ?`, [value])
        : fragment(`${columnName(column)} collate "C" ${sqlOp} ?`, [value]);
    case "boolean":
    case "number":
      return fragment(`${columnName(column)} ${sqlOp} ?`, [kind === "number" ? String(value) : value]);
    case "semver":
      return fragment(`${sortColumnOf(column)} ${sqlOp} ?`, [versionKey(value)]);
    case "time":
      return timeSql(columnName(column), op, String(value));
    case "amount":
      return amountSql(amountColumnsOf(column), op, String(value));
    case "json":
      return jsonComparisonSql(column, op, value);
    case "tags":
      throw new Error("tags take CONTAINS only");
  }
}

function versionKey(value: LiteralValue): string {
  const parsed = parseVersion(String(value));
  if ("error" in parsed) throw new Error(`unchecked version ${String(value)}`);
  return parsed.sortKey;
}

const DATE_ONLY = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/;

/** A date is the half-open UTC day [start, next); a time is an instant. */
function timeSql(column: string, op: ComparisonOperator, value: string): SqlFragment {
  if (!DATE_ONLY.test(value)) {
    // Postgres parses RFC 3339 itself (leap seconds included), so the text is bound as it came.
    return fragment(`${column} ${SQL_OPERATOR[op]} ?::timestamptz`, [value.toUpperCase()]);
  }
  const start = `${value}T00:00:00Z`;
  const next = new Date(Date.parse(start) + 86_400_000).toISOString();
  switch (op) {
    case "=":
      return fragment(`${column} >= ?::timestamptz and ${column} < ?::timestamptz`, [start, next]);
    case "!=":
      return fragment(`${column} < ?::timestamptz or ${column} >= ?::timestamptz`, [start, next]);
    case "<":
      return fragment(`${column} < ?::timestamptz`, [start]);
    case "<=":
      return fragment(`${column} < ?::timestamptz`, [next]);
    case ">":
      return fragment(`${column} >= ?::timestamptz`, [next]);
    case ">=":
      return fragment(`${column} >= ?::timestamptz`, [start]);
  }
}

/** Amounts order within one unit only: an entry without a bond, or in another unit, is neither less nor more. */
function amountSql(columns: { readonly value: string; readonly unit: string }, op: ComparisonOperator, value: string): SqlFragment {
  const [amount, unit] = value.split(" ");
  // Any bond other than this one differs from it, whatever its unit.
  if (op === "!=") return fragment(`coalesce(not (${columns.unit} = ? and ${columns.value} = ?::numeric), false)`, [unit, amount]);
  return fragment(`coalesce(${columns.unit} = ? and ${columns.value} ${SQL_OPERATOR[op]} ?::numeric, false)`, [unit, amount]);
}

function dataPath(column: Column): SqlFragment {
  if (column.kind !== "data") throw new Error("not a data path");
  return fragment(`data #> array[${column.path.map(() => "?").join(", ")}]::text[]`, column.path);
}

/** `{"a": {"b": value}}` for data.a.b: containment the data column's GIN index answers. */
function containmentDocument(column: Column, value: unknown): string {
  if (column.kind !== "data") throw new Error("not a data path");
  return JSON.stringify(column.path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value));
}

const JSON_TYPE: Readonly<Record<string, string>> = { string: "string", number: "number", boolean: "boolean" };

function jsonComparisonSql(column: Column, op: ComparisonOperator, value: LiteralValue): SqlFragment {
  if (op === "=") return fragment("data @> ?::jsonb", [containmentDocument(column, value)]);
  const path = dataPath(column);
  const present = `jsonb_typeof(${path.sql}) not in ('null')`;
  if (op === "!=") {
    return fragment(`coalesce(${present} and not (data @> ?::jsonb), false)`, [...path.bindings, containmentDocument(column, value)]);
  }
  // jsonb orders values of different types by type; a range means something only within one type.
  return fragment(`coalesce(jsonb_typeof(${path.sql}) = ? and ${path.sql} ${SQL_OPERATOR[op]} ?::jsonb, false)`, [
    ...path.bindings,
    JSON_TYPE[typeof value],
    ...path.bindings,
    JSON.stringify(value),
  ]);
}

function likeSql(kind: ColumnKind, column: Column, pattern: string, negated: boolean): SqlFragment {
  // Backslash is Postgres's default LIKE escape, matching docs/query-language.md.
  const like = negated ? "not like" : "like";
  switch (kind) {
    case "amount":
      return fragment(`coalesce(nullif(${columnName(column)}, '') ${like} ?, false)`, [pattern]);
    case "json": {
      const path = dataPath(column);
      return fragment(`coalesce(jsonb_typeof(${path.sql}) = 'string' and (${path.sql} #>> '{}') ${like} ?, false)`, [
        ...path.bindings,
        ...path.bindings,
        pattern,
      ]);
    }
    default:
      return fragment(`${columnName(column)} ${like} ?`, [pattern]);
  }
}

/** Optional text fields are stored as '' when absent; IS NULL asks whether the field is absent. */
function isNullSql(kind: ColumnKind, column: Column, negated: boolean): SqlFragment {
  const not = negated ? "not " : "";
  switch (kind) {
    case "amount":
      return fragment(`${not}(${amountColumnsOf(column).value} is null)`);
    case "json": {
      const path = dataPath(column);
      return fragment(`${not}(coalesce(jsonb_typeof(${path.sql}), 'null') = 'null')`, path.bindings);
    }
    default:
      return fragment(`${not}(${columnName(column)} = '')`);
  }
}

/** LIKE's own wildcards and escape, made literal: CONTAINS means the text as written. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function containsSql(kind: ColumnKind, column: Column, literal: Literal): SqlFragment {
  const value = literal.value;
  if (kind === "tags") return fragment("tags @> array[?]::text[]", [value]);
  const substring = `%${escapeLike(String(value))}%`;
  if (kind !== "json") return fragment(`${columnName(column)} ilike ?`, [substring]);
  const member = fragment("data @> ?::jsonb", [containmentDocument(column, [value])]);
  if (typeof value !== "string") return member;
  const path = dataPath(column);
  return fragment(`${member.sql} or coalesce(jsonb_typeof(${path.sql}) = 'string' and (${path.sql} #>> '{}') ilike ?, false)`, [
    ...member.bindings,
    ...path.bindings,
    ...path.bindings,
    substring,
  ]);
}

/**
 * The keys of the total order, each a non-null expression (so a keyset comparison never meets a
 * NULL): absent bonds sort as the empty unit, missing data values as JSON null.
 */
export function orderKeys(order: readonly OrderItem[]): OrderKey[] {
  return order.flatMap(({ column, direction }): OrderKey[] => {
    const key = (sql: string, type: string, bindings: readonly unknown[] = []): OrderKey => ({
      expression: fragment(sql, bindings),
      type,
      direction,
    });
    switch (kindOf(column)) {
      case "semver":
        return [key(sortColumnOf(column), "text")];
      case "time":
        return [key(columnName(column), "timestamptz")];
      case "number":
        return [key(columnName(column), "bigint")];
      case "boolean":
        return [key(columnName(column), "boolean")];
      case "amount": {
        const parts = amountColumnsOf(column);
        return [key(`coalesce(${parts.unit}, '') collate "C"`, "text"), key(`coalesce(${parts.value}, -1)`, "numeric")];
      }
      case "json": {
        const path = dataPath(column);
        return [key(`coalesce(${path.sql}, 'null'::jsonb)`, "jsonb", path.bindings)];
      }
      default:
        return [key(`${columnName(column)} collate "C"`, "text")];
    }
  });
}

export function orderBySql(keys: readonly OrderKey[]): SqlFragment {
  return fragment(
    keys.map((key) => `${key.expression.sql} ${key.direction}`).join(", "),
    keys.flatMap((key) => key.expression.bindings),
  );
}

/**
 * Rows strictly after `position` in the order. One direction throughout is one row-value
 * comparison, which an index on the same keys answers as a range; mixed directions expand to
 * the equivalent OR of prefixes.
 */
export function afterPositionSql(keys: readonly OrderKey[], position: readonly string[]): SqlFragment {
  if (position.length !== keys.length) throw new Error("cursor position does not fit the order");
  const value = (index: number) => fragment(`?::${keys[index]!.type}`, [position[index]]);
  const direction = keys[0]!.direction;
  if (keys.every((key) => key.direction === direction)) {
    const left = join(
      keys.map((key) => key.expression),
      ", ",
    );
    const right = join(
      keys.map((_, index) => value(index)),
      ", ",
    );
    return fragment(`(${left.sql}) ${direction === "desc" ? "<" : ">"} (${right.sql})`, [...left.bindings, ...right.bindings]);
  }
  const branches = keys.map((key, index) => {
    const equalBefore = keys.slice(0, index).map((earlier, j) => compare(earlier.expression, "=", value(j)));
    return join([...equalBefore, compare(key.expression, key.direction === "desc" ? "<" : ">", value(index))], " and ");
  });
  return join(branches, " or ");
}

function compare(left: SqlFragment, op: string, right: SqlFragment): SqlFragment {
  return fragment(`${left.sql} ${op} ${right.sql}`, [...left.bindings, ...right.bindings]);
}

/** The select-list expression of a projected column. */
export function projectedColumnSql(column: Column): SqlFragment {
  if (column.kind === "data") return dataPath(column);
  return fragment(columnName(column));
}
