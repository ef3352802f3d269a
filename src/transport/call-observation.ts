import type { DescMethod } from "@bufbuild/protobuf";
import { createContextKey } from "@connectrpc/connect";

/**
 * What is known of one call, for its access line and its metrics. The exchange makes it; the
 * protocol code fills it in as it learns (protocol, method, outcome), the handlers add the
 * principal through the call's context values; the observer reads it once the answer has left.
 */
export class CallObservation {
  /** "rest", "connect", "grpc" or "grpc-web"; "http" for answers given before any protocol (CORS preflights). */
  protocol = "http";
  /** The RPC, "package.Service/Method"; undefined when the request matched none. */
  method: string | undefined = undefined;
  /** REST: the route that matched, e.g. "GET /v1/entries/{did}". */
  route: string | undefined = undefined;
  /** The outcome as a Connect code name; undefined leaves it to be judged from the HTTP status. */
  code: string | undefined = undefined;
  /** The authenticated caller: its token's subject. */
  principal: string | undefined = undefined;
  /**
   * The client's address, read when the call begins: an HTTP/2 stream no longer knows its peer
   * once the client has closed the connection.
   */
  client = "";
  requestId = "";
  /** Neither logged nor counted: probes and metrics scrapes, which are no one's calls. */
  quiet = false;
  /** The call's server span, when tracing is on; ended with the access line. */
  span: CallSpan | undefined = undefined;
  readonly startedAt = performance.now();
}

/** A tracer's span around one call: the observer opens and ends it; the transport only carries it. */
export interface CallSpan {
  /** Its trace and span, for the call's access line. */
  readonly trace: { readonly trace_id: string; readonly span_id: string; readonly trace_flags: string };
  /** Runs `handle` inside the span, so that what it starts becomes its child. */
  run<T>(handle: () => T): T;
  /** The call is over: `code` is its outcome as a Connect code name, `status` the HTTP status sent. */
  end(call: CallObservation, code: string, status: number | undefined): void;
}

/** The call's observation, in its context values: how handlers name the principal. */
export const callObservationKey = createContextKey<CallObservation | undefined>(undefined, { description: "call observation" });

const methodNames = new WeakMap<DescMethod, string>();

/** "package.Service/Method", the name a method has in logs and metrics. */
export function rpcName(method: DescMethod): string {
  let name = methodNames.get(method);
  if (name === undefined) {
    name = `${method.parent.typeName}/${method.name}`;
    methodNames.set(method, name);
  }
  return name;
}
