/**
 * Structured discovery conditions (`POST /v1/discover`) turned into the query language's syntax
 * tree, checked by the same column rules, so both endpoints share one compiler and one meaning.
 * Errors name the condition: `conditions[2].op`. Pure: no I/O.
 */
import type { Column, Expr, Literal, LiteralValue, Predicate, Query } from "../domain/query-language/ast.js";
import { numberProblem, PROTO_KEY, textProblem } from "../domain/json-input.js";
import {
  ALLOWED_OPERATORS,
  containsLiteralProblem,
  dataKeyProblem,
  literalProblem,
  type ColumnKind,
  COLUMN_KINDS,
  type QueryOperator,
} from "../domain/query-language/columns.js";
import { MAX_PREDICATES } from "../domain/query-language/parser.js";
import { ViolationList } from "../errors.js";

/** A JSON value as the request carried it (google.protobuf.Value in its JSON form). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface StructuredCondition {
  readonly field: string;
  readonly op: string;
  readonly value: JsonValue | undefined;
}

export interface StructuredRequest {
  readonly entryType: string;
  readonly conditions: readonly StructuredCondition[];
}

/** Request field names (the Entry's JSON names) and the column each one is. */
export const CONDITION_FIELDS: Readonly<Record<string, string>> = {
  entryDid: "entry_did",
  entryType: "entry_type",
  name: "name",
  version: "version",
  publisherDid: "publisher_did",
  publishedAt: "published_at",
  description: "description",
  tags: "tags",
  contentHash: "content_hash",
  bondAmount: "bond_amount",
  sequence: "sequence",
  status: "status",
  isLatest: "is_latest",
};

const OPERATORS: readonly string[] = ["=", "!=", ">", "<", ">=", "<=", "IN", "CONTAINS"];
const MAX_IN_VALUES = 100;
const SOMEWHERE = { line: 1, column: 1 } as const;

/** The conditions as one query over whole entries; throws InvalidArgumentError naming every bad condition. */
export function structuredQuery(request: StructuredRequest): Query {
  const violations = new ViolationList();
  if (request.conditions.length > MAX_PREDICATES) {
    violations.add("conditions", `at most ${MAX_PREDICATES} conditions are allowed`);
    violations.throwIfAny();
  }
  const predicates: Predicate[] = [];
  const entryTypeProblem = textProblem(request.entryType);
  if (entryTypeProblem !== undefined) violations.add("entryType", entryTypeProblem);
  else if (request.entryType !== "") predicates.push(comparison(column("entry_type"), "=", request.entryType));
  request.conditions.forEach((condition, index) => {
    const predicate = conditionPredicate(condition, `conditions[${index}]`, violations);
    if (predicate !== undefined) predicates.push(predicate);
  });
  violations.throwIfAny();
  const where: Expr | undefined =
    predicates.length === 0 ? undefined : predicates.length === 1 ? predicates[0] : { kind: "and", operands: predicates, position: SOMEWHERE };
  return { columns: "*", ...(where === undefined ? {} : { where }), orderBy: [] };
}

function conditionPredicate(condition: StructuredCondition, path: string, violations: ViolationList): Predicate | undefined {
  const target = conditionColumn(condition.field);
  const op = condition.op.toUpperCase();
  if ("problem" in target) violations.add(`${path}.field`, target.problem);
  // Echoed as JSON strings: escaped, a sent value cannot put unpaired surrogates into the message.
  if (!OPERATORS.includes(op)) violations.add(`${path}.op`, `unknown operator ${JSON.stringify(condition.op)}; one of ${OPERATORS.join(" ")}`);
  if ("problem" in target || !OPERATORS.includes(op)) return undefined;
  const { column: col, kind } = target;
  if (!ALLOWED_OPERATORS[kind].includes(op as QueryOperator)) {
    violations.add(`${path}.op`, `${op} does not apply to ${condition.field}; use one of ${ALLOWED_OPERATORS[kind].filter((o) => OPERATORS.includes(o)).join(" ")}`);
    return undefined;
  }
  const values = op === "IN" ? listValues(condition.value) : [condition.value];
  const literals: LiteralValue[] = [];
  for (const value of values) {
    const literal = scalarFor(kind, value);
    const problem =
      literal === undefined
        ? typeof value === "number"
          ? numberProblem(value)
          : "must be a string, number or boolean"
        : op === "CONTAINS"
          ? containsLiteralProblem(kind, literal)
          : literalProblem(kind, literal);
    if (problem !== undefined || literal === undefined) {
      violations.add(`${path}.value`, problem?.startsWith("must") ? problem : `must be ${problem} for ${condition.field}`);
      return undefined;
    }
    literals.push(literal);
  }
  if (op === "IN" && (literals.length === 0 || literals.length > MAX_IN_VALUES)) {
    violations.add(`${path}.value`, `IN takes 1-${MAX_IN_VALUES} values`);
    return undefined;
  }
  if (op === "IN") return { kind: "in", column: col, values: literals.map(literal), negated: false, position: SOMEWHERE };
  if (op === "CONTAINS") return { kind: "contains", column: col, value: literal(literals[0]!), position: SOMEWHERE };
  return comparison(col, op as "=" | "!=" | "<" | "<=" | ">" | ">=", literals[0]!);
}

function conditionColumn(field: string): { column: Column; kind: ColumnKind } | { problem: string } {
  const unknown = { problem: `unknown field ${JSON.stringify(field)}; one of ${Object.keys(CONDITION_FIELDS).join(", ")} or data.<key>[.<key>...]` };
  if (field.startsWith("data.")) {
    const path = field.slice("data.".length).split(".");
    if (path.includes(PROTO_KEY)) return { problem: "must not use __proto__ as a data key: no entry can hold it" };
    if (!path.every((key) => dataKeyProblem(key) === undefined)) return unknown;
    return { column: { kind: "data", path, position: SOMEWHERE }, kind: "json" };
  }
  const name = CONDITION_FIELDS[field];
  if (name === undefined) return unknown;
  return { column: column(name), kind: COLUMN_KINDS[name]! };
}

/** IN takes an array, or a comma-separated string as the interface's string-only examples do. */
function listValues(value: JsonValue | undefined): (JsonValue | undefined)[] {
  if (Array.isArray(value)) return value;
  if (typeof value === "string") return value.split(",").map((item) => item.trim());
  return [value];
}

/**
 * A JSON value as the literal the column expects. JSON clients send 64-bit sequences as strings
 * (proto3 JSON) and booleans sometimes as "true"; both are accepted where they are unambiguous.
 */
function scalarFor(kind: ColumnKind, value: JsonValue | undefined): LiteralValue | undefined {
  if (typeof value === "string" && kind === "number" && /^-?[0-9]{1,16}$/.test(value)) return Number(value);
  if (typeof value === "string" && kind === "boolean" && (value === "true" || value === "false")) return value === "true";
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  return undefined;
}

function column(name: string): Column {
  return { kind: "column", name, position: SOMEWHERE };
}

function literal(value: LiteralValue): Literal {
  return { value, position: SOMEWHERE };
}

function comparison(col: Column, op: "=" | "!=" | "<" | "<=" | ">" | ">=", value: LiteralValue): Predicate {
  return { kind: "comparison", column: col, op, value: literal(value), position: SOMEWHERE };
}
