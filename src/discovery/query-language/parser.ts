import type { Column, ComparisonOperator, Expr, Literal, OrderItem, Predicate, Query, SourcePosition } from "./ast.js";
import { describeToken, tokenize, type Keyword, type Punctuation, type Token } from "./lexer.js";
import { QueryError } from "./query-error.js";

/** Bounds from CONTRACT 6. */
export const MAX_QUERY_BYTES = 4096;
export const MAX_PREDICATES = 64;
export const MAX_NESTING = 16;
export const MAX_LIMIT = 10_000;

/** The only table a query may read. */
const TABLE = "entries";

/**
 * Parses `SELECT (* | col[, col...]) FROM entries [WHERE expr] [ORDER BY col [ASC|DESC][, ...]]
 * [LIMIT n] [;]`. Columns are not checked here (see checkQuery); only the shape is.
 */
export function parseQuery(text: string): Query {
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > MAX_QUERY_BYTES) {
    throw QueryError.whole(`query is ${bytes} bytes; at most ${MAX_QUERY_BYTES} bytes (4 KiB) are allowed`);
  }
  return new Parser(tokenize(text)).query();
}

class Parser {
  private index = 0;
  private predicates = 0;
  private depth = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  query(): Query {
    this.expectKeyword("SELECT");
    const columns = this.selectList();
    this.expectKeyword("FROM");
    this.expectTable();
    let followers = "WHERE, ORDER BY, LIMIT, ';' or end of query";
    const where = this.acceptKeyword("WHERE") ? this.orExpr() : undefined;
    if (where !== undefined) followers = "AND, OR, ORDER BY, LIMIT, ';' or end of query";
    const orderBy = this.acceptKeyword("ORDER") ? this.orderBy() : [];
    if (orderBy.length > 0) followers = "',', LIMIT, ';' or end of query";
    const limit = this.acceptKeyword("LIMIT") ? this.limit() : undefined;
    if (limit !== undefined) followers = "';' or end of query";
    if (this.acceptPunctuation(";")) followers = "end of query";
    if (this.peek().kind !== "end") throw this.unexpected(followers);
    return {
      columns,
      ...(where === undefined ? {} : { where }),
      orderBy,
      ...(limit === undefined ? {} : { limit }),
    };
  }

  private selectList(): "*" | Column[] {
    if (this.acceptPunctuation("*")) return "*";
    const columns = [this.column("'*' or a column")];
    while (this.acceptPunctuation(",")) columns.push(this.column("a column"));
    return columns;
  }

  private expectTable(): void {
    const token = this.peek();
    if (token.kind !== "identifier" || token.text !== TABLE) throw this.unexpected(TABLE);
    this.index++;
  }

  private orderBy(): OrderItem[] {
    this.expectKeyword("BY");
    const items = [this.orderItem()];
    while (this.acceptPunctuation(",")) items.push(this.orderItem());
    return items;
  }

  private orderItem(): OrderItem {
    const column = this.column("a column");
    if (this.acceptKeyword("DESC")) return { column, direction: "desc" };
    this.acceptKeyword("ASC");
    return { column, direction: "asc" };
  }

  private limit(): number {
    const token = this.peek();
    if (token.kind !== "number" || !/^[0-9]+$/.test(token.text)) {
      throw this.unexpected(`a non-negative integer after LIMIT (at most ${MAX_LIMIT})`);
    }
    if (token.value > MAX_LIMIT) {
      throw QueryError.expected(token.position, `LIMIT at most ${MAX_LIMIT}`, describeToken(token));
    }
    this.index++;
    return token.value;
  }

  // Precedence, loosest first: OR, AND, NOT. Chains of one operator become one n-ary node.
  private orExpr(): Expr {
    const first = this.andExpr();
    const operands = [first];
    while (this.acceptKeyword("OR")) operands.push(this.andExpr());
    return operands.length === 1 ? first : { kind: "or", operands, position: first.position };
  }

  private andExpr(): Expr {
    const first = this.notExpr();
    const operands = [first];
    while (this.acceptKeyword("AND")) operands.push(this.notExpr());
    return operands.length === 1 ? first : { kind: "and", operands, position: first.position };
  }

  private notExpr(): Expr {
    const token = this.peek();
    if (!this.acceptKeyword("NOT")) return this.primary();
    return this.nested(token.position, () => ({ kind: "not", operand: this.notExpr(), position: token.position }));
  }

  private primary(): Expr {
    const token = this.peek();
    if (!this.acceptPunctuation("(")) return this.predicate();
    return this.nested(token.position, () => {
      const inner = this.orExpr();
      this.expectPunctuation(")");
      return inner;
    });
  }

  /** Parentheses and NOT each open one level; the bound also keeps recursion shallow. */
  private nested(position: SourcePosition, parse: () => Expr): Expr {
    this.depth++;
    if (this.depth > MAX_NESTING) {
      throw QueryError.at(position, `nesting too deep: at most ${MAX_NESTING} levels of parentheses and NOT are allowed`);
    }
    const expr = parse();
    this.depth--;
    return expr;
  }

  private predicate(): Predicate {
    const column = this.column("a column, NOT or '('");
    this.predicates++;
    if (this.predicates > MAX_PREDICATES) {
      throw QueryError.at(column.position, `too many predicates: at most ${MAX_PREDICATES} are allowed`);
    }
    const position = column.position;
    const operator = this.comparisonOperator();
    if (operator !== undefined) return { kind: "comparison", column, op: operator, value: this.literal(), position };
    if (this.acceptKeyword("CONTAINS")) return { kind: "contains", column, value: this.literal(), position };
    if (this.acceptKeyword("IS")) {
      const negated = this.acceptKeyword("NOT");
      this.expectKeyword("NULL", negated ? "NULL" : "NOT or NULL");
      return { kind: "is_null", column, negated, position };
    }
    const negated = this.acceptKeyword("NOT");
    if (this.acceptKeyword("IN")) return { kind: "in", column, values: this.literalList(), negated, position };
    if (this.acceptKeyword("LIKE")) return { kind: "like", column, pattern: this.likePattern(), negated, position };
    throw this.unexpected(negated ? "IN or LIKE" : "an operator (= != <> < <= > >= IN LIKE IS CONTAINS)");
  }

  private comparisonOperator(): ComparisonOperator | undefined {
    const token = this.peek();
    if (token.kind !== "operator") return undefined;
    this.index++;
    return token.operator === "<>" ? "!=" : token.operator;
  }

  private literalList(): Literal[] {
    this.expectPunctuation("(");
    const values = [this.literal()];
    while (this.acceptPunctuation(",")) values.push(this.literal());
    this.expectPunctuation(")", "',' or ')'");
    return values;
  }

  private likePattern(): string {
    const token = this.peek();
    if (token.kind !== "string") throw this.unexpected("a string pattern after LIKE");
    this.index++;
    return token.value;
  }

  private literal(): Literal {
    const token = this.peek();
    const position = token.position;
    if (token.kind === "string" || token.kind === "number") {
      this.index++;
      return { value: token.value, position };
    }
    if (token.kind === "keyword" && (token.keyword === "TRUE" || token.keyword === "FALSE")) {
      this.index++;
      return { value: token.keyword === "TRUE", position };
    }
    throw this.unexpected("a literal (string, number, TRUE or FALSE)");
  }

  private column(expected: string): Column {
    const token = this.peek();
    if (token.kind !== "identifier") throw this.unexpected(expected);
    this.index++;
    const [head, ...path] = token.text.split(".");
    // Only `data.` starts a path; any other dotted name stays whole so the checker reports it as unknown.
    if (head === "data" && path.length > 0) return { kind: "data", path, position: token.position };
    return { kind: "column", name: token.text, position: token.position };
  }

  private expectKeyword(keyword: Keyword, expected: string = keyword): void {
    if (!this.acceptKeyword(keyword)) throw this.unexpected(expected);
  }

  private acceptKeyword(keyword: Keyword): boolean {
    const token = this.peek();
    if (token.kind !== "keyword" || token.keyword !== keyword) return false;
    this.index++;
    return true;
  }

  private expectPunctuation(punctuation: Punctuation, expected = `'${punctuation}'`): void {
    if (!this.acceptPunctuation(punctuation)) throw this.unexpected(expected);
  }

  private acceptPunctuation(punctuation: Punctuation): boolean {
    const token = this.peek();
    if (token.kind !== "punctuation" || token.punctuation !== punctuation) return false;
    this.index++;
    return true;
  }

  private unexpected(expected: string): QueryError {
    const token = this.peek();
    return QueryError.expected(token.position, expected, describeToken(token));
  }

  private peek(): Token {
    // The lexer always ends with an `end` token and nothing advances past it.
    return this.tokens[Math.min(this.index, this.tokens.length - 1)]!;
  }
}
