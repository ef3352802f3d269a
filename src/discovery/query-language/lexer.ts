import type { SourcePosition } from "./ast.js";
import { QueryError } from "./query-error.js";

export const KEYWORDS = [
  "SELECT",
  "FROM",
  "WHERE",
  "AND",
  "OR",
  "NOT",
  "IN",
  "LIKE",
  "IS",
  "NULL",
  "CONTAINS",
  "ORDER",
  "BY",
  "ASC",
  "DESC",
  "LIMIT",
  "TRUE",
  "FALSE",
] as const;

export type Keyword = (typeof KEYWORDS)[number];

export type Operator = "=" | "!=" | "<>" | "<" | "<=" | ">" | ">=";

export type Punctuation = "(" | ")" | "," | "*" | ";";

export type Token =
  | { readonly kind: "keyword"; readonly keyword: Keyword; readonly text: string; readonly position: SourcePosition }
  | { readonly kind: "identifier"; readonly text: string; readonly position: SourcePosition }
  | { readonly kind: "string"; readonly value: string; readonly text: string; readonly position: SourcePosition }
  | { readonly kind: "number"; readonly value: number; readonly text: string; readonly position: SourcePosition }
  | { readonly kind: "operator"; readonly operator: Operator; readonly text: string; readonly position: SourcePosition }
  | { readonly kind: "punctuation"; readonly punctuation: Punctuation; readonly text: string; readonly position: SourcePosition }
  | { readonly kind: "end"; readonly text: ""; readonly position: SourcePosition };

const KEYWORD_SET: ReadonlySet<string> = new Set(KEYWORDS);
const PUNCTUATION: ReadonlySet<string> = new Set(["(", ")", ",", "*", ";"]);
// Longest first, so "<=" is not read as "<" followed by "=".
const OPERATORS: readonly Operator[] = ["<=", ">=", "<>", "!=", "=", "<", ">"];

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
const isIdentifierStart = (c: string | undefined): boolean => c !== undefined && /[A-Za-z_]/.test(c);
const isIdentifierPart = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9_]/.test(c);
// The lexer steps by code point, so a surrogate that arrives alone is one without its pair.
const isLoneSurrogate = (c: string): boolean => c.length === 1 && c >= "\ud800" && c <= "\udfff";
// Data keys are checked against the full rule later; the lexer only decides where one ends.
const isDataKeyPart = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9_-]/.test(c);

/** How a token is named in "found ..." messages. */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case "keyword":
      return `keyword ${token.keyword}`;
    case "identifier":
      return `identifier '${token.text}'`;
    case "string":
      return `string ${token.text}`;
    case "number":
      return `number ${token.text}`;
    case "operator":
    case "punctuation":
      return `'${token.text}'`;
    case "end":
      return "end of query";
  }
}

function describeCharacter(c: string | undefined): string {
  if (c === undefined) return "end of query";
  if (c === "\n") return "newline";
  if (c === " ") return "space";
  const printable = /^[\x21-\x7e]$/u.test(c);
  const code = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
  return printable ? `'${c}'` : code;
}

/** Splits a query into tokens, ending with an `end` token. Throws QueryError at the first bad character. */
export function tokenize(text: string): Token[] {
  return new Lexer(text).run();
}

class Lexer {
  private offset = 0;
  private line = 1;
  private column = 1;
  private readonly tokens: Token[] = [];
  // Iterating by code point keeps columns right for characters outside the BMP.
  private readonly chars: readonly string[];

  constructor(text: string) {
    this.chars = Array.from(text);
  }

  run(): Token[] {
    for (;;) {
      this.skipWhitespace();
      const c = this.peek();
      if (c === undefined) break;
      this.tokens.push(this.next(c));
    }
    this.tokens.push({ kind: "end", text: "", position: this.position() });
    return this.tokens;
  }

  private next(c: string): Token {
    if (c === "'") return this.string();
    if (isDigit(c) || (c === "-" && isDigit(this.peek(1)))) return this.number();
    if (isIdentifierStart(c)) return this.word();
    const operator = OPERATORS.find((op) => this.startsWith(op));
    if (operator !== undefined) {
      const position = this.position();
      this.advance(operator.length);
      return { kind: "operator", operator, text: operator, position };
    }
    if (PUNCTUATION.has(c)) {
      const position = this.position();
      this.advance(1);
      return { kind: "punctuation", punctuation: c as Punctuation, text: c, position };
    }
    throw QueryError.expected(this.position(), "a keyword, column, literal, operator or punctuation", describeCharacter(c));
  }

  private string(): Token {
    const position = this.position();
    const start = this.offset;
    this.advance(1);
    let value = "";
    for (;;) {
      const c = this.peek();
      // Reported at the opening quote: that is where the reader has to look.
      if (c === undefined) throw QueryError.expected(position, "closing quote for the string starting here", "end of query");
      // Refused here, before any message can quote the string: an unpaired surrogate is not text,
      // cannot be stored or compared in Postgres, and breaks the percent-encoding of gRPC messages.
      if (isLoneSurrogate(c))
        throw QueryError.expected(this.position(), "Unicode text in the string", `unpaired surrogate ${describeCharacter(c)}`);
      this.advance(1);
      if (c !== "'") {
        value += c;
      } else if (this.peek() === "'") {
        value += "'";
        this.advance(1);
      } else {
        break;
      }
    }
    return { kind: "string", value, text: this.slice(start), position };
  }

  private number(): Token {
    const position = this.position();
    const start = this.offset;
    if (this.peek() === "-") this.advance(1);
    while (isDigit(this.peek())) this.advance(1);
    if (this.peek() === "." && isDigit(this.peek(1))) {
      this.advance(1);
      while (isDigit(this.peek())) this.advance(1);
    }
    // "12abc" is one malformed word, not a number followed by a column.
    if (isIdentifierPart(this.peek()) || this.peek() === ".") {
      throw QueryError.expected(this.position(), "a digit, space or operator after a number", describeCharacter(this.peek()));
    }
    const text = this.slice(start);
    return { kind: "number", value: Number(text), text, position };
  }

  private word(): Token {
    const position = this.position();
    const start = this.offset;
    while (isIdentifierPart(this.peek())) this.advance(1);
    while (this.peek() === ".") {
      this.advance(1);
      if (!isDataKeyPart(this.peek())) {
        throw QueryError.expected(this.position(), "a key of letters, digits, '_' or '-' after '.'", describeCharacter(this.peek()));
      }
      while (isDataKeyPart(this.peek())) this.advance(1);
    }
    const text = this.slice(start);
    const upper = text.toUpperCase();
    if (KEYWORD_SET.has(upper)) return { kind: "keyword", keyword: upper as Keyword, text, position };
    return { kind: "identifier", text, position };
  }

  private skipWhitespace(): void {
    while (this.peek() === " " || this.peek() === "\t" || this.peek() === "\r" || this.peek() === "\n") {
      this.advance(1);
    }
  }

  private startsWith(s: string): boolean {
    return this.chars.slice(this.offset, this.offset + s.length).join("") === s;
  }

  private peek(ahead = 0): string | undefined {
    return this.chars[this.offset + ahead];
  }

  private advance(count: number): void {
    for (let i = 0; i < count; i++) {
      const c = this.chars[this.offset];
      this.offset++;
      if (c === "\n") {
        this.line++;
        this.column = 1;
      } else {
        this.column++;
      }
    }
  }

  private slice(start: number): string {
    return this.chars.slice(start, this.offset).join("");
  }

  private position(): SourcePosition {
    return { line: this.line, column: this.column };
  }
}
