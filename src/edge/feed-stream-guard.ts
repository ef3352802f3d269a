import http2 from "node:http2";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type Interceptor, type StreamResponse } from "@connectrpc/connect";
import { createIdleDeadline } from "../changes/idle-deadline.js";
import { clientAddressKey } from "./client-address.js";
import type { NodeRequest, NodeResponse } from "../transport/http-exchange.js";
import type { StreamAdmission } from "./stream-admission.js";

/** Ends the exchange a call runs on, from under Connect's adapter: set for every adapter call. */
export const endExchangeKey = createContextKey<(() => void) | undefined>(undefined, { description: "ends the call's exchange" });

/**
 * Ends a node exchange whatever its state: an HTTP/2 stream is reset (CANCEL), the session lives
 * on; an HTTP/1.1 connection is closed. A write waiting on a client that does not read then fails.
 */
export function endNodeExchange(req: NodeRequest): void {
  if ("stream" in req) req.stream.close(http2.constants.NGHTTP2_CANCEL);
  else req.socket.destroy();
}

/** The responses of the calls handed to Connect's adapter, which its context values see only the request of. */
const adapterResponses = new WeakMap<NodeRequest, NodeResponse>();

export function handResponseToAdapter(req: NodeRequest, res: NodeResponse): void {
  adapterResponses.set(req, res);
}

/**
 * Ends an exchange Connect's adapter serves. Its writer waits for "drain" or "error" on a write
 * that did not flush, and a closed stream emits neither, so it would wait for ever holding the
 * call: it is told with an error, as Aborted, which the adapter takes for a client that left.
 */
export function endAdapterExchange(req: NodeRequest): void {
  endNodeExchange(req);
  const res = adapterResponses.get(req);
  if (res !== undefined && res.listenerCount("error") > 0) {
    res.emit("error", new ConnectError("the client left a message unread past the stall timeout; the stream was ended", Code.Aborted));
  }
}

export interface FeedStreamGuardOptions {
  /** The streaming methods guarded: WatchChanges. */
  readonly methods: readonly DescMethod[];
  readonly admission: StreamAdmission;
  /** How long a message may wait for the client to take it before the stream is ended. */
  readonly stallTimeoutMs: number;
}

/**
 * The change feed's streams on Connect's adapter: each takes a place from the admission caps
 * (resource_exhausted over them) until it ends, and is ended when its client leaves a message
 * untaken for the stall timeout (a zero HTTP/2 window, a reader that stopped), so a stream
 * nobody reads holds nothing for long.
 */
export function createFeedStreamGuard(options: FeedStreamGuardOptions): Interceptor {
  const guarded = new Set(options.methods);
  return (next) => async (request) => {
    if (!guarded.has(request.method)) return next(request);
    const release = options.admission.open(request.contextValues.get(clientAddressKey));
    try {
      const response = await next(request);
      if (!response.stream) {
        release();
        return response;
      }
      const end = request.contextValues.get(endExchangeKey) ?? (() => {});
      return { ...response, message: watched(response, options.stallTimeoutMs, end, release) } as StreamResponse;
    } catch (error) {
      release();
      throw error;
    }
  };
}

/**
 * The stream's messages, each to be taken by the writer within `stallTimeoutMs`; the place
 * released at the end. An iterator of its own, not a generator, which costs every message a few hops.
 */
function watched(response: StreamResponse, stallTimeoutMs: number, end: () => void, release: () => void): AsyncIterable<unknown> {
  const stall = createIdleDeadline(stallTimeoutMs, end);
  let open = true;
  const finish = () => {
    if (!open) return;
    open = false;
    stall.clear();
    release();
  };
  return {
    [Symbol.asyncIterator]() {
      const inner = response.message[Symbol.asyncIterator]();
      return {
        next: () => {
          // The adapter asks for the next message only once the last one's write has drained.
          stall.stop();
          return inner.next().then(
            (result) => {
              if (result.done === true) finish();
              else stall.start();
              return result;
            },
            (error: unknown) => {
              finish();
              throw error;
            },
          );
        },
        return: (value?: unknown) => {
          finish();
          return inner.return?.(value) ?? Promise.resolve({ done: true as const, value: undefined });
        },
        throw: (error?: unknown) => {
          finish();
          return inner.throw === undefined ? Promise.reject(error) : inner.throw(error);
        },
      };
    },
  };
}
