/**
 * Structured discovery conditions (`POST /v1/discover`) turned into the query language's syntax
 * tree and checked by the query language's own predicate checker, so both endpoints share one set
 * of rules, one compiler and one meaning. What is checked here is what the lexer and parser check
 * for query text: that a field and an operator are spelled as this form spells them, and that a
 * value has a JSON shape a literal can have. Errors name the condition: `conditions[2].op`.
 * Pure: no I/O.
 */
import type { Column, Expr, Literal, LiteralValue, Predicate, Query } from "./query-language/ast.js";
import { numberProblem, textProblem } from "../domain/json-input.js";
import {
  columnProblem,
  kindOf,
  predicateProblem,
  type ColumnKind,
  type PredicateProblem,
  type QueryOperator,
} from "./query-language/columns.js";
import { MAX_PREDICATES } from "./query-language/parser.js";
import { QUERYABLE_FIELDS } from "../domain/entry-fields.js";
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

/** Request field names (the Entry's JSON names) and the column each one is, from the field catalogue. */
export const CONDITION_FIELDS: Readonly<Record<string, string>> = Object.fromEntries(
  QUERYABLE_FIELDS.map((field) => [field.name, field.column]),
);

/** The operators a condition can spell; LIKE and IS NULL are the query language's only. */
type ConditionOperator = Exclude<QueryOperator, "LIKE" | "IS NULL">;
const OPERATORS: readonly ConditionOperator[] = ["=", "!=", ">", "<", ">=", "<=", "IN", "CONTAINS"];
const MAX_IN_VALUES = 100;
const SOMEWHERE = { line: 1, column: 1 } as const;

/** The request field each part of a predicate came from. */
const CONDITION_PARTS: Readonly<Record<PredicateProblem["part"], string>> = { column: "field", operator: "op", literal: "value" };

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
    predicates.length === 0
      ? undefined
      : predicates.length === 1
        ? predicates[0]
        : { kind: "and", operands: predicates, position: SOMEWHERE };
  return { columns: "*", ...(where === undefined ? {} : { where }), orderBy: [] };
}

/** The condition as a predicate the checker accepted, or undefined with its violation added. */
function conditionPredicate(condition: StructuredCondition, path: string, violations: ViolationList): Predicate | undefined {
  const target = conditionColumn(condition.field);
  const operator = conditionOperator(condition.op);
  // The field and the operator are independent, so a condition wrong in both is named for both.
  const columnFault = target === undefined ? undefined : columnProblem(target);
  if (target === undefined) violations.add(`${path}.field`, unknownField(condition.field));
  else if (columnFault !== undefined) violations.add(`${path}.field`, conditionMessage(columnFault, condition));
  // Echoed as JSON strings: escaped, a sent value cannot put unpaired surrogates into the message.
  if (operator === undefined)
    violations.add(`${path}.op`, `unknown operator ${JSON.stringify(condition.op)}; one of ${OPERATORS.join(" ")}`);
  if (target === undefined || columnFault !== undefined || operator === undefined) return undefined;
  const literals = conditionLiterals(condition, operator, kindOf(target));
  if (typeof literals === "string") {
    violations.add(`${path}.value`, literals);
    return undefined;
  }
  const predicate = conditionAsPredicate(target, operator, literals);
  const problem = predicateProblem(predicate);
  if (problem === undefined) return predicate;
  violations.add(`${path}.${CONDITION_PARTS[problem.part]}`, conditionMessage(problem, condition));
  return undefined;
}

/** The checker's problem in the condition's words: its field as sent, the operators it can spell. */
function conditionMessage(problem: PredicateProblem, condition: StructuredCondition): string {
  switch (problem.part) {
    case "column":
      return `unknown field ${JSON.stringify(condition.field)}; expected ${problem.expected}`;
    case "operator": {
      const usable = problem.operators.filter((operator) => (OPERATORS as readonly QueryOperator[]).includes(operator));
      // Only fields the checker knows get this far, so the field is one of ours, not arbitrary text.
      return `${condition.op.toUpperCase()} does not apply to ${condition.field}; use one of ${usable.join(" ")}`;
    }
    case "literal":
      return `must be ${problem.expected} for ${condition.field}`;
  }
}

/** The column a field names, unchecked for data paths (the checker judges their keys), or undefined. */
function conditionColumn(field: string): Column | undefined {
  if (field.startsWith("data.")) return { kind: "data", path: field.slice("data.".length).split("."), position: SOMEWHERE };
  const name = CONDITION_FIELDS[field];
  return name === undefined ? undefined : column(name);
}

function unknownField(field: string): string {
  return `unknown field ${JSON.stringify(field)}; one of ${Object.keys(CONDITION_FIELDS).join(", ")} or data.<key>[.<key>...]`;
}

function conditionOperator(op: string): ConditionOperator | undefined {
  const upper = op.toUpperCase();
  return OPERATORS.find((operator) => operator === upper);
}

/** The condition's value as literals (one, or IN's list), or what is wrong with its shape. */
function conditionLiterals(condition: StructuredCondition, operator: ConditionOperator, kind: ColumnKind): LiteralValue[] | string {
  const values = operator === "IN" ? listValues(condition.value) : [condition.value];
  const literals: LiteralValue[] = [];
  for (const value of values) {
    const literal = scalarFor(kind, value);
    if (literal === undefined) return typeof value === "number" ? numberProblem(value)! : "must be a string, number or boolean";
    literals.push(literal);
  }
  if (operator === "IN" && (literals.length === 0 || literals.length > MAX_IN_VALUES)) return `IN takes 1-${MAX_IN_VALUES} values`;
  return literals;
}

function conditionAsPredicate(target: Column, operator: ConditionOperator, literals: readonly LiteralValue[]): Predicate {
  switch (operator) {
    case "IN":
      return { kind: "in", column: target, values: literals.map(literal), negated: false, position: SOMEWHERE };
    case "CONTAINS":
      return { kind: "contains", column: target, value: literal(literals[0]!), position: SOMEWHERE };
    default:
      return comparison(target, operator, literals[0]!);
  }
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
