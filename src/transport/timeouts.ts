import { Code, ConnectError } from "@connectrpc/connect";
import { parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout } from "@connectrpc/connect/protocol-grpc";

/**
 * The longest wait node's timers keep: a longer delay fires after 1 ms. gRPC allows 8 digits of
 * hours and Connect 10 digits of milliseconds, so a valid deadline may lie beyond it; such a
 * deadline is kept as this long (24.8 days), which no call outlives.
 */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * The deadline a request's timeout header sets, on performance.now()'s clock and counted from
 * `arrivedAt`, when the request arrived (not from when its body was read); undefined when it sent
 * none. The headers' grammar is Connect's own (gRPC's `grpc-timeout`, 1-8 digits and a unit;
 * Connect's `connect-timeout-ms`, 1-10 digits); a malformed one throws invalid_argument.
 */
export function deadlineOf(protocol: "grpc" | "connect", header: string | undefined, arrivedAt: number): number | undefined {
  if (header === undefined) return undefined;
  const parsed =
    protocol === "grpc" ? parseGrpcTimeout(header, Number.POSITIVE_INFINITY) : parseConnectTimeout(header, Number.POSITIVE_INFINITY);
  if (parsed.error !== undefined) throw parsed.error satisfies ConnectError;
  return arrivedAt + Math.min(parsed.timeoutMs as number, MAX_TIMEOUT_MS);
}

export function deadlineExceeded(): ConnectError {
  return new ConnectError("the deadline passed before the call completed", Code.DeadlineExceeded);
}

/**
 * What `work` (reading the request) comes to, or deadline_exceeded once `deadline` passes first:
 * a client whose body is slower than its deadline hears so at the deadline, as the call would.
 */
export function beforeDeadline<T>(work: Promise<T>, deadline: number | undefined): Promise<T> {
  if (deadline === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(deadlineExceeded()), Math.max(0, deadline - performance.now()));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
