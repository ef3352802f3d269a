import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor, type StreamResponse } from "@connectrpc/connect";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { InvalidArgumentError, RegistryError, type RegistryErrorKind } from "../errors.js";
import { transportErrorOf } from "../transport/rpc-answers.js";

const CODES: Record<RegistryErrorKind, Code> = {
  invalid_argument: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  resource_exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  deadline_exceeded: Code.DeadlineExceeded,
};

export type ErrorLogger = (error: unknown) => void;

/**
 * The one place where domain errors become Connect errors (and so gRPC statuses and HTTP codes),
 * besides the transport's own (a body over the limit, a bad content coding). Anything else is
 * logged and answered as a bare internal error, so no driver or stack detail reaches a client.
 */
export function toConnectError(error: unknown, log: ErrorLogger): ConnectError {
  if (error instanceof ConnectError) return error;
  const transportError = transportErrorOf(error);
  if (transportError !== undefined) return transportError;
  if (error instanceof RegistryError) {
    if (error.kind === "unavailable" || error.kind === "deadline_exceeded") log(error);
    const details =
      error instanceof InvalidArgumentError
        ? [{ desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: [...error.violations] }) }]
        : [];
    return new ConnectError(error.message, CODES[error.kind], undefined, details);
  }
  log(error);
  return new ConnectError("internal error", Code.Internal);
}

/**
 * Maps what a call throws, and for a server stream what its messages throw after it began (a
 * database that fails mid-stream is unavailable, not internal).
 */
export function createErrorMappingInterceptor(log: ErrorLogger): Interceptor {
  return (next) => async (request) => {
    try {
      const response = await next(request);
      if (!response.stream) return response;
      return { ...response, message: mappedErrors(response.message, log) } as StreamResponse;
    } catch (error) {
      throw toConnectError(error, log);
    }
  };
}

/** The messages with their failure mapped: an iterator of its own, not a generator, which costs every message a few hops. */
function mappedErrors<T>(messages: AsyncIterable<T>, log: ErrorLogger): AsyncIterable<T> {
  const mapped = (error: unknown): never => {
    throw toConnectError(error, log);
  };
  return {
    [Symbol.asyncIterator]() {
      const inner = messages[Symbol.asyncIterator]();
      return {
        next: () => inner.next().catch(mapped),
        return: (value?: unknown) => inner.return?.(value) ?? Promise.resolve({ done: true as const, value: undefined }),
        throw: (error?: unknown) => (inner.throw === undefined ? Promise.reject(error) : inner.throw(error).catch(mapped)),
      };
    },
  };
}

/**
 * Streaming calls run on Connect's adapter, which reports a request message it cannot decode as
 * internal ("parse binary: ..."). That is the client's bad input: this maps it to
 * invalid_argument where the stream's messages are read, so no decoding failure reaches a client
 * as a server fault. (Unary calls decode in the edge's own protocol code.)
 */
export const streamDecodeErrorInterceptor: Interceptor = (next) => async (request) => {
  if (!request.stream) return next(request);
  return next({ ...request, message: decodeErrorsAsInvalid(request.message) });
};

async function* decodeErrorsAsInvalid<T>(messages: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.Internal && /^parse (binary|json)/.test(error.rawMessage)) {
      throw new ConnectError(`body: ${error.rawMessage}`, Code.InvalidArgument);
    }
    throw error;
  }
}
