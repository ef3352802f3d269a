import { InvalidArgumentError } from "../../errors.js";
import type { SourcePosition } from "./ast.js";

/**
 * A rejected query. It is an invalid_argument on the `query` field so the edge maps it like any
 * other validation failure; the position is kept separately so clients and tests need not parse it.
 */
export class QueryError extends InvalidArgumentError {
  readonly position: SourcePosition | undefined;
  readonly detail: string;

  private constructor(detail: string, position: SourcePosition | undefined) {
    const description = position === undefined ? detail : `line ${position.line}, column ${position.column}: ${detail}`;
    super([{ field: "query", description }]);
    this.position = position;
    this.detail = detail;
  }

  /** The usual form: `line L, column C: expected <what>, found <what>`. */
  static expected(position: SourcePosition, expected: string, found: string): QueryError {
    return new QueryError(`expected ${expected}, found ${found}`, position);
  }

  static at(position: SourcePosition, detail: string): QueryError {
    return new QueryError(detail, position);
  }

  /** For faults of the query as a whole, such as its size, which have no single position. */
  static whole(detail: string): QueryError {
    return new QueryError(detail, undefined);
  }
}
