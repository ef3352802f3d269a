/**
 * Rules for text and JSON values a client sends, so that what the registry accepts is exactly what
 * it stores and what a signature covers. Postgres text and jsonb cannot hold NUL (U+0000) or an
 * unpaired UTF-16 surrogate (which has no UTF-8 form: the driver would store U+FFFD instead of what
 * was signed), JSON has no Infinity or NaN, and JavaScript object readers treat a `__proto__` key as
 * the object's prototype rather than as data. Pure: no I/O.
 */

/** A place inside a JSON value: object keys and array indices, outermost first. */
export type FieldPath = readonly (string | number)[];

/** One rejected place inside a JSON value and why. */
export interface JsonValueProblem {
  readonly path: FieldPath;
  readonly problem: string;
}

export const PROTO_KEY = "__proto__";

export const PROTO_KEY_PROBLEM =
  'is not allowed: "__proto__" is read as an object\'s prototype, not as a key, so it cannot be kept as sent';

const NUL = "\u0000";
// With the u flag a surrogate code unit matches only when it is not half of a valid pair.
const LONE_SURROGATE = /\p{Cs}/u;

/** Why Postgres cannot store this text exactly as sent, or undefined when it can. */
export function textProblem(text: string): string | undefined {
  if (text.includes(NUL)) return "must not contain NUL (U+0000) characters";
  if (LONE_SURROGATE.test(text)) return "must not contain unpaired UTF-16 surrogates (they are not Unicode text)";
  return undefined;
}

/** Why a JSON number cannot be kept, or undefined when it can. */
export function numberProblem(value: number): string | undefined {
  // JSON.parse reads 1e400 as Infinity; binary protobuf doubles can carry NaN and Infinity too.
  return Number.isFinite(value) ? undefined : "must be a finite number (JSON has no Infinity or NaN)";
}

/** Why an object key cannot be kept, or undefined when it can. */
export function keyProblem(key: string): string | undefined {
  if (key === PROTO_KEY) return PROTO_KEY_PROBLEM;
  const problem = textProblem(key);
  return problem === undefined ? undefined : `key ${problem}`;
}

export interface JsonWalkLimits {
  /** Containers nested deeper than this are not looked into (the caller refuses them by depth). */
  readonly depth: number;
  /** Stop after this many problems: one is enough to refuse, a few help the sender. */
  readonly problems: number;
}

/**
 * Every string, key and number in a JSON value that could not be stored as sent, in document
 * order. Iterative, so a hostile nesting depth cannot exhaust the stack.
 */
export function jsonValueProblems(value: unknown, limits: JsonWalkLimits): JsonValueProblem[] {
  const problems: JsonValueProblem[] = [];
  // A bad key is reported when its entry's turn comes, so problems come in document order.
  type Pending = { value: unknown; path: FieldPath; badKey?: string };
  const pending: Pending[] = [{ value, path: [] }];
  while (pending.length > 0 && problems.length < limits.problems) {
    const { value: current, path, badKey } = pending.pop()!;
    if (badKey !== undefined) {
      problems.push({ path, problem: badKey });
      continue;
    }
    const problem = scalarProblem(current);
    if (problem !== undefined) problems.push({ path, problem });
    if (typeof current !== "object" || current === null || path.length >= limits.depth) continue;
    const children: Pending[] = [];
    if (Array.isArray(current)) {
      for (const [index, item] of current.entries()) children.push({ value: item, path: [...path, index] });
    } else {
      // Object.keys lists an own "__proto__" key, which JSON.parse creates as a plain property.
      for (const key of Object.keys(current)) {
        const keyFault = keyProblem(key);
        children.push({
          value: (current as Record<string, unknown>)[key],
          path: [...path, key],
          ...(keyFault === undefined ? {} : { badKey: keyFault }),
        });
      }
    }
    // One at a time: spreading a long array into push() would overflow the call stack.
    for (let index = children.length - 1; index >= 0; index--) pending.push(children[index]!);
  }
  return problems;
}

function scalarProblem(value: unknown): string | undefined {
  if (typeof value === "string") return textProblem(value);
  if (typeof value === "number") return numberProblem(value);
  return undefined;
}

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/**
 * A field path as errors name it: `data.license`, `data.items[2]`, and keys that are not plain
 * words as JSON strings, `data["a b"]`. JSON.stringify escapes NUL and unpaired surrogates, so the
 * name itself is always valid text.
 */
export function formatFieldPath(root: string, path: FieldPath): string {
  let text = root;
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (PLAIN_KEY.test(segment)) text += text === "" ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}
