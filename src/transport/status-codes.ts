import { Code } from "@connectrpc/connect";

/**
 * Connect's code names and the HTTP status each code answers with, for REST and for Connect's
 * unary protocol alike. The table is the Connect protocol's (connectrpc.com/docs/protocol, "Error
 * codes"); it lives here, once, so REST and Connect cannot disagree (413 for a body over the limit
 * is the one REST-only refinement, decided in rest-errors.ts).
 */
const HTTP_STATUS: Readonly<Record<Code, number>> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

export function httpStatusOf(code: Code): number {
  return HTTP_STATUS[code] ?? 500;
}

const NAMES = new Map<Code, string>(
  Object.values(Code)
    .filter((value): value is Code => typeof value === "number")
    .map((code) => [code, Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase()]),
);

/** Every code's wire name, in the codes' numeric order. */
export const CODE_NAMES: readonly string[] = [...NAMES.values()];

/** The wire name of a code: Code.InvalidArgument is "invalid_argument". */
export function codeName(code: Code): string {
  return NAMES.get(code) ?? "unknown";
}
