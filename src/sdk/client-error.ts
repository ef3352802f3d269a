import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";

/** A Connect code by its wire name, as the registry's REST error bodies and docs/api.md spell it. */
export type RegistryErrorCode =
  | "canceled"
  | "unknown"
  | "invalid_argument"
  | "deadline_exceeded"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "resource_exhausted"
  | "failed_precondition"
  | "aborted"
  | "out_of_range"
  | "unimplemented"
  | "internal"
  | "unavailable"
  | "data_loss"
  | "unauthenticated";

/** One field the registry refused, from a google.rpc.BadRequest detail. */
export interface FieldViolation {
  /** The field's JSON name as a path, e.g. `version`, `tags[1]`, `conditions[0].op`. */
  readonly field: string;
  readonly description: string;
}

/**
 * A failed registry call, whatever the transport. Named apart from the server's own
 * `RegistryError` (src/errors.ts) because the two sit on opposite sides of the wire.
 */
export class RegistryClientError extends Error {
  override readonly name = "RegistryClientError";
  /** The Connect code, e.g. `invalid_argument`. */
  readonly code: RegistryErrorCode;
  /** Every field the registry refused; empty when the error names none. */
  readonly violations: readonly FieldViolation[];
  /** How long to wait before retrying, when the registry said (a rate limit's RetryInfo). */
  readonly retryAfterMs: number | undefined;

  constructor(
    code: RegistryErrorCode,
    message: string,
    details: { violations?: readonly FieldViolation[]; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: details.cause });
    this.code = code;
    this.violations = details.violations ?? [];
    this.retryAfterMs = details.retryAfterMs;
  }
}

const CODE_NAMES: Record<Code, RegistryErrorCode> = {
  [Code.Canceled]: "canceled",
  [Code.Unknown]: "unknown",
  [Code.InvalidArgument]: "invalid_argument",
  [Code.DeadlineExceeded]: "deadline_exceeded",
  [Code.NotFound]: "not_found",
  [Code.AlreadyExists]: "already_exists",
  [Code.PermissionDenied]: "permission_denied",
  [Code.ResourceExhausted]: "resource_exhausted",
  [Code.FailedPrecondition]: "failed_precondition",
  [Code.Aborted]: "aborted",
  [Code.OutOfRange]: "out_of_range",
  [Code.Unimplemented]: "unimplemented",
  [Code.Internal]: "internal",
  [Code.Unavailable]: "unavailable",
  [Code.DataLoss]: "data_loss",
  [Code.Unauthenticated]: "unauthenticated",
};

/**
 * The one place a transport's failure becomes a RegistryClientError: a ConnectError keeps its code,
 * its message without Connect's "[code]" prefix, and its BadRequest and RetryInfo details; anything
 * else (a fetch that threw, say) is `unknown` with the original as `cause`.
 */
export function toRegistryClientError(error: unknown): RegistryClientError {
  if (error instanceof RegistryClientError) return error;
  const connectError = ConnectError.from(error);
  const violations = connectError
    .findDetails(BadRequestSchema)
    .flatMap((badRequest) => badRequest.fieldViolations)
    .map(({ field, description }) => ({ field, description }));
  const [retryInfo] = connectError.findDetails(RetryInfoSchema);
  const delay = retryInfo?.retryDelay;
  const retryAfterMs = delay === undefined ? undefined : Number(delay.seconds) * 1000 + Math.round(delay.nanos / 1e6);
  return new RegistryClientError(CODE_NAMES[connectError.code] ?? "unknown", connectError.rawMessage, {
    violations,
    retryAfterMs,
    cause: error,
  });
}

/** Runs a call and rethrows its failure as a RegistryClientError. */
export async function mappingErrors<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toRegistryClientError(error);
  }
}
