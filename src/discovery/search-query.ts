import { textProblem } from "../domain/json-input.js";
import { InvalidArgumentError, type FieldViolation } from "../errors.js";
import { cursorBinding } from "./page-cursor.js";
import type { SearchQuery } from "./search-repository.js";

/** Bounds that keep one search's cost bounded: the query text and the words it may hold. */
export const MAX_SEARCH_TEXT = 256;
export const MAX_SEARCH_WORDS = 16;

/** Anything that is not a letter or a digit separates words, so no word can be tsquery syntax. */
const SEPARATORS = /[^\p{L}\p{N}]+/u;

export interface SearchPlan {
  readonly query: SearchQuery;
  /** What a cursor is bound to: the normalised words and the type, so equal searches share cursors. */
  readonly binding: string;
}

/**
 * The search a request asks for, checked: `q` split into words (case and punctuation dropped, so
 * "PDF-Summarizer" and "pdf summarizer" are one search) and the entry type. Pure.
 */
export function planSearch(request: { readonly q: string; readonly entryType: string }): SearchPlan {
  const violations: FieldViolation[] = [];
  const words = wordsOf(request.q, violations);
  const typeProblem = textProblem(request.entryType);
  if (typeProblem !== undefined) violations.push({ field: "entryType", description: typeProblem });
  if (violations.length > 0) throw new InvalidArgumentError(violations);
  const query = { words, entryType: request.entryType };
  return { query, binding: cursorBinding({ endpoint: "search", ...query }) };
}

function wordsOf(q: string, violations: FieldViolation[]): string[] {
  const problem = textProblem(q);
  const refuse = (description: string) => {
    violations.push({ field: "q", description });
    return [];
  };
  if (problem !== undefined) return refuse(problem);
  if (q.trim() === "") return refuse("is required: the text to search for");
  if ([...q].length > MAX_SEARCH_TEXT) return refuse(`must be at most ${MAX_SEARCH_TEXT} characters`);
  const words = q
    .normalize("NFKC")
    .toLowerCase()
    .split(SEPARATORS)
    .filter((word) => word !== "");
  if (words.length === 0) return refuse("must contain a letter or a digit");
  if (words.length > MAX_SEARCH_WORDS) return refuse(`must have at most ${MAX_SEARCH_WORDS} words`);
  return words;
}
