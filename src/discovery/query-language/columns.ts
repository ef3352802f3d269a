import { ENTRY_STATUSES, fieldByColumn, QUERYABLE_FIELDS, type FieldKind } from "../../domain/entry-fields.js";
import { PROTO_KEY, textProblem } from "../../domain/json-input.js";
import { parseVersion } from "../../domain/semver-order.js";
import { columnText, type Column, type Expr, type Literal, type Predicate, type Query } from "./ast.js";
import { QueryError } from "./query-error.js";

/** How a column's values compare, which decides the operators and literals it accepts; marks are never queried, their booleans are. */
export type ColumnKind = Exclude<FieldKind, "mark">;

/** Predicate operators as the checker names them: comparison symbols plus the keyword forms. */
export type QueryOperator = "=" | "!=" | "<" | "<=" | ">" | ">=" | "IN" | "LIKE" | "IS NULL" | "CONTAINS";

/** The queryable columns of the `entries` table (CONTRACT 6), from the field catalogue; `data.<key>...` paths besides. */
export const COLUMN_KINDS: Readonly<Record<string, ColumnKind>> = Object.fromEntries(
  QUERYABLE_FIELDS.map((field) => [field.column, field.kind]),
);

export const COLUMN_NAMES: readonly string[] = Object.keys(COLUMN_KINDS);

const EQUALITY: readonly QueryOperator[] = ["=", "!="];
const ORDERING: readonly QueryOperator[] = ["=", "!=", "<", "<=", ">", ">="];

export const ALLOWED_OPERATORS: Readonly<Record<ColumnKind, readonly QueryOperator[]>> = {
  text: [...ORDERING, "IN", "LIKE", "IS NULL", "CONTAINS"],
  semver: [...ORDERING, "IN", "LIKE"],
  time: [...ORDERING, "IN"],
  number: [...ORDERING, "IN"],
  amount: [...ORDERING, "IN", "LIKE", "IS NULL"],
  tags: ["CONTAINS"],
  boolean: EQUALITY,
  status: [...EQUALITY, "IN"],
  json: [...ORDERING, "IN", "LIKE", "IS NULL", "CONTAINS"],
};

/** Kinds a result can be sorted by; a tag list has no order of its own. */
const ORDERABLE: ReadonlySet<ColumnKind> = new Set(["text", "semver", "time", "number", "amount", "boolean", "status", "json"]);

export const DATA_KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** What a string literal must be: Postgres text holds neither NUL nor unpaired UTF-16 surrogates. */
const STORABLE_TEXT = "text without NUL characters or unpaired surrogates";
const STATUSES: readonly string[] = ENTRY_STATUSES;
const AMOUNT_PATTERN = /^[0-9]{1,30}(\.[0-9]{1,18})? [A-Z][A-Z0-9]{1,15}$/;
const DATE_PATTERN = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;
const RFC3339_PATTERN = /^([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-]([0-9]{2}):([0-9]{2}))$/;

/** A query whose columns, operators and literals have been checked; the only input the compiler accepts. */
export interface CheckedQuery {
  readonly query: Query;
  /** The columns each result row carries, with `*` spelled out. */
  readonly selected: readonly Column[];
  readonly checked: true;
}

/** Rejects unknown columns, operators that make no sense for a column's kind and literals that do not fit. */
export function checkQuery(query: Query): CheckedQuery {
  const selected = query.columns === "*" ? allColumns() : query.columns;
  for (const column of selected) kindOf(column);
  if (query.where !== undefined) checkExpr(query.where);
  for (const item of query.orderBy) checkOrderable(item.column);
  return { query, selected, checked: true };
}

/**
 * Why one predicate was refused, by the part at fault. The query language throws `error`, which
 * points at the part's line and column; structured discover names the condition's field, op or
 * value instead, in words built from `expected` or `operators`, which quote nothing from the request.
 */
export type PredicateProblem =
  | { readonly part: "column" | "literal"; readonly error: QueryError; readonly expected: string }
  | { readonly part: "operator"; readonly error: QueryError; readonly operators: readonly QueryOperator[] };

/** The kind of a column, or a QueryError naming the valid columns. */
export function kindOf(column: Column): ColumnKind {
  const resolved = resolveColumn(column);
  if (resolved.problem !== undefined) throw resolved.problem.error;
  return resolved.kind;
}

/** Why a column is refused (an unknown name, a data key that cannot be), or undefined when it is one. */
export function columnProblem(column: Column): PredicateProblem | undefined {
  return resolveColumn(column).problem;
}

type ResolvedColumn =
  | { readonly kind: ColumnKind; readonly problem?: undefined }
  | { readonly kind?: undefined; readonly problem: PredicateProblem };

function resolveColumn(column: Column): ResolvedColumn {
  if (column.kind === "data") {
    const expected = column.path.map(dataKeyProblem).find((problem) => problem !== undefined);
    if (expected === undefined) return { kind: "json" };
    return { problem: { part: "column", expected, error: QueryError.expected(column.position, expected, `'${columnText(column)}'`) } };
  }
  const kind = COLUMN_KINDS[column.name];
  if (kind !== undefined) return { kind };
  const expected = `a column (${COLUMN_NAMES.join(", ")} or data.<key>)`;
  return {
    problem: { part: "column", expected, error: QueryError.expected(column.position, expected, `unknown column '${column.name}'`) },
  };
}

/**
 * What a data key in a column path should have been, or undefined when it fits. "__proto__" is
 * refused: no stored entry can hold it, and a result row built under that key would write into
 * Object.prototype instead of the row.
 */
export function dataKeyProblem(key: string): string | undefined {
  if (!DATA_KEY_PATTERN.test(key)) return "data keys of 1-64 letters, digits, '_' or '-'";
  if (key === PROTO_KEY) return "a data key other than __proto__";
  return undefined;
}

function allColumns(): Column[] {
  return COLUMN_NAMES.map((name) => ({ kind: "column", name, position: { line: 1, column: 1 } }));
}

/** A column's operators: its kind's, and IS NULL where the column is NULL for some entries (revokedAt). */
export function allowedOperators(column: Column, kind: ColumnKind): readonly QueryOperator[] {
  const operators = ALLOWED_OPERATORS[kind];
  return isNullable(column) && !operators.includes("IS NULL") ? [...operators, "IS NULL"] : operators;
}

/** Whether the column is NULL for some entries, rather than '' or a value. */
export function isNullable(column: Column): boolean {
  if (column.kind !== "column") return false;
  const field = fieldByColumn(column.name);
  return field !== undefined && "nullable" in field && field.nullable;
}

function checkOrderable(column: Column): void {
  const kind = kindOf(column);
  if (!ORDERABLE.has(kind)) {
    throw QueryError.expected(column.position, "a column that can be ordered", `${kind} column '${columnText(column)}'`);
  }
  // A keyset cursor compares positions, and NULL compares with nothing.
  if (isNullable(column)) {
    throw QueryError.expected(column.position, "a column that can be ordered", `'${columnText(column)}', which is null for some entries`);
  }
}

function checkExpr(expr: Expr): void {
  switch (expr.kind) {
    case "and":
    case "or":
      expr.operands.forEach(checkExpr);
      return;
    case "not":
      checkExpr(expr.operand);
      return;
    default:
      checkPredicate(expr);
  }
}

function checkPredicate(predicate: Predicate): void {
  const problem = predicateProblem(predicate);
  if (problem !== undefined) throw problem.error;
}

/**
 * Why one predicate is refused, or undefined when it fits: its column first, then its operator for
 * that column's kind, then its literals. Both discovery endpoints check their predicates here, so
 * a condition means and refuses the same whether it came as query text or as structured JSON.
 */
export function predicateProblem(predicate: Predicate): PredicateProblem | undefined {
  const resolved = resolveColumn(predicate.column);
  if (resolved.problem !== undefined) return resolved.problem;
  const { kind } = resolved;
  const operator = operatorOf(predicate);
  const operators = allowedOperators(predicate.column, kind);
  if (!operators.includes(operator)) {
    const expected = `an operator for ${kind} column '${columnText(predicate.column)}' (${operators.join(" ")})`;
    return { part: "operator", operators, error: QueryError.expected(predicate.position, expected, operator) };
  }
  switch (predicate.kind) {
    case "comparison":
      return literalMismatch(predicate.column, predicate.value, literalProblem(kind, predicate.value.value));
    case "in":
      for (const value of predicate.values) {
        const problem = literalMismatch(predicate.column, value, literalProblem(kind, value.value));
        if (problem !== undefined) return problem;
      }
      return undefined;
    case "contains":
      return literalMismatch(predicate.column, predicate.value, containsLiteralProblem(kind, predicate.value.value));
    case "like": {
      const problem = likePatternProblem(predicate.pattern);
      if (problem === undefined) return undefined;
      return { part: "literal", expected: LIKE_PATTERN, error: QueryError.at(predicate.position, problem) };
    }
    case "is_null":
      return undefined;
  }
}

/** What a LIKE pattern must be, said without quoting one (likePatternProblem says what is wrong). */
const LIKE_PATTERN = `a LIKE pattern of ${STORABLE_TEXT} that does not end with a lone escape character '\\'`;

function literalMismatch(column: Column, literal: Literal, expected: string | undefined): PredicateProblem | undefined {
  if (expected === undefined) return undefined;
  return { part: "literal", expected, error: mismatch(column, expected, literal) };
}

function operatorOf(predicate: Predicate): QueryOperator {
  switch (predicate.kind) {
    case "comparison":
      return predicate.op;
    case "in":
      return "IN";
    case "like":
      return "LIKE";
    case "is_null":
      return "IS NULL";
    case "contains":
      return "CONTAINS";
  }
}

/** What a CONTAINS value should have been, or undefined when it fits. */
export function containsLiteralProblem(kind: ColumnKind, value: Literal["value"]): string | undefined {
  if (typeof value === "string" && textProblem(value) !== undefined) return STORABLE_TEXT;
  if (typeof value === "number" && !Number.isFinite(value)) return "a finite number";
  // Substring and tag membership are about text; JSON data may hold arrays of anything.
  if (kind === "json") return undefined;
  return typeof value === "string" ? undefined : "a string";
}

/**
 * LIKE patterns use `%` and `_` as wildcards and `\` to make the next character literal; a
 * pattern ending in a lone `\` has nothing to escape and would fail in the database instead.
 */
export function likePatternProblem(pattern: string): string | undefined {
  const problem = textProblem(pattern);
  if (problem !== undefined) return `LIKE pattern ${problem}`;
  const trailingBackslashes = /\\*$/.exec(pattern)?.[0].length ?? 0;
  if (trailingBackslashes % 2 === 1) return "LIKE pattern must not end with a lone escape character '\\'";
  return undefined;
}

/** What the literal should have been, or undefined when it fits. */
export function literalProblem(kind: ColumnKind, value: Literal["value"]): string | undefined {
  // Postgres text cannot hold these; refusing them here keeps them from becoming database errors.
  if (typeof value === "string" && textProblem(value) !== undefined) return STORABLE_TEXT;
  // A number too long for a double reads as Infinity, which JSON would turn into null.
  if (typeof value === "number" && !Number.isFinite(value)) return "a finite number";
  switch (kind) {
    case "json":
      return undefined;
    case "text":
    case "tags":
      return typeof value === "string" ? undefined : "a string";
    case "semver":
      return typeof value === "string" && !("error" in parseVersion(value)) ? undefined : "a SemVer version string such as '1.2.3'";
    case "time":
      return typeof value === "string" && isDateOrTime(value) ? undefined : "a date '2026-01-01' or an RFC 3339 time";
    case "number":
      return typeof value === "number" && Number.isSafeInteger(value) ? undefined : "an integer";
    case "amount":
      return typeof value === "string" && AMOUNT_PATTERN.test(value) ? undefined : "an amount string such as '100 USDC'";
    case "boolean":
      return typeof value === "boolean" ? undefined : "TRUE or FALSE";
    case "status":
      return typeof value === "string" && STATUSES.includes(value) ? undefined : STATUSES.map((status) => `'${status}'`).join(", ");
  }
}

function mismatch(column: Column, expected: string, literal: Literal): QueryError {
  return QueryError.expected(literal.position, `${expected} for '${columnText(column)}'`, describeLiteral(literal.value));
}

function describeLiteral(value: Literal["value"]): string {
  if (typeof value === "string") return `string '${value.replaceAll("'", "''")}'`;
  if (typeof value === "number") return `number ${value}`;
  return value ? "TRUE" : "FALSE";
}

export function isDateOrTime(value: string): boolean {
  const date = DATE_PATTERN.exec(value);
  if (date !== null) return isCalendarDate(value);
  const time = RFC3339_PATTERN.exec(value);
  if (time === null) return false;
  const [, day, hour, minute, second, , , offsetHour, offsetMinute] = time;
  const inRange = (text: string | undefined, max: number): boolean => text === undefined || Number(text) <= max;
  // Second 60 is a leap second, which RFC 3339 allows.
  return (
    isCalendarDate(day!) &&
    inRange(hour, 23) &&
    inRange(minute, 59) &&
    inRange(second, 60) &&
    inRange(offsetHour, 23) &&
    inRange(offsetMinute, 59)
  );
}

/** Date.UTC rolls 2026-02-30 over into March, so a round trip exposes impossible dates. */
function isCalendarDate(text: string): boolean {
  const match = DATE_PATTERN.exec(text);
  if (match === null) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
