/**
 * The typed syntax tree of a discovery query (CONTRACT 6, `POST /v1/discover/ql`). Every node keeps
 * the 1-based line and column where it starts so later stages can point at the fault.
 */

export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/** A plain column such as `version`, or a path into the entry's data object such as `data.a.b`. */
export type Column =
  | { readonly kind: "column"; readonly name: string; readonly position: SourcePosition }
  | { readonly kind: "data"; readonly path: readonly string[]; readonly position: SourcePosition };

export type LiteralValue = string | number | boolean;

export interface Literal {
  readonly value: LiteralValue;
  readonly position: SourcePosition;
}

/** `<>` is normalised to `!=` by the parser. */
export type ComparisonOperator = "=" | "!=" | "<" | "<=" | ">" | ">=";

export interface And {
  readonly kind: "and";
  readonly operands: readonly Expr[];
  readonly position: SourcePosition;
}

export interface Or {
  readonly kind: "or";
  readonly operands: readonly Expr[];
  readonly position: SourcePosition;
}

export interface Not {
  readonly kind: "not";
  readonly operand: Expr;
  readonly position: SourcePosition;
}

export interface Comparison {
  readonly kind: "comparison";
  readonly column: Column;
  readonly op: ComparisonOperator;
  readonly value: Literal;
  readonly position: SourcePosition;
}

export interface In {
  readonly kind: "in";
  readonly column: Column;
  readonly values: readonly Literal[];
  readonly negated: boolean;
  readonly position: SourcePosition;
}

export interface Like {
  readonly kind: "like";
  readonly column: Column;
  readonly pattern: string;
  readonly negated: boolean;
  readonly position: SourcePosition;
}

export interface IsNull {
  readonly kind: "is_null";
  readonly column: Column;
  readonly negated: boolean;
  readonly position: SourcePosition;
}

export interface Contains {
  readonly kind: "contains";
  readonly column: Column;
  readonly value: Literal;
  readonly position: SourcePosition;
}

export type Predicate = Comparison | In | Like | IsNull | Contains;

export type Expr = And | Or | Not | Predicate;

export type SortDirection = "asc" | "desc";

export interface OrderItem {
  readonly column: Column;
  readonly direction: SortDirection;
}

export interface Query {
  readonly columns: "*" | readonly Column[];
  readonly where?: Expr;
  readonly orderBy: readonly OrderItem[];
  readonly limit?: number;
}

/** How a column is written in a query, for error messages. */
export function columnText(column: Column): string {
  return column.kind === "column" ? column.name : ["data", ...column.path].join(".");
}
