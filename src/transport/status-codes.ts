import { Code } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";

/**
 * Connect's code names and the HTTP status each code answers with, for REST and for Connect's
 * unary protocol alike, both by Connect's own rules (connectrpc.com/docs/protocol, "Error codes"),
 * so REST and Connect cannot disagree (413 for a body over the limit is the one REST-only
 * refinement, decided in rest-errors.ts).
 */
export const httpStatusOf: (code: Code) => number = codeToHttpStatus;

/** Every code's wire name, made once: Connect's codeToString builds the string on every call. */
const NAMES = new Map<Code, string>(
  Object.values(Code)
    .filter((value): value is Code => typeof value === "number")
    .map((code) => [code, codeToString(code)]),
);

/** Every code's wire name, in the codes' numeric order. */
export const CODE_NAMES: readonly string[] = [...NAMES.values()];

/** The wire name of a code: Code.InvalidArgument is "invalid_argument". */
export function codeName(code: Code): string {
  return NAMES.get(code) ?? "unknown";
}
